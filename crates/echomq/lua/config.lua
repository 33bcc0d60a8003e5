--[[ CONFIG: read and change the queue's settings, the fields of
emq:{q}:config that CLAIM's gate (includes/gate) and TRIM (includes/retention) read.

config_key    emq:{q}:config     (hash) paused = 1 while paused; concurrency = n;
                                 rate = n and per = ms
pending_key   emq:{q}:pending    (zset)
priority_key  emq:{q}:priority   (hash)
rate_key      emq:{q}:rate       (zset) the claim log, deleted when the rate is removed
events_key    emq:{q}:events     (stream) the event log, a `paused` or
                                 `resumed` event when PAUSED changes it (includes/events)
wake_key      emq:{q}:wake       (zset) the wake-up key
                                 (includes/wake), told when resuming re-adds the head of pending
ARGV[1..] options, each at most once; none: only read.
         PAUSED <0|1>       1 pauses the queue's claims; 0 resumes them (and
                            ends a timed pause, paused_until, that DEFER set)
         CONCURRENCY <n>    0..=2147483647: at most n jobs active at once; 0: no limit
         RATE <n>           0..=100000: at most n claims in any PER ms; 0: no limit
         PER <ms>           1..=86400000: the rate's period; RATE n > 0 needs it
         DONE_AGE <ms>      0..=999999999999: TRIM deletes done jobs this old; 0: any age
         DONE_COUNT <n>     0..=1000000000: and those beyond the newest n; 0: any number
         DEAD_AGE <ms>      the same for dead jobs
         DEAD_COUNT <n>
         CANCELLED_AGE <ms> the same for cancelled jobs
         CANCELLED_COUNT <n>
         EVENTS <n>         0..=10000000: the event log keeps about n entries; 0: off
Reply    [paused, concurrency, rate, per, done_age, done_count, dead_age,
         dead_count, cancelled_age, cancelled_count, events]: the settings
         after the change as the gate applies them (0: none; below 1 is
         none, and rate and per are both 0 unless both are 1 or more), the
         retention as TRIM applies it (a number below 0 is the default) and
         the event log's length (the default if unset, 0 below 0: off);
         then, when the queue
         records one, its `protocol` (never written here)
         Resuming a paused queue re-adds the head of pending at its own score
         (ZREM, then ZADD), so every waiting claim wakes as on an arrival.
Errors   EMQARG (also: RATE needs PER, PER needs RATE), EMQTYPE, EMQVERSION, EMQDATA
         (a stored setting, or the resumed head's priority, malformed: nothing written)
]]
--@include retention
--@include events
--@include wake
--@include options
--@include switch

--@keys CONFIG's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local config_key = KEYS[1]
local pending_key = KEYS[2]
local priority_key = KEYS[3]
local rate_key = KEYS[4]
local events_key = KEYS[5]
local wake_key = KEYS[6]
local key_names = {'config', 'pending', 'priority', 'rate', 'events', 'wake'}
local key_forms = {6}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {
  PAUSED = {SWITCH_MIN, SWITCH_MAX},
  CONCURRENCY = {CONCURRENCY_MIN, CONCURRENCY_MAX},
  RATE = {RATE_MIN, RATE_MAX},
  PER = {RATE_PERIOD_MS_MIN, RATE_PERIOD_MS_MAX},
  DONE_AGE = {KEEP_MS_MIN, KEEP_MS_MAX},
  DONE_COUNT = {KEEP_COUNT_MIN, KEEP_COUNT_MAX},
  DEAD_AGE = {KEEP_MS_MIN, KEEP_MS_MAX},
  DEAD_COUNT = {KEEP_COUNT_MIN, KEEP_COUNT_MAX},
  CANCELLED_AGE = {KEEP_MS_MIN, KEEP_MS_MAX},
  CANCELLED_COUNT = {KEEP_COUNT_MIN, KEEP_COUNT_MAX},
  EVENTS = {EVENTS_MIN, EVENTS_MAX},
})
if err then return err end
if opts.PER and not opts.RATE then return emq_error('EMQARG', 'PER needs RATE') end
if opts.RATE and opts.RATE > 0 and not opts.PER then return emq_error('EMQARG', 'RATE needs PER') end
err = type_error(config_key, 'hash') or type_error(pending_key, 'zset') or type_error(priority_key, 'hash')
  or type_error(rate_key, 'zset') or (events_key and type_error(events_key, 'stream'))
if err then return err end

local wakes
wakes, err = wake_target(wake_key)
if err then return err end
-- Everything the reply shows, read and checked before any write, in the
-- core's order: protocol, paused, concurrency, rate, per, the retention,
-- events. The reply's integers, nil (or an error reply), and the queue's
-- protocol as stored (nil when it records none).
local function read_settings()
  local read = redis.call('HMGET', config_key, 'protocol', 'paused', 'concurrency', 'rate', 'per')
  local e = protocol_error(config_key, read[1])
  if e then return nil, e end
  local paused
  paused, e = switch(read[2], config_key, 'paused')
  if e then return nil, e end
  local reply = {paused and 1 or 0}
  for i, field in ipairs({'concurrency', 'rate', 'per'}) do
    local n
    n, e = stored(read[i + 2], config_key, field)
    if e then return nil, e end
    -- As the gate applies it: a number below 1 is no limit, 0.
    reply[#reply + 1] = math.max(n or 0, 0)
  end
  -- A rate is a limit only with its period: each 0 without the other.
  if reply[3] == 0 or reply[4] == 0 then reply[3], reply[4] = 0, 0 end
  for _, state in ipairs({'done', 'dead', 'cancelled'}) do
    local kept
    kept, e = retention(config_key, state)
    if e then return nil, e end
    reply[#reply + 1] = kept[1]
    reply[#reply + 1] = kept[2]
  end
  local keep
  keep, e = events_length(config_key)
  if e then return nil, e end
  reply[#reply + 1] = keep
  return reply, nil, read[1]
end
local before
before, err = read_settings()
if err then return err end
local was_paused = before[1] == 1
local resumed_head, resumed_score = nil, nil
if was_paused and opts.PAUSED == 0 then
  resumed_head = redis.call('ZRANGE', pending_key, 0, 0)[1]
  if resumed_head then
    resumed_score, err = stored(redis.call('HGET', priority_key, resumed_head), priority_key, resumed_head)
    resumed_score = redis.call('ZSCORE', pending_key, resumed_head) or resumed_score or 0
    if err then return err end
  end
end
-- One HSET of what is set, then one HDEL of what is removed.
local set, removed = {}, {}
if opts.PAUSED == 1 then
  set[#set + 1] = 'paused'; set[#set + 1] = 1
elseif opts.PAUSED == 0 then
  -- Resuming also ends a timed pause (DEFER's).
  removed[#removed + 1] = 'paused'; removed[#removed + 1] = 'paused_until'
end
if opts.CONCURRENCY == 0 then
  removed[#removed + 1] = 'concurrency'
elseif opts.CONCURRENCY then
  set[#set + 1] = 'concurrency'; set[#set + 1] = opts.CONCURRENCY
end
if opts.RATE == 0 then
  removed[#removed + 1] = 'rate'; removed[#removed + 1] = 'per'
elseif opts.RATE then
  set[#set + 1] = 'rate'; set[#set + 1] = opts.RATE
  set[#set + 1] = 'per'; set[#set + 1] = opts.PER
end
for _, option in ipairs({'DONE_AGE', 'DONE_COUNT', 'DEAD_AGE', 'DEAD_COUNT', 'CANCELLED_AGE', 'CANCELLED_COUNT',
    'EVENTS'}) do
  if opts[option] then
    set[#set + 1] = string.lower(option); set[#set + 1] = opts[option]
  end
end
if #set > 0 then redis.call('HSET', config_key, unpack(set)) end
if #removed > 0 then redis.call('HDEL', config_key, unpack(removed)) end
if opts.RATE == 0 then redis.call('DEL', rate_key) end
if resumed_head then
  redis.call('ZREM', pending_key, resumed_head)
  -- At its own score: a grouped head is scored past its priority (1.7).
  redis.call('ZADD', pending_key, resumed_score, resumed_head)
  -- Set the key anew (DEL, then ZADD), so that the server signals it to
  -- every claim blocked on it, a native `EMQ.CLAIM … BLOCK` among them,
  -- even when a stale member was left in it (a ZADD to a key that exists
  -- signals nothing).
  if wakes then
    redis.call('DEL', wakes)
    wake(wakes)
  end
end
-- After the change: an EVENTS of this call already applies.
local keep = events_keep(events_key, config_key)
if opts.PAUSED == 1 and not was_paused then
  emit(events_key, keep, 'paused', false)
elseif opts.PAUSED == 0 and was_paused then
  emit(events_key, keep, 'resumed', false)
end
-- After the writes, which only wrote integers in the form read back.
local reply, version
reply, err, version = read_settings()
if err then return err end
if version then reply[#reply + 1] = version end
return reply
