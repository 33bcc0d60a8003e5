--[[ RETRY: a dead job goes back to pending, by hand. Its last error stays
readable in emq:{q}:errors until it is acknowledged or purged.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:dead       (zset)
KEYS[3]  emq:{q}:pending    (zset)
KEYS[4]  emq:{q}:priority   (hash)
KEYS[5]  emq:{q}:events     (stream) the event log,
KEYS[6]  emq:{q}:config     (hash) a `retried` event (includes/events)
KEYS[7]  emq:{q}:wake       (zset) the wake-up key
                            (includes/wake), told
ARGV[1]  id: the job id
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQSTATE (not dead), EMQVERSION, EMQDATA
]]
--@include record
--@include events
--@include wake

--@keys RETRY's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local dead_key = KEYS[2]
local pending_key = KEYS[3]
local priority_key = KEYS[4]
local events_key = KEYS[5]
local config_key = KEYS[6]
local wake_key = KEYS[7]
local key_names = {'job', 'dead', 'pending', 'priority', 'events', 'config', 'wake'}
local key_forms = {7}
--@keys end

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'dead', 'pending', 'priority', 'events', 'config', 'wake'}, id)
if err then return err end
err = no_options_error(2)
if err then return err end
err = type_error(KEYS[2], 'zset') or type_error(KEYS[3], 'zset') or type_error(KEYS[4], 'hash')
if err then return err end
local fields
fields, err = read_record(KEYS[1], 'state', 'attempts')
if err then return err end
if not fields[1] then
  return emq_error('EMQNOJOB', 'no such job')
end
if not STATES[fields[1]] then return malformed(KEYS[1], 'state', 'a state') end
if fields[1] ~= 'dead' then
  return emq_error('EMQSTATE', 'cannot retry a ' .. fields[1] .. ' job')
end
local keep, wakes
keep, wakes, err = events_and_wake(7)
if err then return err end
local score
score, err = priority_of(KEYS[4], id)
if err then return err end

redis.call('ZREM', KEYS[2], id)
to_pending(KEYS[1], KEYS[3], score, id)
wake(wakes)
emit(KEYS[5], keep, 'retried', id)
return 1
