--[[ STATS: how many jobs are in each state. Writes nothing.

KEYS[1]  emq:{q}:pending    (zset)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:delayed    (zset)
KEYS[4]  emq:{q}:done       (zset)
KEYS[5]  emq:{q}:dead       (zset)
KEYS[6]  emq:{q}:cancelled  (zset)
Reply    [pending, active, delayed, done, dead, cancelled]: each set's size
Errors   EMQARG, EMQTYPE
]]
--@include common

local names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled'}
local _, err = queue_prefix(names)
if err then return err end
err = no_options_error(1)
if err then return err end
local counts = {}
for i = 1, 6 do
  err = type_error(KEYS[i], 'zset')
  if err then return err end
  counts[i] = redis.call('ZCARD', KEYS[i])
end
return counts
