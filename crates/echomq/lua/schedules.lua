--[[ SCHEDULES: the queue's schedules with their next ticks, and the
server's now to compute tick times with. Writes nothing.

schedules_key  emq:{q}:schedules  (hash)
ticks_key      emq:{q}:ticks      (zset)
ARGV[1..] options:
         DUE <0|1>          1: only the schedules whose next tick is ≤ now
         LIMIT <n>          1..=1000, default 1000: at most this many
Reply    [now, [name, definition, next]…]: now in server ms, then each
         schedule by next tick (then name)
Errors   EMQARG, EMQTYPE
]]
--@include schedule
--@include options

--@keys SCHEDULES's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local schedules_key = KEYS[1]
local ticks_key = KEYS[2]
local key_names = {'schedules', 'ticks'}
local key_forms = {2}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {DUE = {FLAG_MIN, FLAG_MAX}, LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
err = type_error(schedules_key, 'hash') or type_error(ticks_key, 'zset')
if err then return err end

local now = now_ms()
local max = opts.DUE == 1 and now or '+inf'
local names = redis.call('ZRANGEBYSCORE', ticks_key, '-inf', max, 'WITHSCORES', 'LIMIT', 0,
  opts.LIMIT or SWEEP_LIMIT_MAX)
local reply = {now}
for i = 1, #names, 2 do
  local definition = redis.call('HGET', schedules_key, names[i])
  if definition then
    reply[#reply + 1] = {names[i], definition, tonumber(names[i + 1])}
  end
end
return reply
