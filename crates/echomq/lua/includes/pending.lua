--[[ A job back to pending at its priority: PROMOTE, REAP, RELEASE, RESOLVE
and RETRY.
]]
--@include common

-- A job's priority, its entry in emq:{q}:priority (0 when it has none),
-- read before any write: an entry that is not an integer is EMQDATA.
local function priority_of(priority_key, id)
  local n, err = stored(redis.call('HGET', priority_key, id), priority_key, id)
  if err then return nil, err end
  return n or 0
end


-- Back to pending at `score`, the job's priority as priority_of read it:
-- its record, then pending, or its group's turn there when it has a group
-- (`group` the job's, nil for none; `G` the queue's grouping, `prefix` its).
local function to_pending(record_key, pending_key, score, id, G, prefix, group)
  redis.call('HSET', record_key, 'state', 'pending')
  if group then
    G.to_pending(prefix, pending_key, id, group, score)
  else
    redis.call('ZADD', pending_key, score, id)
  end
end
