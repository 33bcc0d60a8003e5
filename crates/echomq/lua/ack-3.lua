--[[ ACK: the holder of the lease finishes the job.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:done       (zset) score = finish time, server ms
ARGV[1]  the job id
ARGV[2]  the token the claim handed out
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE (not active, or another token)
]]
--@include common

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'active', 'done'}, id)
if err then return err end
local token
token, err = integer(ARGV[2], 'token', 1, 999999999999999)
if err then return err end
_, err = options(3, {})
if err then return err end
err = type_error(KEYS[2], 'zset') or type_error(KEYS[3], 'zset') or fence_error(KEYS[1], token)
if err then return err end

redis.call('ZREM', KEYS[2], id)
redis.call('HSET', KEYS[1], 'state', 'done')
redis.call('ZADD', KEYS[3], now_ms(), id)
return 1
