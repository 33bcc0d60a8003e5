--[[ ENQUEUE: admit one job.

job_key           emq:{q}:job:<id>   the record (hash)
pending_key       emq:{q}:pending    the pending set (zset)
delayed_key       emq:{q}:delayed    the delayed set (zset)
priority_key      emq:{q}:priority   priorities (hash)
policy_key        emq:{q}:policy     job policies (hash)
unique_key        emq:{q}:unique     dedup key -> <0|1>:<id>
unique_until_key  emq:{q}:unique_until  dedup keys by the server ms their hold ends (zset)
events_key        emq:{q}:events     the event log (stream),
config_key        emq:{q}:config     its length (hash): an `enqueued` event
headers_key       emq:{q}:headers    job headers (hash)
wake_key          emq:{q}:wake       the wake-up key (zset): told when the job
                                     is born pending (includes/wake)
                  Two keys (the seed's call) or all eleven: the two take no option.
counts_key        emq:{q}:counts     (hash) optional: the queue's counters (includes/events)
parents_key       emq:{q}:parents    (hash) optional, after counts_key: child id -> its link
                                     (PARENT's, protocol 1.6, includes/notice)
ARGV[1]  id: the job id (JOB_<ulid>)
ARGV[2]  payload: stored verbatim, at most MAX_PAYLOAD (1048576) bytes
ARGV[3..] options, each a name and a value:
         PRIORITY <int>       -2147483648..=2147483647, default 0; lower is claimed first
         DELAY <ms>           0..=999999999999: due that long after the server's now
         AT <unix ms>         0..=9999999999999: due at that server time
         The job's own policy (includes/policy), kept in policy_key:
         ATTEMPTS <n>         0..=2147483647: it dies when its attempts reach n
         BACKOFF <ms>         0..=999999999999: a fixed wait between attempts
         BACKOFF_EXP <ms>     0..=999999999999: ms * 2^(attempt - 1), at most
                              999999999999 (excludes BACKOFF)
         TIMEOUT <ms>         1..=2147483647: how long one attempt may run
         Dedup by a key of the producer's:
         UNIQUE <key>         1 to MAX_UNIQUE_KEY (512) bytes: while a job holds
                              this key, the call changes nothing and answers
                              the holder's id
         UNIQUE_FOR <ms>      1..=999999999999: how long the new job holds it
         UNIQUE_DONE <0|1>    1: the key also frees when its job finishes
         HEADERS <bytes>      1 to 8192 bytes: the job's headers, kept in headers_key
                              (hosts write a JSON object of strings)
         PARENT <link>        `<incarnation> {<queue>}<id>`: the job is a flow's child, linked
                              to its parent in parents_key (all thirteen keys; not with UNIQUE)
         GROUP <g>            1 to 200 bytes: the job's group (1.7, includes/grouping); a group
                              at its MAX pending refuses it (EMQFULL)
Reply    1 enqueued, 0 duplicate (a record with this id exists; nothing changed),
         or the id of the job that holds the UNIQUE key (nothing changed)
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, EMQVERSION, EMQDATA (a malformed
         setting, or a UNIQUE key's value not <0|1>:<id>), EMQFULL
]]
--@include birth
--@include events
--@include payload
--@include wake
--@include grouping
--@include given
--@include counts

--@keys ENQUEUE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local pending_key = KEYS[2]
local delayed_key = KEYS[3]      -- nil unless the call sends 11 or 12 or 13 keys
local priority_key = KEYS[4]     -- nil unless the call sends 11 or 12 or 13 keys
local policy_key = KEYS[5]       -- nil unless the call sends 11 or 12 or 13 keys
local unique_key = KEYS[6]       -- nil unless the call sends 11 or 12 or 13 keys
local unique_until_key = KEYS[7] -- nil unless the call sends 11 or 12 or 13 keys
local events_key = KEYS[8]       -- nil unless the call sends 11 or 12 or 13 keys
local config_key = KEYS[9]       -- nil unless the call sends 11 or 12 or 13 keys
local headers_key = KEYS[10]     -- nil unless the call sends 11 or 12 or 13 keys
local wake_key = KEYS[11]        -- nil unless the call sends 11 or 12 or 13 keys
local counts_key = KEYS[12]      -- nil unless the call sends 12 or 13 keys
local parents_key = KEYS[13]     -- nil unless the call sends 13 keys
local key_names = {'job', 'pending', 'delayed', 'priority', 'policy', 'unique', 'unique_until', 'events',
  'config', 'headers', 'wake', 'counts', 'parents'}
local key_forms = {2, 11, 12, 13}
--@keys end

-- The kind gate: the first three bytes of the id must be JOB (EMQKIND).
-- The rest of the id is the speaker's to choose (PROTOCOL.md §1).
local id, payload = ARGV[1], ARGV[2]
local err = kind_error(id)
if err then return err end
-- The keys must be this queue's keys, as the protocol names them: the seed's
-- two, or all eleven (and the counts key, then the parents key).
local prefix
prefix, err = queue_prefix(key_names, id, key_forms)
if err then return err end
err = payload_error(payload)
if err then return err end
-- The options, when there are any (the seed's call has none: no tables
-- built), and the job's policy as stored (includes/given).
local priority, delay, at, policy, opts = 0, nil, nil, nil, {}
if #ARGV > 2 then
  opts, policy, err = given_options(3)
  if err then return err end
  priority, delay, at = opts.PRIORITY or 0, opts.DELAY, opts.AT
end
if delay and at then
  return emq_error('EMQARG', 'DELAY and AT exclude each other')
end
if opts.BACKOFF and opts.BACKOFF_EXP then
  return emq_error('EMQARG', 'BACKOFF and BACKOFF_EXP exclude each other')
end
local unique = opts.UNIQUE
if unique and not opts.UNIQUE_FOR then
  return emq_error('EMQARG', 'UNIQUE needs UNIQUE_FOR')
end
if not unique and (opts.UNIQUE_FOR or opts.UNIQUE_DONE) then
  return emq_error('EMQARG', 'UNIQUE_FOR and UNIQUE_DONE need UNIQUE')
end
-- A flow's child (protocol 1.6): its link, written to parents_key.
local parent = opts.PARENT
if parent and unique then
  return emq_error('EMQARG', 'PARENT and UNIQUE exclude each other')
end
if parent and not parents_key then
  return emq_error('EMQARG', 'PARENT needs all thirteen keys')
end
local headers = opts.HEADERS
if headers and #KEYS < 11 then
  return emq_error('EMQARG', 'HEADERS needs all eleven keys')
end
if unique and #KEYS < 11 then
  return emq_error('EMQARG', 'UNIQUE needs all eleven keys')
end
if policy and #KEYS < 11 then
  return emq_error('EMQARG', 'ATTEMPTS, BACKOFF, BACKOFF_EXP and TIMEOUT need all eleven keys')
end
-- The due time, on the server's clock; a job already due is simply pending.
local due, now = nil, nil
if delay or at or unique then
  now = now_ms()
end
if delay or at then
  due = at or now + delay
  if due <= now then due = nil end
end
if (delay or at or priority ~= 0) and #KEYS < 11 then
  return emq_error('EMQARG', 'PRIORITY, DELAY and AT need all eleven keys')
end

-- Wrong-typed keys are refused before the first write.
local record_type = redis.call('TYPE', job_key)['ok']
if record_type ~= 'none' and record_type ~= 'hash' then
  return emq_error('EMQTYPE', job_key .. ' holds a ' .. record_type .. ', not a hash')
end
-- Idempotent: a row that already exists is a no-op (a duplicate enqueue).
if record_type == 'hash' then
  return 0
end
err = type_error(pending_key, 'zset')
  or (due and type_error(delayed_key, 'zset'))
  or (priority ~= 0 and type_error(priority_key, 'hash'))
  or (policy and type_error(policy_key, 'hash'))
  or (headers and type_error(headers_key, 'hash'))
  or (unique and (type_error(unique_key, 'hash') or type_error(unique_until_key, 'zset')))
  or (parent and type_error(parents_key, 'hash'))
  or nil
if err then return err end
-- The group's keys' types and its settings, with the other types.
local group, settings = opts.GROUP, nil
if group then
  err = group_lib().check(prefix)
  if err then return err end
  settings, err = group_lib().settings(prefix, group)
  if err then return err end
end

-- Every type (and the settings read with the events key) before a held
-- key answers: a refusal outranks a duplicate.
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end
err = counts_open(counts_key, {'enqueued'})
if err then return err end
local wakes
wakes, err = wake_target(wake_key)
if err then return err end

-- DEDUP: while a job holds the UNIQUE key (its hold has not ended and, for a
-- key that frees when its job finishes, that job is still pending, delayed,
-- active or waiting), answer the holder's id and change nothing. The value is
-- <0|1>:<id>, the id a job id (JOB…, the kind gate's); a value of another
-- shape is malformed (EMQDATA), held or not.
if unique then
  local value = redis.call('HGET', unique_key, unique)
  if value and not string.match(value, '^[01]:JOB') then
    return malformed(unique_key, unique, '<0|1>:<id>')
  end
  local ends = value and redis.call('ZSCORE', unique_until_key, unique)
  if value and ends and tonumber(ends) > now then
    local holder = string.sub(value, 3)
    local held = true
    if string.sub(value, 1, 1) == '1' then
      local record = prefix .. 'job:' .. holder
      err = type_error(record, 'hash')
      if err then return err end
      -- Read as every record is (its state and attempts), but with no look
      -- at a moving slot: a holder missing here frees the key.
      local fields = redis.call('HMGET', record, 'state', 'attempts')
      err = whole_error(record, fields, 'state', 'attempts')
      if err then return err end
      local state = fields[1]
      held = state == 'pending' or state == 'delayed' or state == 'active' or state == 'waiting'
    end
    if held then return holder end
  end
end
-- A group at its most pending refuses a job that would join them.
if group and settings.max and not due
    and redis.call('ZCARD', prefix .. 'gpending:' .. group) >= settings.max then
  return group_lib().full(group, settings.max)
end

-- THE RECORD: one HSET writes the three named fields with their birth values.
--   state    'pending'  the lifecycle position ('delayed' when not yet due)
--   attempts '0'        the fencing token, minted by the first claim
--   payload  ARGV[2]    the caller's opaque cargo, stored verbatim
-- The native command EMQ.ENQUEUE writes this same HSET.
redis.call('HSET', job_key, 'state', due and 'delayed' or 'pending', 'attempts', '0', 'payload', payload)
if group then
  redis.call('HSET', prefix .. 'group', id, group)
end
if priority ~= 0 then
  redis.call('HSET', priority_key, id, string.format('%d', priority))
end
if policy then
  redis.call('HSET', policy_key, id, policy)
end
if headers then
  redis.call('HSET', headers_key, id, headers)
end
if unique then
  -- Forget up to UNIQUE_SWEEP keys whose hold has ended (bounded work), then hold this one.
  local ended = redis.call('ZRANGEBYSCORE', unique_until_key, '-inf', string.format('%d', now), 'LIMIT', '0',
    string.format('%d', UNIQUE_SWEEP))
  if #ended > 0 then
    redis.call('HDEL', unique_key, unpack(ended))
    redis.call('ZREM', unique_until_key, unpack(ended))
  end
  redis.call('HSET', unique_key, unique, (opts.UNIQUE_DONE == 1 and '1:' or '0:') .. id)
  redis.call('ZADD', unique_until_key, string.format('%d', now + opts.UNIQUE_FOR), unique)
end
if parent then
  redis.call('HSET', parents_key, id, parent)
end
if due then
  redis.call('ZADD', delayed_key, string.format('%d', due), id)
else
  -- The pending set: the id is the member, so byte order is mint order.
  if group then
    local G = group_lib()
    G.join(prefix, pending_key, id, group, priority)
    G.reindex(prefix, group)
  else
    redis.call('ZADD', pending_key, string.format('%d', priority), id)
  end
  wake(wakes)
end
emit(events_key, keep, 'enqueued', id, 'state', due and 'delayed' or 'pending')
return 1
