--[[ DEPTH: how many jobs are pending.

KEYS[1]  emq:{q}:pending    (zset)
Reply    the number of pending jobs
Errors   EMQARG, EMQTYPE
]]
--@include common

local _, err = queue_prefix({'pending'})
if err then return err end
_, err = options(1, {})
if err then return err end
err = type_error(KEYS[1], 'zset')
if err then return err end
return redis.call('ZCARD', KEYS[1])
