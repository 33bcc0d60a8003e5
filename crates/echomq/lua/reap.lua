--[[ REAP: expired leases go back to pending, or to dead when attempts are used up.
Safe to run from many workers at once: each expired job moves exactly once.

active_key    emq:{q}:active     (zset) score = lease deadline, server ms
pending_key   emq:{q}:pending    (zset)
dead_key      emq:{q}:dead       (zset)
errors_key    emq:{q}:errors     (hash) a job reaped to dead gets 'lease expired'
priority_key  emq:{q}:priority   (hash)
policy_key    emq:{q}:policy     (hash) id -> the job's own policy (includes/policy)
events_key    emq:{q}:events     (stream) the event log, a
config_key    emq:{q}:config     (hash) `failed` or `dead` event per reaped job
wake_key      emq:{q}:wake       (zset) the wake-up key
                                 (includes/wake), told when a job went back to pending
counts_key    emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key   emq:{q}:parents    (hash) optional, with counts_key and notices_key: child id -> its
notices_key   emq:{q}:notices    (stream) link; a linked job reaped to dead tells its parent
                                 (includes/notice)
ARGV[1]  max_attempts: 0..=2147483647: a job with attempts >= this dies;
         a job with its own ATTEMPTS dies by that instead
ARGV[2..] options:
         LIMIT <n>          1..=1000, default 1000: at most this many jobs
Derived  emq:{q}:job:<id>   the record of each expired id (same hashtag)
Reply    [requeued, dead]: how many went to pending and to dead. An id in
         active whose record is missing is dropped and counted in neither.
Errors   EMQARG (also: a flow's child reaped to dead, without the flows' keys), EMQTYPE,
         EMQVERSION, EMQDATA
]]
--@include record
--@include policy
--@include events
--@include wake
--@include notice
--@include forget
--@include trailing_keys
--@include options
--@include records
--@include pending

--@keys REAP's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local active_key = KEYS[1]
local pending_key = KEYS[2]
local dead_key = KEYS[3]
local errors_key = KEYS[4]
local priority_key = KEYS[5]
local policy_key = KEYS[6]
local events_key = KEYS[7]
local config_key = KEYS[8]
local wake_key = KEYS[9]
local counts_key = KEYS[10]  -- nil unless the call sends 10 or 12 keys
local parents_key = KEYS[11] -- nil unless the call sends 12 keys
local notices_key = KEYS[12] -- nil unless the call sends 12 keys
local key_names = {'active', 'pending', 'dead', 'errors', 'priority', 'policy', 'events', 'config', 'wake',
  'counts', 'parents', 'notices'}
local key_forms = {9, 10, 12}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local max_attempts, opts
max_attempts, err = integer(ARGV[1], 'max_attempts', MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX)
if err then return err end
opts, err = options(2, {LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
err = type_error(active_key, 'zset') or type_error(pending_key, 'zset') or type_error(dead_key, 'zset')
  or type_error(errors_key, 'hash') or type_error(priority_key, 'hash') or type_error(policy_key, 'hash')
if err then return err end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key, counts_key, {'failed', 'dead'})
if err then return err end
counts_hold()
err = notices_open_error(parents_key, notices_key)
if err then return err end

local now = now_ms()
local ids = redis.call('ZRANGEBYSCORE', active_key, '-inf', now, 'LIMIT', 0, opts.LIMIT or SWEEP_LIMIT_MAX)
if #ids == 0 then return {0, 0} end
local records
records, err = read_records(prefix, ids, 'state', 'attempts')
if err then return err end

local policies = redis.call('EXISTS', policy_key) == 1
-- Every record's attempts, policy and priority, and the link of each job
-- that dies, read and checked before the first write.
local reaped = {}
for i, id in ipairs(ids) do
  local key = prefix .. 'job:' .. id
  local attempts, own, score, link
  attempts, err = attempts_of(key, records[i][2])
  if err then return err end
  if attempts then
    if policies then
      own, err = policy_of(policy_key, id)
      if err then return err end
    end
    local dies = attempts >= ((own and own.ATTEMPTS) or max_attempts)
    if dies then
      link, err = parent_link(parents_key, prefix, id)
    else
      score, err = priority_of(priority_key, id)
    end
    if err then return err end
    reaped[#reaped + 1] = {id = id, key = key, attempts = attempts, dies = dies, score = score, link = link}
  end
end
local expired = {}
for j, job in ipairs(reaped) do expired[j] = job.id end
local G, groups
G, err = grouping(prefix)
if G then groups, err = G.jobs_groups(prefix, expired) end
if err then return err end
redis.call('ZREM', active_key, unpack(ids))

local requeued, dead = 0, 0
for j, job in ipairs(reaped) do
  local id = job.id
  local group = groups and groups[j]
  if job.dies then
    redis.call('HSET', job.key, 'state', 'dead')
    redis.call('ZADD', dead_key, now, id)
    redis.call('HSET', errors_key, id, 'lease expired')
    emit(events_key, keep, 'dead', id, 'attempt', job.attempts, 'error', 'lease expired')
    if group then G.off_active(prefix, id, group, false) end
    if job.link then tell_parent_died(notices_key, prefix, id, job.link) end
    dead = dead + 1
  else
    if group then G.off_active(prefix, id, group, true) end
    to_pending(job.key, pending_key, job.score, id, G, prefix, group)
    emit(events_key, keep, 'failed', id, 'attempt', job.attempts, 'error', 'lease expired')
    requeued = requeued + 1
  end
end
if requeued > 0 then wake(wakes) end
counts_flush()
return {requeued, dead}
