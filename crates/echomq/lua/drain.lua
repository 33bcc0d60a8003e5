--[[ DRAIN: delete unfinished jobs (pending, delayed or active), head first,
with their set entries and their priority, error, progress, policy, result
and header entries: an operator emptying a queue. A drained active job's holder is
fenced (its record is gone: EMQNOJOB).

KEYS[1]  emq:{q}:pending|delayed|active (zset) the set to drain
KEYS[2]  emq:{q}:priority   (hash)
KEYS[3]  emq:{q}:errors     (hash)
KEYS[4]  emq:{q}:progress   (hash)
KEYS[5]  emq:{q}:policy     (hash)
KEYS[6]  emq:{q}:results    (hash)
KEYS[7]  emq:{q}:headers    (hash)
ARGV[1..] options:
         LIMIT <n>          1..=1000, default 1000: at most this many jobs
Derived  emq:{q}:job:<id>   the record of each drained id (same hashtag)
Reply    how many jobs were deleted; call again while it is LIMIT
Errors   EMQARG, EMQTYPE
]]
--@include delete

--@keys DRAIN's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local set_key = KEYS[1] -- pending|delayed|active: the one the call names
local priority_key = KEYS[2]
local errors_key = KEYS[3]
local progress_key = KEYS[4]
local policy_key = KEYS[5]
local results_key = KEYS[6]
local headers_key = KEYS[7]
local key_names = {'pending|delayed|active', 'priority', 'errors', 'progress', 'policy', 'results', 'headers'}
local key_forms = {7}
--@keys end

local set, err = named_set({'pending', 'delayed', 'active'}, 'pending, delayed or active')
if err then return err end
local prefix
prefix, err = queue_prefix(deleting_keys(set))
if err then return err end
local opts
opts, err = options(1, {LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
err = deleting_types_error()
if err then return err end

return delete_jobs(prefix, redis.call('ZRANGE', KEYS[1], 0, (opts.LIMIT or SWEEP_LIMIT_MAX) - 1))
