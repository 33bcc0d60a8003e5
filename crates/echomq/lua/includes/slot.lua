--[[ A record missing while its queue's slot moves (PROTOCOL.md §5, "Records
on the move"; the core's twin is `present_here` in
crates/echomq-core/src/transition.rs): shared by the transitions that read
records and by ENQUEUEMANY, which only needs to know whether one is missing
here.
]]
--@include common

-- TRYAGAIN when the record at key is not on this node and the queue's slot
-- is moving: the record may be on the other node, so the transition changes
-- nothing and the cluster client tries again once the slot has moved.
local function elsewhere_error(key)
  -- Whether key's Redis Cluster slot is being moved to or from this node (a
  -- resharding), as this node's CLUSTER NODES shows on its own line:
  -- [<slot>->-<id>] migrating, [<slot>-<-<id>] importing. False outside a
  -- cluster, and when an ACL denies INFO or CLUSTER (see SECURITY.md). Made
  -- here, for a record found missing, rather than on every call.
  local function slot_moving(key)
    local info = redis.pcall('INFO', 'cluster')
    if type(info) ~= 'string' or not string.find(info, 'cluster_enabled:1', 1, true) then
      return false
    end
    local slot, nodes = redis.pcall('CLUSTER', 'KEYSLOT', key), redis.pcall('CLUSTER', 'NODES')
    if type(slot) ~= 'number' or type(nodes) ~= 'string' then
      return false
    end
    for line in string.gmatch(nodes, '[^\n]+') do
      local flags = string.match(line, '^%S+ %S+ (%S+)')
      if flags and string.find(',' .. flags .. ',', ',myself,', 1, true) then
        return string.find(line, '[' .. slot .. '->-', 1, true) ~= nil
          or string.find(line, '[' .. slot .. '-<-', 1, true) ~= nil
      end
    end
    return false
  end
  local here = redis.pcall('EXISTS', key)
  if (type(here) == 'table' or here == 0) and slot_moving(key) then
    return redis.error_reply('TRYAGAIN ' .. key .. ' may be on another node while its slot moves')
  end
end
