--[[ The queue's wake-up key, emq:{q}:wake (PROTOCOL.md §9; the core's twin
is `wake_key` and `wake` in crates/echomq-core/src/transition.rs): a sorted
set of one member, `1`, that a transition adding to pending writes, and that
an idle worker waits on with BZPOPMIN. One pop wakes one worker.
]]
--@include common

-- The wake-up key to tell, `key` when the call passed it (false when not),
-- or nil and an error reply when it holds something else than a sorted set
-- (the core's `wake_key`). Checked with the other keys, before the first
-- write.
local function wake_target(key)
  if not key then return false end
  local err = type_error(key, 'zset')
  if err then return nil, err end
  return key
end

-- Tell one claim waiting on the queue that a job may be pending.
local function wake(key)
  if key then redis.call('ZADD', key, '0', '1') end
end
