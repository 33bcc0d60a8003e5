--[[ REMOVE: delete chosen jobs of one state's set, an operator's choice:
their records, their set entries, and their priority, error, progress,
policy, result and header entries, and a parent's dependencies. An id not
in the set is left alone. A flow's child still linked tells its parent
(`gone` from an unfinished set, else the set's state).

set_key       emq:{q}:pending|active|delayed|done|dead|cancelled|waiting (zset) the set
priority_key  emq:{q}:priority   (hash)
errors_key    emq:{q}:errors     (hash)
progress_key  emq:{q}:progress   (hash)
policy_key    emq:{q}:policy     (hash)
results_key   emq:{q}:results    (hash)
headers_key   emq:{q}:headers    (hash)
parents_key   emq:{q}:parents    (hash) optional, with notices_key: child id -> its link
notices_key   emq:{q}:notices    (stream) a linked job deleted tells its parent (includes/notice)
ARGV[1]  id: the first of one to 1000 job ids, then the others
Derived  emq:{q}:job:<id>   the record of each deleted id (same hashtag)
         emq:{q}:children:<id> its dependencies, when it is a parent
         emq:{q}:parents    (hash) without the flows' keys: a linked job refuses the call
Reply    how many jobs were deleted
Errors   EMQARG (also: a flow's child without the flows' keys), EMQKIND, EMQTYPE, EMQDATA, TRYAGAIN
]]
--@include delete

--@keys REMOVE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local set_key = KEYS[1]     -- pending|active|delayed|done|dead|cancelled|waiting: the one the call names
local priority_key = KEYS[2]
local errors_key = KEYS[3]
local progress_key = KEYS[4]
local policy_key = KEYS[5]
local results_key = KEYS[6]
local headers_key = KEYS[7]
local parents_key = KEYS[8] -- nil unless the call sends 9 keys
local notices_key = KEYS[9] -- nil unless the call sends 9 keys
local key_names = {'pending|active|delayed|done|dead|cancelled|waiting', 'priority', 'errors', 'progress',
  'policy', 'results', 'headers', 'parents', 'notices'}
local key_forms = {7, 9}
--@keys end

local set, err = named_set(set_key, {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled', 'waiting'},
  'pending, active, delayed, done, dead, cancelled or waiting')
if err then return err end
-- The set it names stands for its key's role, any of the seven.
key_names[1] = set
local prefix
prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
if #ARGV > SWEEP_LIMIT_MAX then
  return emq_error('EMQARG', 'at most ' .. SWEEP_LIMIT_MAX .. ' jobs a call')
end
err = kind_error(ARGV[1])
if err then return err end
for i = 2, #ARGV do
  err = kind_error(ARGV[i])
  if err then return err end
end
local sides = {priority_key, errors_key, progress_key, policy_key, results_key, headers_key}
err = deleting_types_error(set_key, sides) or notices_open_error(parents_key, notices_key)
if err then return err end

-- The ids in the set, each once, in the order given.
local ids, seen = {}, {}
for _, id in ipairs(ARGV) do
  if not seen[id] and redis.call('ZSCORE', set_key, id) then
    seen[id] = true
    ids[#ids + 1] = id
  end
end
return delete_jobs(prefix, {set = set_key, state = set, sides = sides, parents = parents_key,
  notices = notices_key}, ids)
