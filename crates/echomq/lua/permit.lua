--[[ PERMIT: up to COUNT claims' worth of a partitioned queue's exact rate
and exact concurrency (protocol 1.8, PROTOCOL.md §7.10), from the
coordinator on the definition's slot. A worker asks before each claim from
a partition, claims at most what it was granted, by the grant's deadline
(CLAIM's UNTIL), and gives back what it did not use (ZREM of their
numbers); under an exact concurrency it renews each job's permit with the
job's lease (RENEW) and gives it back at the job's end.

partitions_key  emq:{q}:partitions  (hash) the definition: `rate` and `per`, the exact
                                    rate, and `concurrency`, when set; `permits`, the
                                    last permit's number
permits_key     emq:{q}:permits     (zset) the permit log: each permit's number by the
                                    server ms it was granted
running_key     emq:{q}:running     (zset, a key a call may leave off) the running
                                    permits: each number by the server ms it stops running
ARGV     options:
         COUNT <n>   1..=1000, default 1: the most permits wanted
         LEASE <ms>  1..=2147483647: the claims' lease, which a running permit outlasts
Reply    [granted, first, until, wait]: with no exact limit (`rate` and
         `concurrency` missing or 0), [count, 0, 0, 0], claim freely; else the
         permits granted, at most the count asked for and the rate's and the
         concurrency's room, numbered first up, logged at now (a rate),
         running until now + the hold + LEASE + RUNNING_HOLD_MS (a concurrency, its
         slack), to be used by
         `until` (now + the hold: a tenth of the rate's period, or 1000 ms);
         none granted: [0, 0, 0, wait], wait the ms until a permit leaves the
         window or stops running. Nothing is written when none is granted.
Errors   EMQARG, EMQTYPE, EMQDATA
]]
--@include options
--@include exact

--@keys PERMIT's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local partitions_key = KEYS[1]
local permits_key = KEYS[2]
local running_key = KEYS[3] -- nil unless the call sends 3 keys
local key_names = {'partitions', 'permits', 'running'}
local key_forms = {2, 3}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {COUNT = {CLAIM_COUNT_MIN, CLAIM_COUNT_MAX}, LEASE = {LEASE_MS_MIN, LEASE_MS_MAX}})
if err then return err end
local count = opts.COUNT or 1
err = type_error(partitions_key, 'hash') or type_error(permits_key, 'zset')
  or (running_key and type_error(running_key, 'zset'))
if err then return err end
local exact
exact, err = exact_limits(partitions_key)
if err then return err end
local rate, per, concurrency = exact.rate, exact.per, exact.concurrency
if concurrency and not (running_key and opts.LEASE) then
  return emq_error('EMQARG', 'the queue has an exact concurrency: PERMIT takes its running key and LEASE')
end
-- No exact limit: claim freely.
if not rate and not concurrency then return {count, 0, 0, 0} end

local now = now_ms()
local hold = exact.hold
local granted, wait = count, 0
local edge
if rate then
  edge = math.max(now - per - hold, 0)
  local above = string.format('(%d', edge)
  local room = math.max(rate - redis.call('ZCOUNT', permits_key, above, '+inf'), 0)
  if room == 0 then
    -- The oldest permit in the window leaves it at its grant + PER + hold.
    local oldest = redis.call('ZRANGE', permits_key, above, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')[2]
    wait = math.max(wait, (tonumber(oldest) or now) + per + hold - now)
  end
  granted = math.min(granted, room)
end
if concurrency then
  local above = string.format('(%d', now)
  local room = math.max(concurrency - redis.call('ZCOUNT', running_key, above, '+inf'), 0)
  if room == 0 then
    -- The first running permit stops at the end of its hold.
    local first = redis.call('ZRANGE', running_key, above, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')[2]
    wait = math.max(wait, (tonumber(first) or now) - now)
  end
  granted = math.min(granted, room)
end
if granted == 0 then return {0, 0, 0, math.max(wait, 1)} end
-- Bounded work: trim at most a sweep's worth of each per grant.
local function trim(key, upto)
  local out = redis.call('ZRANGE', key, '-inf', string.format('%d', upto), 'BYSCORE', 'LIMIT', '0',
    string.format('%d', SWEEP_LIMIT_MAX))
  if #out > 0 then redis.call('ZREM', key, unpack(out)) end
end
if rate then trim(permits_key, edge) end
if concurrency then trim(running_key, now) end
-- Numbered on from the value read (a stored `07` is 7, §2), written whole.
local first = exact.issued + 1
local last = exact.issued + granted
redis.call('HSET', partitions_key, 'permits', string.format('%d', last))
local function add(key, score)
  local members = {}
  for n = first, last do
    members[#members + 1] = score
    members[#members + 1] = string.format('%d', n)
  end
  redis.call('ZADD', key, unpack(members))
end
if rate then add(permits_key, now) end
if concurrency then add(running_key, now + hold + opts.LEASE + RUNNING_HOLD_MS) end
return {granted, first, now + hold, 0}
