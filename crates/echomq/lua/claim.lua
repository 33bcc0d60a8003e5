--[[ CLAIM: take the head of pending, up to COUNT jobs, each under a new lease.

KEYS[1]  emq:{q}:pending    (zset)
KEYS[2]  emq:{q}:active     (zset) score = lease deadline, server ms
KEYS[3]  emq:{q}:config     (hash) the queue's settings, read by the gate
KEYS[4]  emq:{q}:rate       (zset) the claim log of a rate-limited queue:
                            <id>:<token> by claim time, server ms
KEYS[5]  emq:{q}:policy     (hash) id -> the job's own policy, if it has one
KEYS[6]  emq:{q}:events     (stream) the event log (includes/events),
                            an `active` event per claimed job
KEYS[7]  emq:{q}:headers    (hash) id -> the job's headers
KEYS[8]  emq:{q}:wake       (zset) the wake-up key
                            (includes/wake), told again when the claim took
                            all it asked for and pending still holds jobs
ARGV[1]  lease, ms          1..=2147483647
ARGV[2..] options:
         COUNT <n>          1..=1000, default 1
         BLOCK <ms>         native only (EMQ.CLAIM): the script refuses it
Derived  emq:{q}:job:<id>   the record of each popped id: the prefix of KEYS[1]
                            with job:<id>, so the same hashtag and slot.
Reply    an array of claimed jobs in pending order (priority, then id), each
         [id, token, payload], or [id, token, payload, policy] for a job
         with a policy of its own (its text, as ENQUEUE stored it), or
         [id, token, payload, policy or nil, headers] for a job with headers
         (with KEYS[7]); empty when
         pending is empty. The token is the record's new attempts: each claim
         mints the next one.
         An id in pending whose record is missing is dropped, not claimed.
         The gate (includes/gate) lets at most its room through: none while
         the queue is paused (or under a timed pause, DEFER's), at most the concurrency limit minus the size of
         active, at most the rate minus the claims logged in the last period.
         When the queue is paused, or a limit held back jobs that pending
         still holds, one integer follows the jobs: -1 paused, 0 the
         concurrency limit, n > 0 ms to wait (the next rate slot, or the end
         of a timed pause). An idle queue answers [] whatever its limits. Under a rate, each claim is logged in KEYS[4], and the entries
         that left the window are trimmed.
Errors   EMQARG, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include claim

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

local names = {'pending', 'active', 'config', 'rate', 'policy', 'events', 'headers', 'wake'}
local prefix, err = queue_prefix(names)
if err then return err end
local lease
lease, err = integer(ARGV[1], 'lease', LEASE_MS_MIN, LEASE_MS_MAX)
if err then return err end
local opts
opts, err = options(2, {COUNT = {CLAIM_COUNT_MIN, CLAIM_COUNT_MAX}})
if err then return err end
local head
head, err = pending_head(KEYS[1], opts.COUNT or 1)
err = err or type_error(KEYS[2], 'zset')
if err then return err end
local keys = {pending = KEYS[1], active = KEYS[2], config = KEYS[3], rate = KEYS[4], policy = KEYS[5],
  events = KEYS[6] or false, headers = KEYS[7] or false, wake = KEYS[8] or false}
return claim_jobs(keys, prefix, lease, opts.COUNT or 1, head)
