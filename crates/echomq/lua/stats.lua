--[[ STATS: how many jobs are in each state. Writes nothing.

pending_key    emq:{q}:pending    (zset)
active_key     emq:{q}:active     (zset)
delayed_key    emq:{q}:delayed    (zset)
done_key       emq:{q}:done       (zset)
dead_key       emq:{q}:dead       (zset)
cancelled_key  emq:{q}:cancelled  (zset)
waiting_key    emq:{q}:waiting    (zset) optional: the parents waiting for their children (protocol 1.6)
Reply    [pending, active, delayed, done, dead, cancelled]: each set's size; with waiting_key, its
         size seventh
Errors   EMQARG, EMQTYPE
]]
--@include common
--@include options

--@keys STATS's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local pending_key = KEYS[1]
local active_key = KEYS[2]
local delayed_key = KEYS[3]
local done_key = KEYS[4]
local dead_key = KEYS[5]
local cancelled_key = KEYS[6]
local waiting_key = KEYS[7] -- nil unless the call sends 7 keys
local key_names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled', 'waiting'}
local key_forms = {6, 7}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
err = no_options_error(1)
if err then return err end
local counts = {}
-- waiting_key last, when the call sent it (a nil ends the list).
for i, key in ipairs({pending_key, active_key, delayed_key, done_key, dead_key, cancelled_key, waiting_key}) do
  err = type_error(key, 'zset')
  if err then return err end
  counts[i] = redis.call('ZCARD', key)
end
return counts
