--[[ SETTLE: run by every worker as upkeep. Follows each open batch (up to
100, first in batch_open's order) from its cursor while its jobs have
finished, looking at up to LIMIT jobs in all; a batch whose jobs all
finished gets its callback enqueued, once, with the counts in its headers,
and is closed. With more than 100 open, each it left waiting on a job not
finished goes behind the others in batch_open (PROTOCOL.md §7.7).

batch_open_key  emq:{q}:batch_open (zset) the open batches
batches_key     emq:{q}:batches    (hash) each batch's state and callback payload
batch_jobs_key  emq:{q}:batch_jobs (hash) <batch>:<n> -> its nth job
pending_key     emq:{q}:pending    (zset)
headers_key     emq:{q}:headers    (hash) the callback's headers: its batch's counts
events_key      emq:{q}:events     (stream) the event log,
config_key      emq:{q}:config     (hash) an `enqueued` event per callback
wake_key        emq:{q}:wake       (zset) the wake-up key
                                   (includes/wake), told when a callback is enqueued
counts_key      emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
ARGV[1..] options:
         LIMIT <n>          1..=1000, default 1000: at most this many jobs looked at
Derived  emq:{q}:job:<id>   the records of the batches' jobs and callbacks
Reply    [closed, looked]: batches closed, jobs looked at; call again while
         looked is LIMIT
Errors   EMQARG, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include record
--@include events
--@include wake
--@include trailing_keys
--@include options

--@keys SETTLE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local batch_open_key = KEYS[1]
local batches_key = KEYS[2]
local batch_jobs_key = KEYS[3]
local pending_key = KEYS[4]
local headers_key = KEYS[5]
local events_key = KEYS[6]
local config_key = KEYS[7]
local wake_key = KEYS[8]
local counts_key = KEYS[9] -- nil unless the call sends 9 keys
local key_names = {'batch_open', 'batches', 'batch_jobs', 'pending', 'headers', 'events', 'config', 'wake',
  'counts'}
local key_forms = {8, 9}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
local limit = opts.LIMIT or SWEEP_LIMIT_MAX
err = type_error(batch_open_key, 'zset') or type_error(batches_key, 'hash')
  or type_error(batch_jobs_key, 'hash') or type_error(pending_key, 'zset') or type_error(headers_key, 'hash')
if err then return err end

-- A batch's state: total cursor done dead cancelled gone callback, or nil.
-- Each number 1 to MAX_DIGITS decimal digits, nothing else (no sign).
local function read_state(text)
  if not text then return nil end
  local total, cursor, done, dead, cancelled, gone, callback =
    string.match(text, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (JOB[^ ]*)$')
  if not total then return nil end
  for _, digits in ipairs({total, cursor, done, dead, cancelled, gone}) do
    if #digits > MAX_DIGITS then return nil end
  end
  if tonumber(cursor) > tonumber(total) then return nil end
  return {total = tonumber(total), cursor = tonumber(cursor),
    counts = {tonumber(done), tonumber(dead), tonumber(cancelled), tonumber(gone)}, callback = callback}
end
local function state_text(s)
  return string.format('%d %d %d %d %d %d %s', s.total, s.cursor, s.counts[1], s.counts[2], s.counts[3],
    s.counts[4], s.callback)
end
local AT = {done = 1, dead = 2, cancelled = 3}

-- Read everything first (each record checked): a refusal writes nothing.
local plans, looked = {}, 0
local heads = redis.call('ZRANGE', batch_open_key, 0, SETTLE_BATCHES - 1)
-- More open batches than a call looks at: each one it finds waiting on a
-- job not finished goes behind the others, so that the next call looks at
-- the next ones.
local rotate = #heads == SETTLE_BATCHES and redis.call('ZCARD', batch_open_key) > SETTLE_BATCHES
for _, batch in ipairs(heads) do
  if looked >= limit then break end
  local s = read_state(redis.call('HGET', batches_key, batch) or nil)
  if not s then
    plans[#plans + 1] = {batch = batch}
  else
    local before, waits = state_text(s), false
    while s.cursor < s.total and looked < limit do
      local job = redis.call('HGET', batch_jobs_key, batch .. ':' .. s.cursor)
      local state
      if job then
        local fields
        fields, err = read_record(prefix .. 'job:' .. job, 'state', 'attempts')
        if err then return err end
        state = fields[1]
      end
      local at = state and AT[state] or (not state and 4)
      if not at then
        waits = true
        break
      end
      s.counts[at] = s.counts[at] + 1
      s.cursor = s.cursor + 1
      looked = looked + 1
    end
    if s.cursor == s.total then
      err = type_error(prefix .. 'job:' .. s.callback, 'hash')
      if err then return err end
    end
    plans[#plans + 1] = {batch = batch, state = s, changed = state_text(s) ~= before, waits = waits and rotate}
  end
end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key, counts_key, {'enqueued'})
if err then return err end
counts_hold()

local closed, called = 0, false
for _, plan in ipairs(plans) do
  local s, batch = plan.state, plan.batch
  if not s then
    redis.call('ZREM', batch_open_key, batch)
  elseif s.cursor < s.total then
    if plan.changed then redis.call('HSET', batches_key, batch, state_text(s)) end
    if plan.waits then redis.call('ZADD', batch_open_key, now_ms(), batch) end
  else
    local payload = redis.call('HGET', batches_key, batch .. ':callback') or ''
    local record = prefix .. 'job:' .. s.callback
    if redis.call('EXISTS', record) == 0 then
      redis.call('HSET', record, 'state', 'pending', 'attempts', '0', 'payload', payload)
      redis.call('HSET', headers_key, s.callback, string.format(
        '{"batch":"%s","total":"%d","done":"%d","dead":"%d","cancelled":"%d","gone":"%d"}',
        batch, s.total, s.counts[1], s.counts[2], s.counts[3], s.counts[4]))
      redis.call('ZADD', pending_key, '0', s.callback)
      called = true
      emit(events_key, keep, 'enqueued', s.callback, 'state', 'pending', 'batch', batch)
    end
    redis.call('HDEL', batches_key, batch, batch .. ':callback')
    local fields = {}
    for n = 0, s.total - 1 do fields[#fields + 1] = batch .. ':' .. n end
    redis.call('HDEL', batch_jobs_key, unpack(fields))
    redis.call('ZREM', batch_open_key, batch)
    closed = closed + 1
  end
end
if called then wake(wakes) end
counts_flush()
return {closed, looked}
