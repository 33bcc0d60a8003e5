--[[ OBLITERATE: the last step of deleting a queue. Refused while any of its
seven sets holds a job (DRAIN and PURGE empty them first), or a notice
waits for the relay; then every other key the queue owns is deleted.

pending_key       emq:{q}:pending    (zset)
active_key        emq:{q}:active     (zset)
delayed_key       emq:{q}:delayed    (zset)
done_key          emq:{q}:done       (zset)
dead_key          emq:{q}:dead       (zset)
cancelled_key     emq:{q}:cancelled  (zset)
priority_key      emq:{q}:priority   (hash)
errors_key        emq:{q}:errors     (hash)
progress_key      emq:{q}:progress   (hash)
policy_key        emq:{q}:policy     (hash)
config_key        emq:{q}:config     (hash)
rate_key          emq:{q}:rate       (zset)
schedules_key     emq:{q}:schedules  (hash)
ticks_key         emq:{q}:ticks      (zset)
unique_key        emq:{q}:unique     (hash)
unique_until_key  emq:{q}:unique_until (zset)
results_key       emq:{q}:results    (hash)
events_key        emq:{q}:events     (stream)
headers_key       emq:{q}:headers    (hash)
batches_key       emq:{q}:batches    (hash)
batch_jobs_key    emq:{q}:batch_jobs (hash)
batch_open_key    emq:{q}:batch_open (zset)
wake_key          emq:{q}:wake       (zset) the wake-up key (includes/wake)
counts_key        emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
waiting_key       emq:{q}:waiting    (zset) optional, with the two after it: flows' parents (1.6)
parents_key       emq:{q}:parents    (hash) the queue's children's links (includes/notice)
notices_key       emq:{q}:notices    (stream) what its children tell their parents
Reply    how many of the keys after cancelled_key existed and were deleted
Errors   EMQARG, EMQTYPE (a key not of its type), EMQVERSION (config_key's
         `protocol` another major or malformed: not this speaker's to
         delete), EMQSTATE (jobs, or notices, are left)
]]
--@include common
--@include options

--@keys OBLITERATE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local pending_key = KEYS[1]
local active_key = KEYS[2]
local delayed_key = KEYS[3]
local done_key = KEYS[4]
local dead_key = KEYS[5]
local cancelled_key = KEYS[6]
local priority_key = KEYS[7]
local errors_key = KEYS[8]
local progress_key = KEYS[9]
local policy_key = KEYS[10]
local config_key = KEYS[11]
local rate_key = KEYS[12]
local schedules_key = KEYS[13]
local ticks_key = KEYS[14]
local unique_key = KEYS[15]
local unique_until_key = KEYS[16]
local results_key = KEYS[17]
local events_key = KEYS[18]
local headers_key = KEYS[19]
local batches_key = KEYS[20]
local batch_jobs_key = KEYS[21]
local batch_open_key = KEYS[22]
local wake_key = KEYS[23]
local counts_key = KEYS[24]  -- nil unless the call sends 24 or 27 keys
local waiting_key = KEYS[25] -- nil unless the call sends 27 keys
local parents_key = KEYS[26] -- nil unless the call sends 27 keys
local notices_key = KEYS[27] -- nil unless the call sends 27 keys
local key_names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled', 'priority', 'errors',
  'progress', 'policy', 'config', 'rate', 'schedules', 'ticks', 'unique', 'unique_until', 'results', 'events',
  'headers', 'batches', 'batch_jobs', 'batch_open', 'wake', 'counts', 'waiting', 'parents', 'notices'}
local key_forms = {23, 24, 27}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
err = no_options_error(1)
if err then return err end
-- Every key's type, in KEYS order, before anything is read.
err = type_error(pending_key, 'zset') or type_error(active_key, 'zset') or type_error(delayed_key, 'zset')
  or type_error(done_key, 'zset') or type_error(dead_key, 'zset') or type_error(cancelled_key, 'zset')
  or type_error(priority_key, 'hash') or type_error(errors_key, 'hash') or type_error(progress_key, 'hash')
  or type_error(policy_key, 'hash') or type_error(config_key, 'hash') or type_error(rate_key, 'zset')
  or type_error(schedules_key, 'hash') or type_error(ticks_key, 'zset') or type_error(unique_key, 'hash')
  or type_error(unique_until_key, 'zset') or type_error(results_key, 'hash') or type_error(events_key, 'stream')
  or type_error(headers_key, 'hash') or type_error(batches_key, 'hash') or type_error(batch_jobs_key, 'hash')
  or type_error(batch_open_key, 'zset') or type_error(wake_key, 'zset')
  or (counts_key and type_error(counts_key, 'hash'))
  or (waiting_key and (type_error(waiting_key, 'zset') or type_error(parents_key, 'hash')
    or type_error(notices_key, 'stream')))
if err then return err end
err = protocol_error(config_key, redis.call('HGET', config_key, 'protocol'))
if err then return err end
local jobs = 0
for _, set in ipairs({pending_key, active_key, delayed_key, done_key, dead_key, cancelled_key, waiting_key}) do
  jobs = jobs + redis.call('ZCARD', set)
end
if jobs > 0 then
  return emq_error('EMQSTATE', 'the queue still holds ' .. jobs .. ' jobs')
end
-- A notice no relay carried yet would leave its parent waiting (1.6).
local notices = notices_key and redis.call('XLEN', notices_key) or 0
if notices > 0 then
  return emq_error('EMQSTATE', 'the queue still holds ' .. notices .. " notices to its children's parents")
end
-- The queue's every other key, in KEYS order (the counts key last, when
-- the call passed it).
local deleted = 0
for _, key in ipairs({priority_key, errors_key, progress_key, policy_key, config_key, rate_key, schedules_key,
    ticks_key, unique_key, unique_until_key, results_key, events_key, headers_key, batches_key, batch_jobs_key,
    batch_open_key, wake_key, counts_key, parents_key, notices_key}) do
  if redis.call('EXISTS', key) == 1 then
    redis.call('DEL', key)
    deleted = deleted + 1
  end
end
-- The groups' keys (1.7): with no job left, a group's settings, tag and
-- rate log are all that remain of it.
local derived = {}
for _, group in ipairs(redis.call('ZRANGE', prefix .. 'gnames', 0, -1)) do
  derived[#derived + 1] = prefix .. 'grate:' .. group
end
for _, name in ipairs({'group', 'groups', 'gnames', 'ready', 'gwait'}) do
  derived[#derived + 1] = prefix .. name
end
for _, key in ipairs(derived) do
  if redis.call('EXISTS', key) == 1 then
    redis.call('DEL', key)
    deleted = deleted + 1
  end
end
return deleted
