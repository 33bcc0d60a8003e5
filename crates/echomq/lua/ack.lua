--[[ ACK: the holder of the lease finishes the job, and may keep what its
handler returned.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:done       (zset) score = finish time, server ms
KEYS[4]  emq:{q}:results    (hash) id -> the job's RESULT
KEYS[5]  emq:{q}:events     (stream) the event log
KEYS[6]  emq:{q}:config     (hash) its length (includes/events)
KEYS[7]  emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
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

local id, token, err = fenced_call({'job', 'active', 'done', 'results', 'events', 'config', 'counts'}, {6, 7})
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
local types = {'zset', 'zset', 'hash'}
err = fenced_keys_error(types, token)
if err then return err end
local keep
keep, err = events_keep(KEYS[5], KEYS[6])
if err then return err end
err = counts_open(KEYS[7], {'completed'})
if err then return err end
ack_job(id, result, keep)
return 1
