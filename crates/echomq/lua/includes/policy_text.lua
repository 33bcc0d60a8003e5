--[[ A job's own policy as emq:{q}:policy stores it (includes/policy says
how it reads): ENQUEUE's and FLOW's (includes/given), ADOPT's, DEFER's and
RELEASE's.
]]
--@include common

-- A policy's stored text: its options in the fixed order.
local function policy_text(policy)
  local parts = {}
  for _, name in ipairs({'ATTEMPTS', 'BACKOFF', 'BACKOFF_EXP', 'TIMEOUT'}) do
    if policy[name] then parts[#parts + 1] = string.format('%s %d', name, policy[name]) end
  end
  return table.concat(parts, ' ')
end
