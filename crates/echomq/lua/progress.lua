--[[ PROGRESS: the holder of the lease reports how far the job got. The value
is kept beside the record (never in it) until the job is purged; the record
is untouched.

job_key       emq:{q}:job:<id>   the record (hash)
progress_key  emq:{q}:progress   (hash) id → the last progress value
events_key    emq:{q}:events     (stream) the event log,
config_key    emq:{q}:config     (hash) a `progress` event (includes/events)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3]  value: opaque bytes, at most MAX_PROGRESS (4096)
Reply    1
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, EMQNOJOB, EMQFENCE (not active, or another token), EMQVERSION, EMQDATA
]]
--@include fenced
--@include events
--@include options

--@keys PROGRESS's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local progress_key = KEYS[2]
local events_key = KEYS[3]
local config_key = KEYS[4]
local key_names = {'job', 'progress', 'events', 'config'}
local key_forms = {4}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local value = ARGV[3]
if value == nil then
  return emq_error('EMQARG', 'progress value is missing')
end
if #value > MAX_PROGRESS then
  return emq_error('EMQSIZE', 'progress exceeds ' .. MAX_PROGRESS .. ' bytes')
end
err = no_options_error(4)
if err then return err end
err = type_error(progress_key, 'hash') or fence_error(job_key, token)
if err then return err end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end

-- A write that changes nothing, first: Redis refuses a script's first write
-- that may grow memory at maxmemory, and lets the later ones through; a running
-- job's progress is work in flight, which runs there too (PROTOCOL.md §8).
redis.call('HDEL', progress_key, '')
redis.call('HSET', progress_key, id, value)
emit(events_key, keep, 'progress', id, 'progress', value)
return 1
