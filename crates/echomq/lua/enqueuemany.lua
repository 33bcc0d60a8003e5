--[[ ENQUEUEMANY: admit many plain jobs (an id and a payload each, no
options) in one call, each on its own: a producer's batch.

pending_key  emq:{q}:pending    the pending set (zset)
events_key   emq:{q}:events     the event log (stream): an `enqueued` event a job
config_key   emq:{q}:config     its length (hash)
wake_key     emq:{q}:wake       the wake-up key (zset): told once when any job
                                was enqueued (includes/wake)
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key  emq:{q}:parents    (hash) optional, after counts_key (1.6): the children's links
ARGV[1]  id: the first job's id (JOB_<ulid>)
ARGV[2]  payload: its bytes, stored verbatim, at most MAX_PAYLOAD (1048576)
ARGV[3..] the next jobs' ids and payloads, in pairs: one to ENQUEUES_MAX jobs.
         PARENT <link>      with parents_key (1.6), before the first id:
                            `<incarnation> {<queue>}<id>`; every job it
                            enqueues is that parent's child (includes/notice)
         GROUP <g>          (1.7) after PARENT, before the first id: every job it
                            enqueues joins group g (includes/grouping; EMQFULL past its MAX)
Reply    an array, one integer a job, in order: 1 enqueued (pending, at
         priority 0), 0 duplicate (a record with its id exists; nothing
         changed; a job named twice is enqueued once)
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, TRYAGAIN, EMQVERSION, EMQDATA: the call's. The keys'
         types and every record's are checked before the first write, and
         so is, when a record is missing, whether the queue's slot is moving
         (includes/slot): a refused call enqueues nothing.
]]
--@include slot
--@include wake
--@include payload
--@include parent_option
--@include grouping
--@include trailing_keys

--@keys ENQUEUEMANY's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local pending_key = KEYS[1]
local events_key = KEYS[2]
local config_key = KEYS[3]
local wake_key = KEYS[4]
local counts_key = KEYS[5]  -- nil unless the call sends 5 or 6 keys
local parents_key = KEYS[6] -- nil unless the call sends 6 keys
local key_names = {'pending', 'events', 'config', 'wake', 'counts', 'parents'}
local key_forms = {4, 5, 6}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local ids, payloads = {}, {}
local i, n = 1, 0
-- With its sixth key (1.6), `PARENT <link>` may come first.
local link
if parents_key and ARGV[1] and string.upper(ARGV[1]) == 'PARENT' then
  link, err = parent_option(ARGV[2])
  if err then return err end
  i = 3
end
-- Then `GROUP <g>` (1.7): every job of the call in that group.
local group
if ARGV[i] and string.upper(ARGV[i]) == 'GROUP' then
  group, err = group_lib().name(ARGV[i + 1])
  if err then return err end
  i = i + 2
end
repeat
  if n == ENQUEUES_MAX then
    return emq_error('EMQARG', 'at most ' .. ENQUEUES_MAX .. ' jobs a call')
  end
  local id, payload = ARGV[i], ARGV[i + 1]
  err = kind_error(id)
  if err then return err end
  err = payload_error(payload)
  if err then return err end
  n = n + 1
  ids[n], payloads[n] = id, payload
  i = i + 2
until i > #ARGV

err = type_error(pending_key, 'zset')
if err then return err end
-- Each record: a hash (the job exists: a duplicate) or nothing.
local records, exists, missing = {}, {}, nil
for j = 1, n do
  local key = prefix .. 'job:' .. ids[j]
  local found = redis.call('TYPE', key)['ok']
  if found == 'hash' then
    exists[ids[j]] = true
  elseif found == 'none' then
    missing = missing or key
  else
    return emq_error('EMQTYPE', key .. ' holds a ' .. found .. ', not a hash')
  end
  records[j] = key
end
-- Every record is in the queue's slot: one look tells for them all.
if missing then
  err = elsewhere_error(missing)
  if err then return err end
end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key, counts_key, {'enqueued'})
if err then return err end
if link then
  err = type_error(parents_key, 'hash')
  if err then return err end
end
-- The group's keys' types and settings, and room under its most for the
-- jobs the call would add (those without a record, each once).
if group then
  local settings
  err = group_lib().check(prefix)
  if err then return err end
  settings, err = group_lib().settings(prefix, group)
  if err then return err end
  if settings.max then
    local new, seen = 0, {}
    for j = 1, n do
      if not exists[ids[j]] and not seen[ids[j]] then
        seen[ids[j]] = true
        new = new + 1
      end
    end
    if redis.call('ZCARD', prefix .. 'gpending:' .. group) + new > settings.max then
      return group_lib().full(group, settings.max)
    end
  end
end
counts_hold()

local replies, enqueued = {}, false
for j = 1, n do
  local id = ids[j]
  if exists[id] then
    replies[j] = 0
  else
    exists[id] = true
    redis.call('HSET', records[j], 'state', 'pending', 'attempts', '0', 'payload', payloads[j])
    if group then
      redis.call('HSET', prefix .. 'group', id, group)
      group_lib().join(prefix, pending_key, id, group, 0)
    else
      redis.call('ZADD', pending_key, '0', id)
    end
    emit(events_key, keep, 'enqueued', id, 'state', 'pending')
    replies[j] = 1
    enqueued = true
  end
end
if link then
  local linked = {}
  for j = 1, n do
    if replies[j] == 1 then
      linked[#linked + 1] = ids[j]
      linked[#linked + 1] = link
    end
  end
  if #linked > 0 then redis.call('HSET', parents_key, unpack(linked)) end
end
if group and enqueued then group_lib().reindex(prefix, group) end
if enqueued then wake(wakes) end
counts_flush()
return replies
