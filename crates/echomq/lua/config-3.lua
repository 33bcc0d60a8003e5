--[[ CONFIG: read and change the queue's settings, the fields of
emq:{q}:config that CLAIM's gate (includes/gate) reads.

KEYS[1]  emq:{q}:config     (hash) paused = 1 while paused; concurrency = n
KEYS[2]  emq:{q}:pending    (zset)
KEYS[3]  emq:{q}:priority   (hash)
ARGV[1..] options, each at most once; none: only read.
         PAUSED <0|1>       1 pauses the queue's claims; 0 resumes them
         CONCURRENCY <n>    0..=2147483647: at most n jobs active at once; 0: no limit
Reply    [paused, concurrency]: the settings after the change (0: no limit)
         Resuming a paused queue re-adds the head of pending at its own score
         (ZREM, then ZADD), so every waiting claim wakes as on an arrival.
Errors   EMQARG, EMQTYPE
]]
--@include common

local _, err = queue_prefix({'config', 'pending', 'priority'})
if err then return err end
local opts
opts, err = options(1, {PAUSED = {SWITCH_MIN, SWITCH_MAX}, CONCURRENCY = {CONCURRENCY_MIN, CONCURRENCY_MAX}})
if err then return err end
err = type_error(KEYS[1], 'hash') or type_error(KEYS[2], 'zset') or type_error(KEYS[3], 'hash')
if err then return err end

local was_paused = tonumber(redis.call('HGET', KEYS[1], 'paused')) == 1
if opts.PAUSED == 1 then
  redis.call('HSET', KEYS[1], 'paused', 1)
elseif opts.PAUSED == 0 then
  redis.call('HDEL', KEYS[1], 'paused')
end
if opts.CONCURRENCY == 0 then
  redis.call('HDEL', KEYS[1], 'concurrency')
elseif opts.CONCURRENCY then
  redis.call('HSET', KEYS[1], 'concurrency', opts.CONCURRENCY)
end
if was_paused and opts.PAUSED == 0 then
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if head then
    redis.call('ZREM', KEYS[2], head)
    redis.call('ZADD', KEYS[2], redis.call('HGET', KEYS[3], head) or 0, head)
  end
end
local settings = redis.call('HMGET', KEYS[1], 'paused', 'concurrency')
return {tonumber(settings[1]) == 1 and 1 or 0, tonumber(settings[2]) or 0}
