--[[ FAIL: the holder of the lease reports a failure; the job retries later or dies.

job_key      emq:{q}:job:<id>   the record (hash)
active_key   emq:{q}:active     (zset)
delayed_key  emq:{q}:delayed    (zset) score = due time, server ms
dead_key     emq:{q}:dead       (zset) score = death time, server ms
errors_key   emq:{q}:errors     (hash) id -> the job's last error text
policy_key   emq:{q}:policy     (hash) id -> the job's own policy (includes/policy)
events_key   emq:{q}:events     (stream) the event log,
config_key   emq:{q}:config     (hash) a `failed` or `dead` event (includes/events)
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key  emq:{q}:parents    (hash) optional, with counts_key and notices_key: child id -> its
notices_key  emq:{q}:notices    (stream) link; a linked job that dies tells its parent (includes/notice)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3]  max_attempts: 0..=2147483647: when attempts >= this, the job dies;
         the job's own ATTEMPTS instead, when it has one
ARGV[4]  backoff: ms, 0..=999999999999: the retry is due that long from now;
         the job's own BACKOFF or BACKOFF_EXP instead, when it has one
ARGV[5]  error: the text, at most 65536 bytes, kept in errors_key
Reply    'delayed' (it will retry) or 'dead' (a flow's child, with its notice, outcome `dead`)
Errors   EMQKIND, EMQARG (also: a flow's child that dies, without the flows' keys), EMQSIZE, EMQTYPE,
         EMQNOJOB, EMQFENCE, EMQVERSION, EMQDATA
]]
--@include policy
--@include options
--@include notice
--@include events
--@include event_error
--@include counts
--@include fenced
--@include forget

--@keys FAIL's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local delayed_key = KEYS[3]
local dead_key = KEYS[4]
local errors_key = KEYS[5]
local policy_key = KEYS[6]
local events_key = KEYS[7]
local config_key = KEYS[8]
local counts_key = KEYS[9]   -- nil unless the call sends 9 or 11 keys
local parents_key = KEYS[10] -- nil unless the call sends 11 keys
local notices_key = KEYS[11] -- nil unless the call sends 11 keys
local key_names = {'job', 'active', 'delayed', 'dead', 'errors', 'policy', 'events', 'config', 'counts',
  'parents', 'notices'}
local key_forms = {8, 9, 11}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local max_attempts, backoff
max_attempts, err = integer(ARGV[3], 'max_attempts', MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX)
if err then return err end
backoff, err = integer(ARGV[4], 'backoff', DELAY_MS_MIN, DELAY_MS_MAX)
if err then return err end
local text = ARGV[5]
if text == nil then
  return emq_error('EMQARG', 'error text is missing')
end
if #text > MAX_ERROR_TEXT then
  return emq_error('EMQSIZE', 'error text exceeds ' .. MAX_ERROR_TEXT .. ' bytes')
end
err = no_options_error(6)
if err then return err end
err = type_error(active_key, 'zset') or type_error(delayed_key, 'zset') or type_error(dead_key, 'zset')
  or type_error(errors_key, 'hash') or type_error(policy_key, 'hash') or fence_error(job_key, token)
if err then return err end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end
err = counts_open(counts_key, {'failed', 'dead'})
if err then return err end

local policy = {}
if policy_key then
  policy, err = policy_of(policy_key, id)
  if err then return err end
  policy = policy or {}
end
local now = now_ms()
local state = token >= (policy.ATTEMPTS or max_attempts) and 'dead' or 'delayed'
-- Only a job that dies ends, and tells its parent.
local prefix = string.sub(active_key, 1, #active_key - #'active')
local link
err = notices_open_error(parents_key, notices_key)
if err then return err end
if state == 'dead' then
  link, err = parent_link(parents_key, prefix, id)
  if err then return err end
end
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end

redis.call('ZREM', active_key, id)
if group then G.off_active(prefix, id, group, false) end
redis.call('HSET', job_key, 'state', state)
if state == 'dead' then
  redis.call('ZADD', dead_key, now, id)
else
  redis.call('ZADD', delayed_key, now + policy_backoff(policy, backoff, token), id)
end
redis.call('HSET', errors_key, id, text)
emit(events_key, keep, state == 'dead' and 'dead' or 'failed', id, 'attempt', token, 'error', event_error(text))
if link then tell_parent_died(notices_key, prefix, id, link) end
return state
