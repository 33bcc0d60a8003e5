--[[ RENEW: a worker keeps its jobs' running permits under a partitioned
queue's exact concurrency (protocol 1.8, PROTOCOL.md §7.10), as it renews
their leases, each permit before its job's lease: each permit named that
still runs (scored after now) runs until now + the lease + RUNNING_HOLD_MS
(the slack), never shortened.

running_key     emq:{q}:running     (zset) the running permits: each number by the
                                    server ms it stops running
ARGV[1]  lease, ms, 1..=2147483647
ARGV[2]  permit: the first of 1 to 1000 permit numbers, each 1..=999999999999999, then the others
Reply    for each named permit in order, 1 when it runs on, 0 when it is gone
         (given back, or scored at or before now): one gone is not written back
Errors   EMQARG, EMQTYPE
]]
--@include common

--@keys RENEW's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local running_key = KEYS[1]
local key_names = {'running'}
local key_forms = {1}
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
err = type_error(running_key, 'zset')
if err then return err end

local now = now_ms()
local until_ms = now + RUNNING_HOLD_MS + lease
-- A write that changes nothing, first: Redis refuses a script's first write
-- that may grow memory at maxmemory, and lets the later ones through; this
-- transition moves work in flight, which runs there too (PROTOCOL.md §8).
redis.call('ZREM', running_key, '')
local renewed = {}
for i, n in ipairs(numbers) do
  -- Members are written in decimal by PERMIT: a number spelt `07` is member `7`.
  local member = string.format('%d', n)
  local held = tonumber(redis.call('ZSCORE', running_key, member))
  renewed[i] = (held and held > now) and 1 or 0
  if held and held > now and held < until_ms then redis.call('ZADD', running_key, until_ms, member) end
end
return renewed
