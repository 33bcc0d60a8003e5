--[[ DEFER: the holder of the lease was told to come back later (an HTTP
429, a downstream's Retry-After). The job waits in delayed without spending
its attempt, and with PAUSE 1 the whole queue's claims wait as long.

job_key      emq:{q}:job:<id>   the record (hash)
active_key   emq:{q}:active     (zset)
delayed_key  emq:{q}:delayed    (zset) score = due time, server ms
policy_key   emq:{q}:policy     (hash) the job's own ATTEMPTS grow by one
config_key   emq:{q}:config     (hash) paused_until = the end of a timed pause
events_key   emq:{q}:events     (stream) the event log, a `deferred`
                                event (includes/events)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3]  delay: ms, 0..=999999999999: the job is due that long from now
ARGV[4]  max_attempts: 0..=2147483647: the caller's, for a job with no ATTEMPTS
ARGV[5..] options:
         PAUSE <0|1>        1: no claim of the queue takes a job until then
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE, EMQVERSION, EMQDATA
]]
--@include fenced
--@include policy
--@include events
--@include forget
--@include options
--@include policy_text

--@keys DEFER's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local delayed_key = KEYS[3]
local policy_key = KEYS[4]
local config_key = KEYS[5]
local events_key = KEYS[6]
local key_names = {'job', 'active', 'delayed', 'policy', 'config', 'events'}
local key_forms = {6}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local delay, max_attempts, opts
delay, err = integer(ARGV[3], 'delay', DELAY_MS_MIN, DELAY_MS_MAX)
if err then return err end
max_attempts, err = integer(ARGV[4], 'max_attempts', MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX)
if err then return err end
opts, err = options(5, {PAUSE = {FLAG_MIN, FLAG_MAX}})
if err then return err end
err = type_error(active_key, 'zset') or type_error(delayed_key, 'zset') or type_error(policy_key, 'hash')
  or type_error(config_key, 'hash') or fence_error(job_key, token)
if err then return err end
-- Everything read, checked before the first write: the policy, the timed
-- pause (with the queue's protocol), then the events keys.
local policy
policy, err = policy_of(policy_key, id)
if err then return err end
policy = policy or {}
local until_now
if opts.PAUSE == 1 then
  local read = redis.call('HMGET', config_key, 'protocol', 'paused_until')
  err = protocol_error(config_key, read[1])
  if err then return err end
  until_now, err = stored(read[2], config_key, 'paused_until')
  if err then return err end
end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end

local now = now_ms()
local due = now + delay
local prefix = string.sub(active_key, 1, #active_key - #'active')
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end
redis.call('ZREM', active_key, id)
if group then G.off_active(prefix, id, group, false) end
redis.call('HSET', job_key, 'state', 'delayed')
redis.call('ZADD', delayed_key, due, id)
-- The attempt is given back: the job's own maximum grows by one.
policy.ATTEMPTS = math.min((policy.ATTEMPTS or max_attempts) + 1, MAX_ATTEMPTS_MAX)
redis.call('HSET', policy_key, id, policy_text(policy))
if opts.PAUSE == 1 then
  if not until_now or until_now < due then
    redis.call('HSET', config_key, 'paused_until', string.format('%d', due))
  end
end
emit(events_key, keep, 'deferred', id, 'delay', delay, 'pause', opts.PAUSE == 1 and 1 or 0)
return 1
