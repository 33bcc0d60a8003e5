--[[ CLAIM: take the head of pending, up to COUNT jobs, each under a new lease.

KEYS[1]  emq:{q}:pending    (zset)
KEYS[2]  emq:{q}:active     (zset) score = lease deadline, server ms
KEYS[3]  emq:{q}:config     (hash) the queue's settings, read by the gate
KEYS[4]  emq:{q}:rate       (zset) the claim log of a rate-limited queue:
                            <id>:<token> by claim time, server ms
KEYS[5]  emq:{q}:policy     (hash) id -> the job's own policy, if it has one
KEYS[6]  emq:{q}:events     (stream) optional: the event log (includes/events),
                            an `active` event per claimed job
KEYS[7]  emq:{q}:headers    (hash) optional, after KEYS[6]: id -> the job's headers
ARGV[1]  lease, ms          1..=2147483647
ARGV[2..] options:
         COUNT <n>          1..=1000, default 1
         BLOCK <ms>         native only (EMQ.CLAIM): the script refuses it
Derived  emq:{q}:job:<id>   the record of each popped id: the prefix of KEYS[1]
                            with job:<id>, so the same hashtag and slot.
Reply    an array of claimed jobs in pending order (priority, then id), each
         [id, token, payload], or [id, token, payload, policy] for a job
         with a policy of its own (its text, as ENQUEUE stored it), or
         [id, token, payload, policy or nil, headers] for a job with headers
         (with KEYS[7]); empty when
         pending is empty. The token is the record's new attempts: each claim
         mints the next one.
         An id in pending whose record is missing is dropped, not claimed.
         The gate (includes/gate) lets at most its room through: none while
         the queue is paused (or under a timed pause, DEFER's), at most the concurrency limit minus the size of
         active, at most the rate minus the claims logged in the last period.
         When it let fewer than COUNT through, one integer follows the jobs:
         -1 paused, 0 at the concurrency limit, n > 0 ms to wait (the next
         rate slot, or the end of a timed pause). Under a rate, each claim is logged in KEYS[4], and the entries
         that left the window are trimmed.
Errors   EMQARG, EMQTYPE
]]
--@include record
--@include gate
--@include events

local names = {'pending', 'active', 'config', 'rate', 'policy', 'events', 'headers'}
local prefix, err = queue_prefix(key_form(names, {5, 6, 7}))
if err then return err end
local lease
lease, err = integer(ARGV[1], 'lease', LEASE_MS_MIN, LEASE_MS_MAX)
if err then return err end
local opts
opts, err = options(2, {COUNT = {CLAIM_COUNT_MIN, CLAIM_COUNT_MAX}})
if err then return err end
err = type_error(KEYS[1], 'zset') or type_error(KEYS[2], 'zset')
if err then return err end

local room, held, log
room, held, log, err = gate(KEYS[3], KEYS[2], KEYS[4], opts.COUNT or 1)
if err then return err end
-- Only a queue with jobs of their own policy (or headers) has the key: one lookup each.
local function side_hash(key)
  if not key then return false end
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= 'hash' then
    return nil, emq_error('EMQTYPE', key .. ' holds a ' .. found .. ', not a hash')
  end
  return found == 'hash'
end
local policies, headers
policies, err = side_hash(KEYS[5])
if err then return err end
headers, err = side_hash(KEYS[7])
if err then return err end
local keep
keep, err = events_keep(KEYS[6], KEYS[3])
if err then return err end
local claimed, logged = {}, {}
local ids = room > 0 and redis.call('ZRANGE', KEYS[1], 0, room - 1) or {}
if #ids == 0 then
  spend(KEYS[4], log, logged)
  if held then claimed[1] = held end
  return claimed
end
local records
records, err = take(KEYS[1], prefix, ids, 'attempts', 'payload')
if err then return err end

-- One moment for the whole claim: the gate's, when it read the clock.
local deadline = (log and log.now or now_ms()) + lease
for i, id in ipairs(ids) do
  local attempts, payload = records[i][1], records[i][2]
  if attempts then
    local token = tonumber(attempts) + 1
    redis.call('HSET', prefix .. 'job:' .. id, 'state', 'active', 'attempts', token)
    redis.call('ZADD', KEYS[2], deadline, id)
    local job = {id, token, payload}
    local policy = policies and redis.call('HGET', KEYS[5], id)
    local held = headers and redis.call('HGET', KEYS[7], id)
    if held then
      -- false stands for a nil policy: a Lua array ends at its first nil.
      job[4], job[5] = policy or false, held
    elseif policy then
      job[4] = policy
    end
    claimed[#claimed + 1] = job
    emit(KEYS[6], keep, 'active', id, 'attempt', token)
    logged[#logged + 1] = string.format('%s:%d', id, token)
  end
end
spend(KEYS[4], log, logged)
if held then claimed[#claimed + 1] = held end
return claimed
