--[[ ACKNEXT: ACK, then CLAIM for the same holder, in one atomic step: a
worker finishes a job and fetches its next ones in one round trip.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset) score = lease deadline, server ms
KEYS[3]  emq:{q}:done       (zset) score = finish time, server ms
KEYS[4]  emq:{q}:results    (hash) id -> the job's result
KEYS[5]  emq:{q}:events     (stream) the event log (includes/events)
KEYS[6]  emq:{q}:config     (hash) the queue's settings, read by the gate
KEYS[7]  emq:{q}:pending    (zset)
KEYS[8]  emq:{q}:rate       (zset) the claim log of a rate-limited queue
KEYS[9]  emq:{q}:policy     (hash) id -> the job's own policy, if it has one
KEYS[10] emq:{q}:headers    (hash) id -> the job's headers
KEYS[11] emq:{q}:wake       (zset) the wake-up key (includes/wake), as CLAIM
KEYS[12] emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3]  lease, ms          1..=2147483647: the lease of the jobs it claims
ARGV[4..] options, in any order:
         RESULT <bytes>     0 to 1048576 bytes: kept as results[id]
         COUNT <n>          1..=1000, default 1: the most jobs to claim
Reply    CLAIM's reply: the jobs claimed after the ack, then
         the gate's integer when it held back jobs still pending (or paused). The ack's `completed`
         event comes before the claims' `active` ones.
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, EMQNOJOB, EMQFENCE (not active,
         or another token), EMQVERSION, EMQDATA, TRYAGAIN. Every key's type, the fence, and the
         records at the head of pending that the claim may take are checked
         before the first write: a refused ACKNEXT acks nothing and claims
         nothing.
]]
--@include fenced
--@include ack
--@include claim

--@keys ACKNEXT's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local done_key = KEYS[3]
local results_key = KEYS[4]
local events_key = KEYS[5]
local config_key = KEYS[6]
local pending_key = KEYS[7]
local rate_key = KEYS[8]
local policy_key = KEYS[9]
local headers_key = KEYS[10]
local wake_key = KEYS[11]
local counts_key = KEYS[12] -- nil unless the call sends 12 keys
local key_names = {'job', 'active', 'done', 'results', 'events', 'config', 'pending', 'rate', 'policy',
  'headers', 'wake', 'counts'}
local key_forms = {11, 12}
--@keys end

local names = {'job', 'active', 'done', 'results', 'events', 'config', 'pending', 'rate', 'policy', 'headers',
  'wake', 'counts'}
local id, token, err = fenced_call(names, {11, 12})
if err then return err end
local prefix = string.sub(KEYS[2], 1, #KEYS[2] - #'active')
local lease
lease, err = integer(ARGV[3], 'lease', LEASE_MS_MIN, LEASE_MS_MAX)
if err then return err end
local result, count
local i = 4
while i <= #ARGV do
  local name = string.upper(ARGV[i])
  if name == 'RESULT' then
    result, err = ack_result(result, ARGV[i + 1])
  elseif name == 'COUNT' then
    if count then return emq_error('EMQARG', 'COUNT given twice') end
    count, err = integer(ARGV[i + 1], 'COUNT', CLAIM_COUNT_MIN, CLAIM_COUNT_MAX)
  else
    return emq_error('EMQARG', 'unknown option ' .. ARGV[i])
  end
  if err then return err end
  i = i + 2
end
err = fenced_keys_error({'zset', 'zset', 'hash'}, token)
if err then return err end
local head
head, err = pending_head(KEYS[7], count or 1)
err = err or type_error(KEYS[8], 'zset')
  or type_error(KEYS[9], 'hash') or type_error(KEYS[10], 'hash') or type_error(KEYS[11], 'zset')
if err then return err end
-- The records the claim may take, read and checked once, here, before the
-- ack's writes: the ack changes none of what the claim reads.
head.records, err = read_records(prefix, head.ids, 'state', 'attempts', 'payload')
err = err or claimed_records_error(prefix, head.ids, head.records)
if err then return err end
local keep
keep, err = events_keep(KEYS[5], KEYS[6], events_setting)
if err then return err end
err = counts_open(KEYS[12], {'completed'})
if err then return err end

ack_job(id, result, keep)
local keys = {pending = KEYS[7], active = KEYS[2], config = KEYS[6], rate = KEYS[8], policy = KEYS[9],
  events = KEYS[5], headers = KEYS[10], wake = KEYS[11]}
return claim_jobs(keys, prefix, lease, count or 1, head)
