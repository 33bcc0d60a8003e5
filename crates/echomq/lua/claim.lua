--[[ CLAIM: take the head of pending, up to COUNT jobs, each under a new lease.

pending_key  emq:{q}:pending    (zset)
active_key   emq:{q}:active     (zset) score = lease deadline, server ms
config_key   emq:{q}:config     (hash) the queue's settings, read by the gate
rate_key     emq:{q}:rate       (zset) the claim log of a rate-limited queue:
                                <id>:<token> by claim time, server ms
policy_key   emq:{q}:policy     (hash) id -> the job's own policy, if it has one
events_key   emq:{q}:events     (stream) the event log (includes/events),
                                an `active` event per claimed job
headers_key  emq:{q}:headers    (hash) id -> the job's headers
wake_key     emq:{q}:wake       (zset) the wake-up key
                                (includes/wake), told again when the claim took
                                all it asked for and pending still holds jobs
ARGV[1]  lease, ms          1..=2147483647
ARGV[2..] options:
         COUNT <n>          1..=1000, default 1
         UNTIL <ms>         0..=9999999999999 (1.8): past this server ms the claim
                            takes nothing and reads nothing, answering [] (a
                            partitioned queue's permits, PROTOCOL.md §7.10)
         BLOCK <ms>         native only (EMQ.CLAIM): the script refuses it
Derived  emq:{q}:job:<id>   the record of each popped id: the prefix of pending_key
                            with job:<id>, so the same hashtag and slot.
Reply    an array of claimed jobs in pending order (priority, then id), each
         [id, token, payload], or [id, token, payload, policy] for a job
         with a policy of its own (its text, as ENQUEUE stored it), or
         [id, token, payload, policy or nil, headers] for a job with headers
         (with headers_key); empty when
         pending is empty. The token is the record's new attempts: each claim
         mints the next one.
         An id in pending whose record is missing is dropped, not claimed.
         The gate (includes/gate) lets at most its room through: none while
         the queue is paused (or under a timed pause, DEFER's), at most the concurrency limit minus the size of
         active, at most the rate minus the claims logged in the last period.
         When the queue is paused, or a limit held back jobs that pending
         still holds, one integer follows the jobs: -1 paused, 0 the
         concurrency limit, n > 0 ms to wait (the next rate slot, or the end
         of a timed pause). An idle queue answers [] whatever its limits. Under a
         rate, each claim is logged in rate_key, and the entries
         that left the window are trimmed.
Errors   EMQARG, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include claim
--@include options

--@keys CLAIM's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local pending_key = KEYS[1]
local active_key = KEYS[2]
local config_key = KEYS[3]
local rate_key = KEYS[4]
local policy_key = KEYS[5]
local events_key = KEYS[6]
local headers_key = KEYS[7]
local wake_key = KEYS[8]
local key_names = {'pending', 'active', 'config', 'rate', 'policy', 'events', 'headers', 'wake'}
local key_forms = {8}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local lease
lease, err = integer(ARGV[1], 'lease', LEASE_MS_MIN, LEASE_MS_MAX)
if err then return err end
local opts
opts, err = options(2, {COUNT = {CLAIM_COUNT_MIN, CLAIM_COUNT_MAX}, UNTIL = {AT_MS_MIN, AT_MS_MAX}})
if err then return err end
if opts.UNTIL and now_ms() > opts.UNTIL then return {} end
local head
head, err = pending_head(pending_key, opts.COUNT or 1, prefix)
err = err or type_error(active_key, 'zset')
if err then return err end
local keys = {pending = pending_key, active = active_key, config = config_key, rate = rate_key,
  policy = policy_key, events = events_key or false, headers = headers_key or false, wake = wake_key or false}
return claim_jobs(keys, prefix, lease, opts.COUNT or 1, head)
