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

--@keys STATS's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local pending_key = KEYS[1]
local active_key = KEYS[2]
local delayed_key = KEYS[3]
local done_key = KEYS[4]
local dead_key = KEYS[5]
local cancelled_key = KEYS[6]
local key_names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled'}
local key_forms = {6}
--@keys end

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
