--[[ ACK: the holder of the lease finishes the job, and may keep what its
handler returned.

job_key      emq:{q}:job:<id>   the record (hash)
active_key   emq:{q}:active     (zset)
done_key     emq:{q}:done       (zset) score = finish time, server ms
results_key  emq:{q}:results    (hash) id -> the job's RESULT
events_key   emq:{q}:events     (stream) the event log
config_key   emq:{q}:config     (hash) its length (includes/events)
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3..] options:
         RESULT <bytes>     0 to 1048576 bytes: kept as results[id]
Reply    1; with the events keys, a `completed` event (with result_bytes
         when a result was kept)
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, EMQNOJOB, EMQFENCE (not active, or another token), EMQVERSION, EMQDATA
]]
--@include fenced
--@include ack

--@keys ACK's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local done_key = KEYS[3]
local results_key = KEYS[4]
local events_key = KEYS[5]
local config_key = KEYS[6]
local counts_key = KEYS[7] -- nil unless the call sends 7 keys
local key_names = {'job', 'active', 'done', 'results', 'events', 'config', 'counts'}
local key_forms = {6, 7}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local result
local i = 3
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'RESULT' then
    return emq_error('EMQARG', 'unknown option ' .. ARGV[i])
  end
  result, err = ack_result(result, ARGV[i + 1])
  if err then return err end
  i = i + 2
end
err = ack_keys_error(job_key, active_key, done_key, results_key, token)
if err then return err end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end
err = counts_open(counts_key, {'completed'})
if err then return err end
finish_job(job_key, active_key, done_key, results_key, events_key, id, result, keep)
return 1
