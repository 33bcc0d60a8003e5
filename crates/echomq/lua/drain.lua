--[[ DRAIN: delete unfinished jobs (pending, delayed, active or waiting),
head first, with their set entries and their priority, error, progress,
policy, result and header entries, and a parent's dependencies: an operator
emptying a queue. A drained active job's holder is fenced (its record is
gone: EMQNOJOB). A flow's child tells its parent it is `gone`.

set_key       emq:{q}:pending|delayed|active|waiting (zset) the set to drain
priority_key  emq:{q}:priority   (hash)
errors_key    emq:{q}:errors     (hash)
progress_key  emq:{q}:progress   (hash)
policy_key    emq:{q}:policy     (hash)
results_key   emq:{q}:results    (hash)
headers_key   emq:{q}:headers    (hash)
parents_key   emq:{q}:parents    (hash) optional, with notices_key: child id -> its link
notices_key   emq:{q}:notices    (stream) a linked job deleted tells its parent (includes/notice)
ARGV[1..] options:
         LIMIT <n>          1..=1000, default 1000: at most this many jobs
Derived  emq:{q}:job:<id>   the record of each drained id (same hashtag)
         emq:{q}:children:<id> its dependencies, when it is a parent
         emq:{q}:parents    (hash) without the flows' keys: a linked job refuses the call
Reply    how many jobs were deleted; call again while it is LIMIT
Errors   EMQARG (also: a flow's child without the flows' keys), EMQTYPE, EMQDATA (a link), TRYAGAIN
]]
--@include delete
--@include options

--@keys DRAIN's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local set_key = KEYS[1]     -- pending|delayed|active|waiting: the one the call names
local priority_key = KEYS[2]
local errors_key = KEYS[3]
local progress_key = KEYS[4]
local policy_key = KEYS[5]
local results_key = KEYS[6]
local headers_key = KEYS[7]
local parents_key = KEYS[8] -- nil unless the call sends 9 keys
local notices_key = KEYS[9] -- nil unless the call sends 9 keys
local key_names = {'pending|delayed|active|waiting', 'priority', 'errors', 'progress', 'policy', 'results',
  'headers', 'parents', 'notices'}
local key_forms = {7, 9}
--@keys end

local set, prefix, err = named_set_prefix(set_key, {'pending', 'delayed', 'active', 'waiting'},
  'pending, delayed, active or waiting', key_names, key_forms)
if err then return err end
local opts
opts, err = options(1, {LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
local sides = {priority_key, errors_key, progress_key, policy_key, results_key, headers_key}
err = deleting_types_error(set_key, sides) or notices_open_error(parents_key, notices_key)
if err then return err end

local ids = redis.call('ZRANGE', set_key, 0, (opts.LIMIT or SWEEP_LIMIT_MAX) - 1)
return delete_jobs(prefix, {set = set_key, state = set, sides = sides, parents = parents_key,
  notices = notices_key}, ids)
