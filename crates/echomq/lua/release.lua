--[[ RELEASE: the holder of the lease gives the job back, without blame.
The attempts counter stays where the claim put it: it is the fencing token and
never goes down, so the next claim mints the next token. With REFUND the
attempt is not spent either: the job's own ATTEMPTS grow by one, as DEFER's.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:pending    (zset)
KEYS[4]  emq:{q}:priority   (hash) id -> priority, for jobs whose priority is not 0
KEYS[5]  emq:{q}:events     (stream) the event log,
KEYS[6]  emq:{q}:config     (hash) a `released` event (includes/events)
KEYS[7]  emq:{q}:wake       (zset) the wake-up key
                            (includes/wake), told
KEYS[8]  emq:{q}:policy     (hash) with REFUND only: the job's own ATTEMPTS
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

local id, token, err = fenced_call({'job', 'active', 'pending', 'priority', 'events', 'config', 'wake', 'policy'},
  {7, 8})
if err then return err end
local opts
opts, err = options(3, {REFUND = {MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX}})
if err then return err end
if opts.REFUND and #KEYS == 7 then
  return emq_error('EMQARG', 'REFUND needs the policy key: takes 8 keys')
elseif not opts.REFUND and #KEYS == 8 then
  return emq_error('EMQARG', 'the policy key goes with REFUND: takes 7 keys without it')
end
err = fenced_keys_error({'zset', 'zset', 'hash'}, token)
if err then return err end
local keep, wakes
keep, wakes, err = events_and_wake(7)
if err then return err end
local policy
if opts.REFUND then
  err = type_error(KEYS[8], 'hash')
  if err then return err end
  policy, err = policy_of(KEYS[8], id)
  if err then return err end
  policy = policy or {}
  policy.ATTEMPTS = math.min((policy.ATTEMPTS or opts.REFUND) + 1, MAX_ATTEMPTS_MAX)
end
local score
score, err = priority_of(KEYS[4], id)
if err then return err end

redis.call('ZREM', KEYS[2], id)
to_pending(KEYS[1], KEYS[3], score, id)
if policy then
  redis.call('HSET', KEYS[8], id, policy_text(policy))
end
wake(wakes)
emit(KEYS[5], keep, 'released', id)
return 1
