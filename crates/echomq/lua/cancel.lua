--[[ CANCEL: take a job out of the flow for good, from any state but done.
Cancelling an active job ends its lease: the holder's next ACK, FAIL, EXTEND
or RELEASE gets EMQFENCE.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:pending    (zset)
KEYS[3]  emq:{q}:active     (zset)
KEYS[4]  emq:{q}:delayed    (zset)
KEYS[5]  emq:{q}:dead       (zset)
KEYS[6]  emq:{q}:cancelled  (zset) score = cancel time, server ms
KEYS[7]  emq:{q}:events     (stream) the event log,
KEYS[8]  emq:{q}:config     (hash) a `cancelled` event (includes/events)
ARGV[1]  id: the job id
Reply    1 cancelled, 0 already cancelled (nothing changed)
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQSTATE (a done job), EMQVERSION, EMQDATA
]]
--@include record
--@include events

--@keys CANCEL's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local pending_key = KEYS[2]
local active_key = KEYS[3]
local delayed_key = KEYS[4]
local dead_key = KEYS[5]
local cancelled_key = KEYS[6]
local events_key = KEYS[7]
local config_key = KEYS[8]
local key_names = {'job', 'pending', 'active', 'delayed', 'dead', 'cancelled', 'events', 'config'}
local key_forms = {8}
--@keys end

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
local names = {'job', 'pending', 'active', 'delayed', 'dead', 'cancelled', 'events', 'config'}
_, err = queue_prefix(names, id)
if err then return err end
err = no_options_error(2)
if err then return err end
for i = 2, 6 do
  err = type_error(KEYS[i], 'zset')
  if err then return err end
end
local fields
fields, err = read_record(KEYS[1], 'state', 'attempts')
if err then return err end
local state = fields[1]
if not state then
  return emq_error('EMQNOJOB', 'no such job')
end
if not STATES[state] then return malformed(KEYS[1], 'state', 'a state') end
if state == 'cancelled' then return 0 end
local from = {pending = KEYS[2], active = KEYS[3], delayed = KEYS[4], dead = KEYS[5]}
if not from[state] then
  return emq_error('EMQSTATE', 'cannot cancel a ' .. state .. ' job')
end
local keep
keep, err = events_keep(KEYS[7], KEYS[8])
if err then return err end

redis.call('ZREM', from[state], id)
redis.call('HSET', KEYS[1], 'state', 'cancelled')
redis.call('ZADD', KEYS[6], now_ms(), id)
emit(KEYS[7], keep, 'cancelled', id)
return 1
