--[[ ACK: the holder of the lease finishes the job, and may keep what its
handler returned.

job_key      emq:{q}:job:<id>   the record (hash)
active_key   emq:{q}:active     (zset)
done_key     emq:{q}:done       (zset) score = finish time, server ms
results_key  emq:{q}:results    (hash) id -> the job's RESULT
events_key   emq:{q}:events     (stream) the event log
config_key   emq:{q}:config     (hash) its length (includes/events)
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key  emq:{q}:parents    (hash) optional, with counts_key and notices_key: child id -> its
notices_key  emq:{q}:notices    (stream) link; a linked job tells its parent (includes/notice)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3..] options:
         RESULT <bytes>     0 to 1048576 bytes: kept as results[id]
Reply    1; with the events keys, a `completed` event (with result_bytes
         when a result was kept); a flow's child, its notice (outcome
         `done`, with its result)
Errors   EMQKIND, EMQARG (also: a flow's child without the flows' keys), EMQSIZE, EMQTYPE, EMQNOJOB, EMQFENCE
         (not active, or another token), EMQVERSION, EMQDATA
]]
--@include one_link
--@include counts
--@include fenced
--@include ack
--@include forget

--@keys ACK's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local done_key = KEYS[3]
local results_key = KEYS[4]
local events_key = KEYS[5]
local config_key = KEYS[6]
local counts_key = KEYS[7]  -- nil unless the call sends 7 or 9 keys
local parents_key = KEYS[8] -- nil unless the call sends 9 keys
local notices_key = KEYS[9] -- nil unless the call sends 9 keys
local key_names = {'job', 'active', 'done', 'results', 'events', 'config', 'counts', 'parents', 'notices'}
local key_forms = {6, 7, 9}
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
local prefix = string.sub(active_key, 1, #active_key - #'active')
local link
link, err = one_link(parents_key, notices_key, prefix, id)
if err then return err end
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end

finish_job(job_key, active_key, done_key, results_key, events_key, id, result, keep)
if group then G.off_active(prefix, id, group, false) end
if link then tell_parent(parents_key, notices_key, prefix, id, link, 'done', result) end
return 1
