--[[ FIRE: one tick of a schedule. When the schedule's next tick is `tick`,
move it to `next` and enqueue the tick's job, as ENQUEUE does at priority 0
(nothing when its record exists: a duplicate, or with SKIP 1). Any number of
workers may try the same tick: one moves it on, the rest find another next.

job_key      emq:{q}:job:<id>   the tick's record (hash)
pending_key  emq:{q}:pending    (zset)
ticks_key    emq:{q}:ticks      (zset) name, score = its next tick, server ms
events_key   emq:{q}:events     (stream) the event log,
config_key   emq:{q}:config     (hash) an `enqueued` event (includes/events)
wake_key     emq:{q}:wake       (zset) the wake-up key
                                (includes/wake), told when the job is enqueued
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
ARGV[1]  id: the tick's job id (PROTOCOL.md §11.6 derives it)
ARGV[2]  payload: at most MAX_PAYLOAD (1048576) bytes
ARGV[3]  name: the schedule's, 1 to MAX_SCHEDULE_NAME (200) bytes
ARGV[4]  tick: the schedule's next tick as SCHEDULES handed it out, server ms
ARGV[5]  next: the tick after the one fired, > tick, 0..=9999999999999
ARGV[6..] options:
         SKIP <0|1>         1: move on without a job (missed ticks skipped)
Reply    1 enqueued; 0 moved on without a job (duplicate, or SKIP);
         -1 the schedule's next tick is not `tick` (fired by another, or
         removed, or replaced): nothing changed
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include schedule
--@include events
--@include payload
--@include wake
--@include trailing_keys
--@include options

--@keys FIRE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local pending_key = KEYS[2]
local ticks_key = KEYS[3]
local events_key = KEYS[4]
local config_key = KEYS[5]
local wake_key = KEYS[6]
local counts_key = KEYS[7] -- nil unless the call sends 7 keys
local key_names = {'job', 'pending', 'ticks', 'events', 'config', 'wake', 'counts'}
local key_forms = {6, 7}
--@keys end

local id, payload = ARGV[1], ARGV[2]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix(key_names, id, key_forms)
if err then return err end
err = payload_error(payload)
if err then return err end
local name, tick, next_tick, opts
name, err = schedule_name(ARGV[3])
if err then return err end
tick, err = integer(ARGV[4], 'tick', AT_MS_MIN, AT_MS_MAX)
if err then return err end
next_tick, err = integer(ARGV[5], 'next', AT_MS_MIN, AT_MS_MAX)
if err then return err end
if next_tick <= tick then
  return emq_error('EMQARG', 'next must be after tick')
end
opts, err = options(6, {SKIP = {FLAG_MIN, FLAG_MAX}})
if err then return err end
err = type_error(job_key, 'hash') or type_error(pending_key, 'zset') or type_error(ticks_key, 'zset')
if err then return err end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key, counts_key, {'enqueued'})
if err then return err end

if tonumber(redis.call('ZSCORE', ticks_key, name)) ~= tick then
  return -1
end
redis.call('ZADD', ticks_key, next_tick, name)
if opts.SKIP == 1 or redis.call('EXISTS', job_key) == 1 then
  return 0
end
redis.call('HSET', job_key, 'state', 'pending', 'attempts', '0', 'payload', payload)
redis.call('ZADD', pending_key, '0', id)
wake(wakes)
emit(events_key, keep, 'enqueued', id, 'state', 'pending', 'schedule', name)
return 1
