--[[ The trailing keys most transitions that add to pending take (the
events keys, the counts key, the wake-up key), checked together.
]]
--@include counts
--@include wake

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
