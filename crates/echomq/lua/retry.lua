--[[ RETRY: a dead job goes back to pending, by hand. Its last error stays
readable in emq:{q}:errors until it is acknowledged or purged.

job_key       emq:{q}:job:<id>   the record (hash)
dead_key      emq:{q}:dead       (zset)
pending_key   emq:{q}:pending    (zset)
priority_key  emq:{q}:priority   (hash)
events_key    emq:{q}:events     (stream) the event log,
config_key    emq:{q}:config     (hash) a `retried` event (includes/events)
wake_key      emq:{q}:wake       (zset) the wake-up key
                                 (includes/wake), told
ARGV[1]  id: the job id
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQSTATE (not dead), EMQVERSION, EMQDATA
]]
--@include record
--@include events
--@include wake
--@include forget
--@include trailing_keys
--@include job_call
--@include pending

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

local id, prefix, err = job_call(key_names, key_forms)
if err then return err end
err = type_error(dead_key, 'zset') or type_error(pending_key, 'zset') or type_error(priority_key, 'hash')
if err then return err end
local fields
fields, err = read_record(job_key, 'state', 'attempts')
if err then return err end
if not fields[1] then
  return emq_error('EMQNOJOB', 'no such job')
end
if not STATES[fields[1]] then return malformed(job_key, 'state', 'a state') end
if fields[1] ~= 'dead' then
  return emq_error('EMQSTATE', 'cannot retry a ' .. fields[1] .. ' job')
end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key)
if err then return err end
local score
score, err = priority_of(priority_key, id)
if err then return err end
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end

redis.call('ZREM', dead_key, id)
redis.call('HSET', job_key, 'state', 'pending')
if group then
  G.to_pending(prefix, pending_key, id, group, score)
else
  redis.call('ZADD', pending_key, score, id)
end
wake(wakes)
emit(events_key, keep, 'retried', id)
return 1
