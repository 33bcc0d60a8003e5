--[[ RELEASE: the holder of the lease gives the job back, without blame.
The attempts counter stays where the claim put it: it is the fencing token and
never goes down, so the next claim mints the next token. With REFUND the
attempt is not spent either: the job's own ATTEMPTS grow by one, as DEFER's.

job_key       emq:{q}:job:<id>   the record (hash)
active_key    emq:{q}:active     (zset)
pending_key   emq:{q}:pending    (zset)
priority_key  emq:{q}:priority   (hash) id -> priority, for jobs whose priority is not 0
events_key    emq:{q}:events     (stream) the event log,
config_key    emq:{q}:config     (hash) a `released` event (includes/events)
wake_key      emq:{q}:wake       (zset) the wake-up key
                                 (includes/wake), told
policy_key    emq:{q}:policy     (hash) with REFUND only: the job's own ATTEMPTS
              Seven keys without REFUND, eight with it.
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3..] options:
         REFUND <n>         0..=2147483647: the attempt is given back; n is the
                            caller's maximum, for a job with no ATTEMPTS
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE, EMQVERSION, EMQDATA
]]
--@include fenced
--@include policy
--@include events
--@include wake
--@include forget
--@include trailing_keys
--@include options
--@include pending
--@include policy_text

--@keys RELEASE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local active_key = KEYS[2]
local pending_key = KEYS[3]
local priority_key = KEYS[4]
local events_key = KEYS[5]
local config_key = KEYS[6]
local wake_key = KEYS[7]
local policy_key = KEYS[8] -- nil unless the call sends 8 keys
local key_names = {'job', 'active', 'pending', 'priority', 'events', 'config', 'wake', 'policy'}
local key_forms = {7, 8}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local opts
opts, err = options(3, {REFUND = {MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX}})
if err then return err end
if opts.REFUND and #KEYS == 7 then
  return emq_error('EMQARG', 'REFUND needs the policy key: takes 8 keys')
elseif not opts.REFUND and #KEYS == 8 then
  return emq_error('EMQARG', 'the policy key goes with REFUND: takes 7 keys without it')
end
err = type_error(active_key, 'zset') or type_error(pending_key, 'zset') or type_error(priority_key, 'hash')
  or fence_error(job_key, token)
if err then return err end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key)
if err then return err end
local policy
if opts.REFUND then
  err = type_error(policy_key, 'hash')
  if err then return err end
  policy, err = policy_of(policy_key, id)
  if err then return err end
  policy = policy or {}
  policy.ATTEMPTS = math.min((policy.ATTEMPTS or opts.REFUND) + 1, MAX_ATTEMPTS_MAX)
end
local score
score, err = priority_of(priority_key, id)
if err then return err end
local prefix = string.sub(active_key, 1, #active_key - #'active')
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end

redis.call('ZREM', active_key, id)
if group then G.off_active(prefix, id, group, true) end
to_pending(job_key, pending_key, score, id, G, prefix, group)
if policy then
  redis.call('HSET', policy_key, id, policy_text(policy))
end
wake(wakes)
emit(events_key, keep, 'released', id)
return 1
