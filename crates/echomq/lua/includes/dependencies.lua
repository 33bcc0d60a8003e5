--[[ A parent's children as FLOW and ADOPT take them (protocol 1.6,
PROTOCOL.md §7.8).
]]
--@include link

-- The n pairs `{<queue>}<id> fail|ignore|continue` from ARGV[first] on
-- (FLOW's and ADOPT's), checked in order: each child's reference, its id's
-- kind, its on-failure, named once, and not `own`, the parent (the core's
-- `dependencies`). The children and their entries as a parent keeps them
-- (`open <on_failure>`), in the order given; or nil and an error reply.
local function read_dependencies(first, n, own)
  local children, entries, seen = {}, {}, {}
  for at = 0, n - 1 do
    local child, on_failure = ARGV[first + 2 * at], ARGV[first + 1 + 2 * at]
    if child == nil then return nil, nil, emq_error('EMQARG', 'a child is missing') end
    local _, child_id = split_job_ref(child)
    if not child_id then
      return nil, nil, emq_error('EMQARG', 'child must be {<queue>}<id>, not ' .. child)
    end
    local err = kind_error(child_id)
    if err then return nil, nil, err end
    if on_failure ~= 'fail' and on_failure ~= 'ignore' and on_failure ~= 'continue' then
      return nil, nil, emq_error('EMQARG', 'child ' .. child .. ' needs fail, ignore or continue')
    end
    if seen[child] then return nil, nil, emq_error('EMQARG', 'child ' .. child .. ' given twice') end
    if child == own then return nil, nil, emq_error('EMQARG', child .. ' cannot be its own child') end
    seen[child] = true
    children[#children + 1] = child
    entries[#entries + 1] = 'open ' .. on_failure
  end
  return children, entries
end
