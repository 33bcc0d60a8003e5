--[[ RENEW: a worker keeps its jobs' running permits under a partitioned
queue's exact concurrency (protocol 1.8, PROTOCOL.md §7.10), as it renews
their leases, each permit before its job's lease: each permit named that
still runs now runs until now + the hold (at least RUNNING_HOLD_MS) + the
lease, never shortened.

partitions_key  emq:{q}:partitions  (hash) the definition, read for the hold
running_key     emq:{q}:running     (zset) the running permits: each number by the
                                    server ms its hold ends
ARGV[1]  lease, ms, 1..=2147483647
ARGV[2]  permit: the first of 1 to 1000 permit numbers, each 1..=999999999999999, then the others
Reply    for each named permit in order, 1 when it runs on, 0 when it is gone
         (given back, or lapsed and trimmed): one gone is not written back
Errors   EMQARG, EMQTYPE, EMQDATA
]]
--@include exact

--@keys RENEW's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local partitions_key = KEYS[1]
local running_key = KEYS[2]
local key_names = {'partitions', 'running'}
local key_forms = {2}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local lease
lease, err = integer(ARGV[1], 'lease', LEASE_MS_MIN, LEASE_MS_MAX)
if err then return err end
if #ARGV - 1 > RENEWS_MAX then return emq_error('EMQARG', 'at most ' .. RENEWS_MAX .. ' permits a call') end
local numbers = {}
for i = 2, math.max(#ARGV, 2) do
  numbers[#numbers + 1], err = integer(ARGV[i], 'permit', TOKEN_MIN, TOKEN_MAX)
  if err then return err end
end
err = type_error(partitions_key, 'hash') or type_error(running_key, 'zset')
if err then return err end
local exact
exact, err = exact_limits(partitions_key)
if err then return err end

local until_ms = now_ms() + math.max(exact.hold, RUNNING_HOLD_MS) + lease
local renewed = {}
for i, n in ipairs(numbers) do
  -- Members are written in decimal by PERMIT: a number spelt `07` is member `7`.
  local member = string.format('%d', n)
  local held = redis.call('ZSCORE', running_key, member)
  renewed[i] = held and 1 or 0
  if held and tonumber(held) < until_ms then redis.call('ZADD', running_key, until_ms, member) end
end
return renewed
