--[[ ACK: the holder of the lease finishes the job.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:done       (zset) score = finish time, server ms
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE (not active, or another token)
]]
--@include fenced

local id, token, err = fenced_call({'job', 'active', 'done'})
if err then return err end
err = no_options_error(3)
if err then return err end
err = fenced_keys_error({'zset', 'zset'}, token)
if err then return err end

redis.call('ZREM', KEYS[2], id)
redis.call('HSET', KEYS[1], 'state', 'done')
redis.call('ZADD', KEYS[3], now_ms(), id)
return 1
