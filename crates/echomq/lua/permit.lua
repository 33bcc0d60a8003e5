--[[ PERMIT: up to COUNT claims' worth of a partitioned queue's exact rate
(protocol 1.8, PROTOCOL.md §7.10), from the coordinator on the definition's
slot. A worker asks before each claim from a partition, claims at most what
it was granted, by the grant's deadline (CLAIM's UNTIL), and gives back
what it did not use (ZREM of their numbers).

partitions_key  emq:{q}:partitions  (hash) the definition: `rate` and `per`, the exact
                                    rate, when set; `permits`, the last permit's number
permits_key     emq:{q}:permits     (zset) the permit log: each permit's number by the
                                    server ms it was granted
ARGV     options:
         COUNT <n>   1..=1000, default 1: the most permits wanted
Reply    [granted, first, until, wait]: with no exact rate (`rate` missing or 0),
         [count, 0, 0, 0], claim freely; else the permits granted, at most the
         count asked for and the rate's room, numbered first up, logged at now,
         to be used by `until` (now + the hold, a tenth of the period, which
         is 100 ms or more); none granted: [0, 0, 0, wait], wait the ms until the oldest
         permit leaves the window. A permit counts while it is younger than the
         period and its hold. Nothing is written when none is granted.
Errors   EMQARG, EMQTYPE, EMQDATA
]]
--@include options

--@keys PERMIT's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local partitions_key = KEYS[1]
local permits_key = KEYS[2]
local key_names = {'partitions', 'permits'}
local key_forms = {2}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {COUNT = {CLAIM_COUNT_MIN, CLAIM_COUNT_MAX}})
if err then return err end
local count = opts.COUNT or 1
err = type_error(partitions_key, 'hash') or type_error(permits_key, 'zset')
if err then return err end
local read = redis.call('HMGET', partitions_key, 'rate', 'per', 'permits')
local values = {}
for i, field in ipairs({'rate', 'per', 'permits'}) do
  values[i], err = stored(read[i], partitions_key, field)
  if err then return err end
end
local rate, per, issued = values[1], values[2], values[3]
if issued and issued < 0 then return malformed(partitions_key, 'permits', '0 or more') end
-- A rate missing or 0 is none: claim freely.
if not rate or rate == 0 then return {count, 0, 0, 0} end
if rate < 0 or rate > RATE_MAX then return malformed(partitions_key, 'rate', '0 to ' .. RATE_MAX) end
if not per then return malformed(partitions_key, 'per', 'set beside rate') end
if per < EXACT_PERIOD_MS_MIN or per > EXACT_PERIOD_MS_MAX then
  return malformed(partitions_key, 'per', EXACT_PERIOD_MS_MIN .. ' to ' .. EXACT_PERIOD_MS_MAX .. ' ms')
end

local now = now_ms()
local hold = math.floor(per / 10)
local edge = math.max(now - per - hold, 0)
local live = redis.call('ZCOUNT', permits_key, '(' .. edge, '+inf')
local granted = math.min(math.max(rate - live, 0), count)
if granted == 0 then
  local oldest = redis.call('ZRANGE', permits_key, '(' .. edge, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2]
  return {0, 0, 0, math.max((tonumber(oldest) or now) + per + hold - now, 1)}
end
-- Bounded work: trim at most a sweep's worth per grant.
local expired = redis.call('ZRANGE', permits_key, '-inf', edge, 'BYSCORE', 'LIMIT', 0, SWEEP_LIMIT_MAX)
if #expired > 0 then redis.call('ZREM', permits_key, unpack(expired)) end
-- Numbered on from the value read (a stored `07` is 7, §2), written whole.
local first = (issued or 0) + 1
local last = (issued or 0) + granted
redis.call('HSET', partitions_key, 'permits', string.format('%d', last))
local logged = {}
for n = first, last do
  logged[#logged + 1] = now
  logged[#logged + 1] = string.format('%d', n)
end
redis.call('ZADD', permits_key, unpack(logged))
return {granted, first, now + hold, 0}
