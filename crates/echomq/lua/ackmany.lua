--[[ ACKMANY: many ACKs in one call, each job fenced by its own token and
answered on its own: a worker's finished jobs, gathered.

active_key   emq:{q}:active     (zset)
done_key     emq:{q}:done       (zset) score = finish time, server ms
results_key  emq:{q}:results    (hash) id -> the job's result
events_key   emq:{q}:events     (stream) the event log (includes/events)
config_key   emq:{q}:config     (hash) its length (includes/events)
counts_key   emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key  emq:{q}:parents    (hash) optional, with counts_key and notices_key: child id -> its
notices_key  emq:{q}:notices    (stream) link; each linked job acked tells its parent, as ACK
                                (includes/notice)
ARGV[1]  id: the first job's id
ARGV[2]  token: the one its claim handed out
ARGV[3..] options of that job, then the next job's id, token and options, …:
         RESULT <bytes>     0 to 1048576 bytes: kept as results[id]
         One to ACKS_MAX jobs.
Reply    an array, one reply a job, in order: 1 (acked, with its `completed`
         event), or the job's own refusal, an error reply: EMQNOJOB, or
         the fence's (not active, or another token; a job named twice is
         acked once and its second entry is refused with EMQFENCE)
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, TRYAGAIN, EMQVERSION, EMQDATA: the call's. The keys'
         types and every record's, and the links of the jobs it acks, are
         checked before the first write: a refused call acks nothing (a
         flow's child acked without the flows' keys refuses it, EMQARG).
]]
--@include notice
--@include counts
--@include ack
--@include forget
--@include last_first
--@include fence

--@keys ACKMANY's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local active_key = KEYS[1]
local done_key = KEYS[2]
local results_key = KEYS[3]
local events_key = KEYS[4]
local config_key = KEYS[5]
local counts_key = KEYS[6]  -- nil unless the call sends 6 or 8 keys
local parents_key = KEYS[7] -- nil unless the call sends 8 keys
local notices_key = KEYS[8] -- nil unless the call sends 8 keys
local key_names = {'active', 'done', 'results', 'events', 'config', 'counts', 'parents', 'notices'}
local key_forms = {5, 6, 8}
--@keys end

-- The jobs `ids`, their records under `prefix`, to done as finish_job
-- takes one, with `kept[j]` the result of ids[j] (if any): out of active
-- in one ZREM and into done in one ZADD for them all (ACKMANY).
local function finish_jobs(prefix, active, done, results, events, ids, kept, keep)
  if #ids == 0 then return end
  redis.call('ZREM', active, unpack(ids))
  for j, id in ipairs(ids) do
    redis.call('HSET', prefix .. 'job:' .. id, 'state', 'done')
    completed(results, events, id, kept[j], keep)
  end
  redis.call('ZADD', done, unpack(scored_last_first(string.format('%d', now_ms()), ids)))
end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local ids, tokens, results = {}, {}, {}
local i, n = 1, 0
repeat
  if n == ACKS_MAX then
    return emq_error('EMQARG', 'at most ' .. ACKS_MAX .. ' jobs a call')
  end
  local id = ARGV[i]
  err = kind_error(id)
  if err then return err end
  local token, result
  token, err = integer(ARGV[i + 1], 'token', TOKEN_MIN, TOKEN_MAX)
  if err then return err end
  i = i + 2
  while ARGV[i] and string.upper(ARGV[i]) == 'RESULT' do
    result, err = ack_result(result, ARGV[i + 1])
    if err then return err end
    i = i + 2
  end
  n = n + 1
  ids[n], tokens[n], results[n] = id, token, result
until i > #ARGV

err = type_error(active_key, 'zset') or type_error(done_key, 'zset') or type_error(results_key, 'hash')
if err then return err end
local records = {}
for j = 1, n do
  records[j], err = read_hash(prefix .. 'job:' .. ids[j], 'state', 'attempts')
  if err then return err end
end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end
err = counts_open(counts_key, {'completed'})
if err then return err end
counts_hold()

local acked, replies, finished, kept = {}, {}, {}, {}
for j = 1, n do
  local id, fields = ids[j], records[j]
  local key = prefix .. 'job:' .. id
  -- A record that lacks its state or attempts, or whose state is none of
  -- the seven, is that job's EMQDATA.
  local fenced = whole_error(key, fields, 'state', 'attempts')
    or fields[1] and fenced_record_error(key, fields[1], fields[2], tokens[j])
  if fenced then
    replies[j] = fenced
  elseif not fields[1] then
    replies[j] = emq_error('EMQNOJOB', 'no such job')
  elseif acked[id] then
    replies[j] = emq_error('EMQFENCE', 'token does not hold the lease')
  else
    acked[id] = true
    local at = #finished + 1
    finished[at], kept[at] = id, results[j]
    replies[j] = 1
  end
end
-- The acked jobs' links, the last of the reads: a linked job in a call
-- without the flows' keys refuses the whole call.
err = notices_open_error(parents_key, notices_key)
if err then return err end
local links = {}
for j, id in ipairs(finished) do
  links[j], err = parent_link(parents_key, prefix, id)
  if err then return err end
end

local G, groups
G, err = grouping(prefix)
if G then groups, err = G.jobs_groups(prefix, finished) end
if err then return err end
finish_jobs(prefix, active_key, done_key, results_key, events_key, finished, kept, keep)
if groups then
  for j, id in ipairs(finished) do
    if groups[j] then G.off_active(prefix, id, groups[j], false) end
  end
end
for j, id in ipairs(finished) do
  if links[j] then tell_parent(parents_key, notices_key, prefix, id, links[j], 'done', kept[j]) end
end
counts_flush()
return replies
