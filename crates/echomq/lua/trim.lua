--[[ TRIM: bounded retention, run by every worker as upkeep. Deletes the
oldest finished jobs of one state that are past the queue's age for it, or
beyond its count, as PURGE deletes them: records, set entries, and their
priority, error, progress, policy, result and header entries, and a parent's
dependencies; a flow's child still linked tells its parent how it ended.

set_key       emq:{q}:done|dead|cancelled (zset) the finished set to trim
priority_key  emq:{q}:priority   (hash)
errors_key    emq:{q}:errors     (hash)
progress_key  emq:{q}:progress   (hash)
policy_key    emq:{q}:policy     (hash)
results_key   emq:{q}:results    (hash)
headers_key   emq:{q}:headers    (hash)
config_key    emq:{q}:config     (hash) <state>_age and <state>_count, each 0 for
                                 no bound; unset: done a day and 10000, dead 30
                                 days and 100000, cancelled a day and 10000
parents_key   emq:{q}:parents    (hash) optional, with notices_key: child id -> its link
notices_key   emq:{q}:notices    (stream) a linked job deleted tells its parent (includes/notice)
ARGV[1..] options:
         LIMIT <n>          1..=1000, default 1000: at most this many jobs
Derived  emq:{q}:job:<id>   the record of each deleted id (same hashtag)
         emq:{q}:children:<id> its dependencies, when it is a parent
         emq:{q}:parents    (hash) without the flows' keys: a linked job refuses the call
Reply    how many jobs were deleted; call again while it is LIMIT
Errors   EMQARG (also: a flow's child without the flows' keys), EMQTYPE, EMQVERSION, EMQDATA, TRYAGAIN
]]
--@include delete
--@include retention
--@include options

--@keys TRIM's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local set_key = KEYS[1]      -- done|dead|cancelled: the one the call names
local priority_key = KEYS[2]
local errors_key = KEYS[3]
local progress_key = KEYS[4]
local policy_key = KEYS[5]
local results_key = KEYS[6]
local headers_key = KEYS[7]
local config_key = KEYS[8]
local parents_key = KEYS[9]  -- nil unless the call sends 10 keys
local notices_key = KEYS[10] -- nil unless the call sends 10 keys
local key_names = {'done|dead|cancelled', 'priority', 'errors', 'progress', 'policy', 'results', 'headers',
  'config', 'parents', 'notices'}
local key_forms = {8, 10}
--@keys end

local state, prefix, err = named_set_prefix(set_key, {'done', 'dead', 'cancelled'},
  'done, dead or cancelled', key_names, key_forms)
if err then return err end
local opts
opts, err = options(1, {LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
local sides = {priority_key, errors_key, progress_key, policy_key, results_key, headers_key}
err = deleting_types_error(set_key, sides) or type_error(config_key, 'hash')
  or notices_open_error(parents_key, notices_key)
if err then return err end

local kept
kept, err = retention(config_key, state)
if err then return err end
local limit = opts.LIMIT or SWEEP_LIMIT_MAX
-- The set is in finish order, so each bound cuts a prefix of it: the longer goes.
local past_age, past_count = 0, 0
if kept[1] > 0 then
  past_age = #redis.call('ZRANGEBYSCORE', set_key, '-inf', now_ms() - kept[1], 'LIMIT', 0, limit)
end
if kept[2] > 0 then
  past_count = math.max(redis.call('ZCARD', set_key) - kept[2], 0)
end
local going = math.min(math.max(past_age, past_count), limit)
if going == 0 then return 0 end
local deleting = {set = set_key, state = state, sides = sides, parents = parents_key, notices = notices_key}
return delete_jobs(prefix, deleting, redis.call('ZRANGE', set_key, 0, going - 1))
