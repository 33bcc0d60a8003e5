--[[ OBLITERATE: the last step of deleting a queue. Refused while any of its
six sets holds a job (DRAIN and PURGE empty them first); then every other
key the queue owns is deleted.

KEYS[1]  emq:{q}:pending    (zset)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:delayed    (zset)
KEYS[4]  emq:{q}:done       (zset)
KEYS[5]  emq:{q}:dead       (zset)
KEYS[6]  emq:{q}:cancelled  (zset)
KEYS[7]  emq:{q}:priority   (hash)
KEYS[8]  emq:{q}:errors     (hash)
KEYS[9]  emq:{q}:progress   (hash)
KEYS[10] emq:{q}:policy     (hash)
KEYS[11] emq:{q}:config     (hash)
KEYS[12] emq:{q}:rate       (zset)
KEYS[13] emq:{q}:schedules  (hash)
KEYS[14] emq:{q}:ticks      (zset)
KEYS[15] emq:{q}:unique     (hash)
KEYS[16] emq:{q}:unique_until (zset)
KEYS[17] emq:{q}:results    (hash)
KEYS[18] emq:{q}:events     (stream)
KEYS[19] emq:{q}:headers    (hash)
KEYS[20] emq:{q}:batches    (hash)
KEYS[21] emq:{q}:batch_jobs (hash)
KEYS[22] emq:{q}:batch_open (zset)
KEYS[23] emq:{q}:wake       (zset) the wake-up key (includes/wake)
KEYS[24] emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
Reply    how many of KEYS[7..] existed and were deleted
Errors   EMQARG, EMQTYPE (a key not of its type), EMQVERSION (KEYS[11]'s
         `protocol` another major or malformed: not this speaker's to
         delete), EMQSTATE (jobs are left)
]]
--@include common

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
local counts_key = KEYS[24] -- nil unless the call sends 24 keys
local key_names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled', 'priority', 'errors',
  'progress', 'policy', 'config', 'rate', 'schedules', 'ticks', 'unique', 'unique_until', 'results', 'events',
  'headers', 'batches', 'batch_jobs', 'batch_open', 'wake', 'counts'}
local key_forms = {23, 24}
--@keys end

local _, err = queue_prefix({'pending', 'active', 'delayed', 'done', 'dead', 'cancelled', 'priority',
  'errors', 'progress', 'policy', 'config', 'rate', 'schedules', 'ticks', 'unique', 'unique_until', 'results',
  'events', 'headers', 'batches', 'batch_jobs', 'batch_open', 'wake', 'counts'}, nil, {23, 24})
if err then return err end
err = no_options_error(1)
if err then return err end
local types = {'zset', 'zset', 'zset', 'zset', 'zset', 'zset', 'hash', 'hash', 'hash', 'hash', 'hash', 'zset',
  'hash', 'zset', 'hash', 'zset', 'hash', 'stream', 'hash', 'hash', 'hash',
  'zset', 'zset', 'hash'}
for i = 1, #KEYS do
  local want = types[i]
  err = type_error(KEYS[i], want)
  if err then return err end
end
err = protocol_error(KEYS[11], redis.call('HGET', KEYS[11], 'protocol'))
if err then return err end
local jobs = 0
for i = 1, 6 do
  jobs = jobs + redis.call('ZCARD', KEYS[i])
end
if jobs > 0 then
  return emq_error('EMQSTATE', 'the queue still holds ' .. jobs .. ' jobs')
end
local deleted = 0
for i = 7, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted
