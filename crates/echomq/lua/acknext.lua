--[[ ACKNEXT: ACK, then CLAIM for the same holder, in one atomic step: a
worker finishes a job and fetches its next ones in one round trip.

job_key      emq:{q}:job:<id>   the record (hash)
active_key   emq:{q}:active     (zset) score = lease deadline, server ms
done_key     emq:{q}:done       (zset) score = finish time, server ms
results_key  emq:{q}:results    (hash) id -> the job's result
events_key   emq:{q}:events     (stream) the event log (includes/events)
config_key   emq:{q}:config     (hash) the queue's settings, read by the gate
pending_key  emq:{q}:pending    (zset)
rate_key     emq:{q}:rate       (zset) the claim log of a rate-limited queue
policy_key   emq:{q}:policy     (hash) id -> the job's own policy, if it has one
headers_key  emq:{q}:headers    (hash) id -> the job's headers
wake_key     emq:{q}:wake       (zset) the wake-up key (includes/wake), as CLAIM
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key  emq:{q}:parents    (hash) optional, with counts_key and notices_key: child id -> its
notices_key  emq:{q}:notices    (stream) link; a linked job tells its parent, as ACK (includes/notice)
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
--@include one_link
--@include counts
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
local counts_key = KEYS[12]  -- nil unless the call sends 12 or 14 keys
local parents_key = KEYS[13] -- nil unless the call sends 14 keys
local notices_key = KEYS[14] -- nil unless the call sends 14 keys
local key_names = {'job', 'active', 'done', 'results', 'events', 'config', 'pending', 'rate', 'policy',
  'headers', 'wake', 'counts', 'parents', 'notices'}
local key_forms = {11, 12, 14}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local prefix = string.sub(active_key, 1, #active_key - #'active')
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
err = ack_keys_error(job_key, active_key, done_key, results_key, token)
if err then return err end
local head
head, err = pending_head(pending_key, count or 1, prefix)
err = err or type_error(rate_key, 'zset')
  or type_error(policy_key, 'hash') or type_error(headers_key, 'hash') or type_error(wake_key, 'zset')
if err then return err end
-- The records the claim may take, read and checked once, here, before the
-- ack's writes: the ack changes none of what the claim reads.
-- A queue with groups plans its claim here, before the ack's writes, as
-- the ack leaves it: one lease fewer, the queue's and its group's. The
-- plan looks at the acked job's group and checks what it touches: the ack
-- only takes the job out of the group's leases.
-- <q>group's type, asked by pending_head, is checked after the gate's and
-- the events' keys, as CLAIM checks it (PROTOCOL.md §7.9): a queue without
-- groups reads neither here.
local room, _, log
if head.group_type ~= 'none' then
  room, _, log, err = gate(config_key, active_key, rate_key, count or 1, 1)
  if err then return err end
  _, err = events_keep(events_key, config_key, events_setting)
  if err then return err end
end
local grouped, group
grouped, err = grouping(prefix, true)
if err then return err end
if grouped then
  group = redis.call('HGET', prefix .. 'group', id)
  head.plan, err = fair_lib().plan(prefix, pending_key, room, log and log.now or now_ms(), group or false, head)
  if err then return err end
  head.ids = head.plan.ids
end
head.records, err = read_records(prefix, head.ids, 'state', 'attempts', 'payload')
err = err or claimed_records_error(prefix, head.ids, head.records)
if err then return err end
local keep
keep, err = events_keep(events_key, config_key, events_setting)
if err then return err end
err = counts_open(counts_key, {'completed'})
if err then return err end
local link
link, err = one_link(parents_key, notices_key, prefix, id)
if err then return err end

finish_job(job_key, active_key, done_key, results_key, events_key, id, result, keep)
if group then redis.call('ZREM', prefix .. 'gactive:' .. group, id) end
if link then tell_parent(parents_key, notices_key, prefix, id, link, 'done', result) end
local keys = {pending = pending_key, active = active_key, config = config_key, rate = rate_key,
  policy = policy_key, events = events_key, headers = headers_key, wake = wake_key}
return claim_jobs(keys, prefix, lease, count or 1, head)
