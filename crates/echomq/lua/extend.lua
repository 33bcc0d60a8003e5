--[[ EXTEND: the holder of the lease renews it (the heartbeat).

job_key     emq:{q}:job:<id>   the record (hash)
active_key  emq:{q}:active     (zset) score = lease deadline, server ms
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3]  lease, ms, 1..=2147483647: the new deadline is that long from now
Reply    the new deadline, server ms
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE
]]
--@include fenced
--@include options

--@keys EXTEND's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local key_names = {'job', 'active'}
local key_forms = {2}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local lease
lease, err = integer(ARGV[3], 'lease', LEASE_MS_MIN, LEASE_MS_MAX)
if err then return err end
err = no_options_error(4)
if err then return err end
err = type_error(active_key, 'zset') or fence_error(job_key, token)
if err then return err end

local deadline = now_ms() + lease
-- A write that changes nothing, first: Redis refuses a script's first write
-- that may grow memory at maxmemory, and lets the later ones through; this
-- transition moves work in flight, which runs there too (PROTOCOL.md §8).
redis.call('ZREM', active_key, '')
redis.call('ZADD', active_key, deadline, id)
return deadline
