--[[ STATS: how many jobs are in each state. Writes nothing.

KEYS[1..6]  emq:{q}:pending, active, delayed, done, dead, cancelled (zsets)
Reply       [pending, active, delayed, done, dead, cancelled] counts
Errors      EMQARG, EMQTYPE
]]
--@include common

local names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled'}
local _, err = queue_prefix(names)
if err then return err end
_, err = options(1, {})
if err then return err end
local counts = {}
for i = 1, 6 do
  err = type_error(KEYS[i], 'zset')
  if err then return err end
  counts[i] = redis.call('ZCARD', KEYS[i])
end
return counts
