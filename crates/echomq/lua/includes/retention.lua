--[[ Bounded retention, shared by CONFIG and TRIM: how long and how many
finished jobs of a state a queue keeps, its settings in emq:{q}:config, else
the defaults (0: no bound). The core's `retention`
(crates/echomq-core/src/transition/config.rs).
]]
--@include common

local RETENTION = {
  done = {'done_age', 'done_count', KEEP_DONE_MS, KEEP_DONE_COUNT},
  dead = {'dead_age', 'dead_count', KEEP_DEAD_MS, KEEP_DEAD_COUNT},
  cancelled = {'cancelled_age', 'cancelled_count', KEEP_CANCELLED_MS, KEEP_CANCELLED_COUNT},
}

-- {age ms, count} that the queue keeps of finished `state` (a setting
-- below 0 counts as unset), read with the queue's `protocol`; or nil and
-- EMQVERSION or EMQDATA, which the caller returns before its first write.
local function retention(config, state)
  local r = RETENTION[state]
  local set = redis.call('HMGET', config, 'protocol', r[1], r[2])
  local err = protocol_error(config, set[1])
  if err then return nil, err end
  local kept = {r[3], r[4]}
  for i = 1, 2 do
    local n
    n, err = stored(set[i + 1], config, r[i])
    if err then return nil, err end
    if n and n >= 0 then kept[i] = n end
  end
  return kept
end
