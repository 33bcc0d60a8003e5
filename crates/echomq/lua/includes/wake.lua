--[[ The queue's wake-up key, emq:{q}:wake (PROTOCOL.md §9; the core's twin
is `wake_key` and `wake` in crates/echomq-core/src/transition.rs): a sorted
set of one member, `1`, that a transition adding to pending writes, and that
an idle worker waits on with BZPOPMIN. One pop wakes one worker.
]]
--@include events

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

-- The trailing keys most transitions that add to pending take, checked
-- together: the events keys `events` and `config`, then the counts key
-- `counts` when the transition counts (`counted`, the events it may count)
-- and the call passed it, then the wake-up key `wake_key`. The log's length
-- (or nil), the wake-up key to tell (or false), or an error reply.
local function events_and_wake(events, config, wake_key, counts, counted)
  local keep, err = events_keep(events, config)
  if err then return nil, nil, err end
  if counted then
    err = counts_open(counts, counted)
    if err then return nil, nil, err end
  end
  local wakes
  wakes, err = wake_target(wake_key)
  return keep, wakes, err
end
