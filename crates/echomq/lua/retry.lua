--[[ RETRY: a dead job goes back to pending, by hand; a flow's parent whose
children have not all ended (its dependencies' `open` 1 or more) goes back
to waiting for them (1.11), as FLOW left it. Its last error stays readable
in emq:{q}:errors until it is acknowledged or purged.

job_key       emq:{q}:job:<id>   the record (hash)
dead_key      emq:{q}:dead       (zset)
pending_key   emq:{q}:pending    (zset)
priority_key  emq:{q}:priority   (hash)
events_key    emq:{q}:events     (stream) the event log,
config_key    emq:{q}:config     (hash) a `retried` event (includes/events)
wake_key      emq:{q}:wake       (zset) the wake-up key
                                 (includes/wake), told
children_key  emq:{q}:children:<id> (hash) a flow parent's dependencies (1.11:
waiting_key   emq:{q}:waiting    (zset) the call sends both or neither); a parent
                                 with children open goes back to waiting
ARGV[1]  id: the job id
Reply    1
Errors   EMQKIND, EMQARG (a parent with children open, without its flow keys), EMQTYPE,
         EMQNOJOB, EMQSTATE (not dead), EMQVERSION, EMQDATA
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
local children_key = KEYS[8] -- nil unless the call sends 9 keys
local waiting_key = KEYS[9]  -- nil unless the call sends 9 keys
local key_names = {'job', 'dead', 'pending', 'priority', 'events', 'config', 'wake', 'children', 'waiting'}
local key_forms = {7, 9}
--@keys end

local id, prefix, err = job_call(key_names, key_forms)
if err then return err end
err = type_error(dead_key, 'zset') or type_error(pending_key, 'zset') or type_error(priority_key, 'hash')
  or (children_key and (type_error(children_key, 'hash') or type_error(waiting_key, 'zset')))
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
-- A flow's parent with children open goes back to waiting for them; without
-- its flow keys it is refused: made pending, it would run before them.
local dependencies = children_key or (prefix .. 'children:' .. id)
local open = redis.pcall('HGET', dependencies, 'open')
err = read_error(open, dependencies, 'hash')
if err then return err end
open, err = stored(open or nil, dependencies, 'open')
if err then return err end
if open and open < 0 then return malformed(dependencies, 'open', 'an integer of 0 or more') end
local waits = open and open > 0
if waits and not children_key then
  return emq_error('EMQARG', id .. ' waits for ' .. string.format('%d', open) .. ' children: the call needs '
    .. prefix .. 'children:' .. id .. ' and ' .. prefix .. 'waiting')
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
if waits then
  redis.call('HSET', job_key, 'state', 'waiting')
  redis.call('ZADD', waiting_key, string.format('%d', now_ms()), id)
else
  to_pending(job_key, pending_key, score, id, G, prefix, group)
  wake(wakes)
end
emit(events_key, keep, 'retried', id)
return 1
