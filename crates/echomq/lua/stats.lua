--[[ STATS: how many jobs are in each state. Writes nothing.

pending_key    emq:{q}:pending    (zset)
active_key     emq:{q}:active     (zset)
delayed_key    emq:{q}:delayed    (zset)
done_key       emq:{q}:done       (zset)
dead_key       emq:{q}:dead       (zset)
cancelled_key  emq:{q}:cancelled  (zset)
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

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
err = no_options_error(1)
if err then return err end
local counts = {}
for i, key in ipairs({pending_key, active_key, delayed_key, done_key, dead_key, cancelled_key}) do
  err = type_error(key, 'zset')
  if err then return err end
  counts[i] = redis.call('ZCARD', key)
end
return counts
