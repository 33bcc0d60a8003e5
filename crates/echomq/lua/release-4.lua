--[[ RELEASE: the holder of the lease gives the job back, without blame.
The attempts counter stays where the claim put it: it is the fencing token and
never goes down, so the next claim mints the next token.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:pending    (zset)
KEYS[4]  emq:{q}:priority   (hash) id -> priority, for jobs whose priority is not 0
ARGV[1]  the job id
ARGV[2]  the token the claim handed out
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE
]]
--@include common

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'active', 'pending', 'priority'}, id)
if err then return err end
local token
token, err = integer(ARGV[2], 'token', 1, 999999999999999)
if err then return err end
_, err = options(3, {})
if err then return err end
err = type_error(KEYS[2], 'zset') or type_error(KEYS[3], 'zset') or type_error(KEYS[4], 'hash')
  or fence_error(KEYS[1], token)
if err then return err end

redis.call('ZREM', KEYS[2], id)
to_pending(KEYS[1], KEYS[3], KEYS[4], id)
return 1
