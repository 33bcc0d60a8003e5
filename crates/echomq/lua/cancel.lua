--[[ CANCEL: take a job out of the flow for good, from any state but done.
Cancelling an active job ends its lease: the holder's next ACK, FAIL, EXTEND
or RELEASE gets EMQFENCE. A flow's child tells its parent; a parent waiting
for its children leaves `waiting` (protocol 1.6, includes/notice).

job_key        emq:{q}:job:<id>   the record (hash)
pending_key    emq:{q}:pending    (zset)
active_key     emq:{q}:active     (zset)
delayed_key    emq:{q}:delayed    (zset)
dead_key       emq:{q}:dead       (zset)
cancelled_key  emq:{q}:cancelled  (zset) score = cancel time, server ms
events_key     emq:{q}:events     (stream) the event log,
config_key     emq:{q}:config     (hash) a `cancelled` event (includes/events)
parents_key    emq:{q}:parents    (hash) optional, the flows' keys, all three or none: child id ->
notices_key    emq:{q}:notices    (stream) its link; a linked job tells its parent
waiting_key    emq:{q}:waiting    (zset) the parents waiting for their children
ARGV[1]  id: the job id
Reply    1 cancelled, 0 already cancelled (nothing changed)
Errors   EMQKIND, EMQARG (also: a flow's child, or a waiting parent, without the flows' keys), EMQTYPE,
         EMQNOJOB, EMQSTATE (a done job), EMQVERSION, EMQDATA
]]
--@include record
--@include events
--@include notice
--@include forget
--@include job_call

--@keys CANCEL's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local pending_key = KEYS[2]
local active_key = KEYS[3]
local delayed_key = KEYS[4]
local dead_key = KEYS[5]
local cancelled_key = KEYS[6]
local events_key = KEYS[7]
local config_key = KEYS[8]
local parents_key = KEYS[9]  -- nil unless the call sends 11 keys
local notices_key = KEYS[10] -- nil unless the call sends 11 keys
local waiting_key = KEYS[11] -- nil unless the call sends 11 keys
local key_names = {'job', 'pending', 'active', 'delayed', 'dead', 'cancelled', 'events', 'config', 'parents',
  'notices', 'waiting'}
local key_forms = {8, 11}
--@keys end

local id, prefix, err = job_call(key_names, key_forms)
if err then return err end
err = type_error(pending_key, 'zset') or type_error(active_key, 'zset') or type_error(delayed_key, 'zset')
  or type_error(dead_key, 'zset') or type_error(cancelled_key, 'zset')
if err then return err end
local fields
fields, err = read_record(job_key, 'state', 'attempts')
if err then return err end
local state = fields[1]
if not state then
  return emq_error('EMQNOJOB', 'no such job')
end
if not STATES[state] then return malformed(job_key, 'state', 'a state') end
if state == 'cancelled' then return 0 end
if state == 'waiting' and not waiting_key then
  return emq_error('EMQARG', id .. ' waits for its children: the call needs ' .. prefix .. 'parents, '
    .. prefix .. 'notices and ' .. prefix .. 'waiting')
end
local from = {pending = pending_key, active = active_key, delayed = delayed_key, dead = dead_key,
  waiting = waiting_key}
if not from[state] then
  return emq_error('EMQSTATE', 'cannot cancel a ' .. state .. ' job')
end
local keep, link
keep, err = events_keep(events_key, config_key)
if err then return err end
err = (waiting_key and type_error(waiting_key, 'zset')) or notices_open_error(parents_key, notices_key)
if err then return err end
link, err = parent_link(parents_key, prefix, id)
if err then return err end
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end

redis.call('ZREM', from[state], id)
if group and state == 'pending' then
  G.off_pending(prefix, id, group)
elseif group and state == 'active' then
  G.off_active(prefix, id, group, false)
end
redis.call('HSET', job_key, 'state', 'cancelled')
redis.call('ZADD', cancelled_key, now_ms(), id)
emit(events_key, keep, 'cancelled', id)
if link then tell_parent(parents_key, notices_key, prefix, id, link, 'cancelled') end
return 1
