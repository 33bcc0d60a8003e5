--[[ EXTEND: the holder of the lease renews it (the heartbeat).

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset) score = lease deadline, server ms
ARGV[1]  the job id
ARGV[2]  the token the claim handed out
ARGV[3]  lease, ms, 1..=2147483647: the new deadline is that long from now
Reply    the new deadline, server ms
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE
]]
--@include common

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'active'}, id)
if err then return err end
local token, lease
token, err = integer(ARGV[2], 'token', 1, 999999999999999)
if err then return err end
lease, err = integer(ARGV[3], 'lease', 1, 2147483647)
if err then return err end
_, err = options(4, {})
if err then return err end
err = type_error(KEYS[2], 'zset') or fence_error(KEYS[1], token)
if err then return err end

local deadline = now_ms() + lease
redis.call('ZADD', KEYS[2], deadline, id)
return deadline
