--[[ REMOVE: delete chosen jobs of one state's set, an operator's choice:
their records, their set entries, and their priority, error, progress,
policy, result and header entries. An id not in the set is left alone.

KEYS[1]  emq:{q}:pending|active|delayed|done|dead|cancelled (zset) the set
KEYS[2]  emq:{q}:priority   (hash)
KEYS[3]  emq:{q}:errors     (hash)
KEYS[4]  emq:{q}:progress   (hash)
KEYS[5]  emq:{q}:policy     (hash)
KEYS[6]  emq:{q}:results    (hash)
KEYS[7]  emq:{q}:headers    (hash)
ARGV[1]  id: the first of one to 1000 job ids, then the others
Derived  emq:{q}:job:<id>   the record of each deleted id (same hashtag)
Reply    how many jobs were deleted
Errors   EMQARG, EMQKIND, EMQTYPE, TRYAGAIN
]]
--@include delete

--@keys REMOVE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local set_key = KEYS[1] -- pending|active|delayed|done|dead|cancelled: the one the call names
local priority_key = KEYS[2]
local errors_key = KEYS[3]
local progress_key = KEYS[4]
local policy_key = KEYS[5]
local results_key = KEYS[6]
local headers_key = KEYS[7]
local key_names = {'pending|active|delayed|done|dead|cancelled', 'priority', 'errors', 'progress', 'policy',
  'results', 'headers'}
local key_forms = {7}
--@keys end

local set, err = named_set({'pending', 'active', 'delayed', 'done', 'dead', 'cancelled'},
  'pending, active, delayed, done, dead or cancelled')
if err then return err end
local prefix
prefix, err = queue_prefix(deleting_keys(set))
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
err = deleting_types_error()
if err then return err end

-- The ids in the set, each once, in the order given.
local ids, seen = {}, {}
for _, id in ipairs(ARGV) do
  if not seen[id] and redis.call('ZSCORE', KEYS[1], id) then
    seen[id] = true
    ids[#ids + 1] = id
  end
end
return delete_jobs(prefix, ids)
