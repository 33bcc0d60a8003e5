--[[ A stored switch (`paused`), shared by the claim gate (includes/gate) and
CONFIG.
]]
--@include common

-- `paused` as it must be stored: '1' paused, '0' or nothing not; anything
-- else is EMQDATA.
local function switch(value, key, field)
  if not value or value == '0' then return false end
  if value == '1' then return true end
  return nil, malformed(key, field, '0 or 1')
end
