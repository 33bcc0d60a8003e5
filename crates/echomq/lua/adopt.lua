--[[ ADOPT: the holder of the lease makes its job a parent of children it
names, and the job waits for them (protocol 1.6, PROTOCOL.md §7.8). The
children are enqueued after it, each in its own queue, with a link to the
incarnation it answers (ENQUEUE's or FLOW's PARENT), as a flow's are; their
notices then resolve it as they resolve a FLOW's parent. The attempt is not
spent: the job runs again once its children have ended, and a handler that
names the same children again (they have ended) goes on.

job_key       emq:{q}:job:<id>   the record (hash), from `active` to `waiting`
children_key  emq:{q}:children:<id> (hash) its dependencies: `incarnation`, `open`,
                                 `children`, and each child -> `open <on_failure>`
active_key    emq:{q}:active     (zset)
waiting_key   emq:{q}:waiting    (zset) the parents waiting, by when they began to wait
policy_key    emq:{q}:policy     (hash) the job's own ATTEMPTS grow by one
events_key    emq:{q}:events     (stream) the event log,
config_key    emq:{q}:config     (hash) an `adopted` event (includes/events)
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
ARGV[3]  max_attempts: 0..=2147483647: the caller's, for a job with no ATTEMPTS
ARGV[4]  children: n, 1..=1000: how many children follow
ARGV[5]  child: the first child, `{<queue>}<id>` (its id JOB-namespaced; each child once;
         a child the job has an entry for already keeps it)
ARGV[6]  on_failure: `fail`, `ignore` or `continue`, as FLOW's
ARGV[7..] the other children, each a child and its on_failure; nothing after them
Reply    {1, incarnation, children}: the job waits; the children given that are open (an
         array, in the order given), for the holder to enqueue. {0, incarnation, {}}: none
         of its children is open (each given had ended): nothing changed, the holder goes on
Errors   EMQKIND (the id or a child's), EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE, EMQSIZE,
         EMQVERSION, EMQDATA
]]
--@include fenced
--@include policy
--@include events
--@include forget
--@include dependencies
--@include policy_text

--@keys ADOPT's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local children_key = KEYS[2]
local active_key = KEYS[3]
local waiting_key = KEYS[4]
local policy_key = KEYS[5]
local events_key = KEYS[6]
local config_key = KEYS[7]
local key_names = {'job', 'children', 'active', 'waiting', 'policy', 'events', 'config'}
local key_forms = {7}
--@keys end

local id, token, err = fenced_call(key_names, key_forms)
if err then return err end
local max_attempts, n
max_attempts, err = integer(ARGV[3], 'max_attempts', MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX)
if err then return err end
n, err = integer(ARGV[4], 'children', FLOW_CHILDREN_MIN, FLOW_CHILDREN_MAX)
if err then return err end
local own = string.sub(job_key, 5, string.find(job_key, '}', 1, true)) .. id
local children, entries
children, entries, err = read_dependencies(5, n, own)
if err then return err end
if #ARGV > 4 + 2 * n then return emq_error('EMQARG', 'ADOPT takes no option after its children') end
err = type_error(children_key, 'hash') or type_error(active_key, 'zset') or type_error(waiting_key, 'zset')
  or type_error(policy_key, 'hash') or fence_error(job_key, token)
if err then return err end

-- Everything read, checked before the first write: the policy, the
-- dependencies so far, then the events keys.
local policy
policy, err = policy_of(policy_key, id)
if err then return err end
policy = policy or {}
local read = redis.call('HMGET', children_key, 'incarnation', 'open', 'children', unpack(children))
local incarnation, open, total = read[1], 0, 0
if read[1] or read[2] or read[3] then
  local numbers = {}
  for at, field in ipairs({'incarnation', 'open', 'children'}) do
    if not read[at] then return emq_error('EMQDATA', children_key .. ' ' .. field .. ' is missing') end
    numbers[at], err = stored(read[at], children_key, field)
    if err then return err end
    if numbers[at] < 0 then
      return emq_error('EMQDATA', children_key .. ' ' .. field .. ' is not an integer of 0 or more')
    end
  end
  incarnation, open, total = string.format('%d', numbers[1]), numbers[2], numbers[3]
end
-- The children new to the job, with their entries; and the children given
-- that are open once they are added, for the holder to enqueue: those, and
-- those added before that have not ended (one whose enqueue an earlier run
-- never made).
local added, open_children = {}, {}
for at = 1, n do
  local entry = read[3 + at]
  if not entry then
    added[#added + 1] = children[at]
    added[#added + 1] = entries[at]
  end
  if not entry or string.sub(entry, 1, 5) == 'open ' then
    open_children[#open_children + 1] = children[at]
  end
end
local new = #added / 2
if total + new > FLOW_CHILDREN_MAX then
  return emq_error('EMQSIZE', string.format('a parent has at most %d children: %s has %d, %d more given',
    FLOW_CHILDREN_MAX, id, total, new))
end
local now = now_ms()
incarnation = incarnation or string.format('%d', now)
if open + new == 0 then return {0, incarnation, {}} end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end

local G, group
G, err = grouping(string.sub(active_key, 1, #active_key - #'active'))
if G then group, err = G.job_group(string.sub(active_key, 1, #active_key - #'active'), id) end
if err then return err end
open = string.format('%d', open + new)
redis.call('HSET', children_key, 'incarnation', incarnation, 'open', open, 'children',
  string.format('%d', total + new), unpack(added))
redis.call('ZREM', active_key, id)
if group then G.off_active(string.sub(active_key, 1, #active_key - #'active'), id, group, false) end
redis.call('HSET', job_key, 'state', 'waiting')
redis.call('ZADD', waiting_key, now, id)
-- The attempt is given back, as DEFER gives it: the job's own maximum grows by one.
policy.ATTEMPTS = math.min((policy.ATTEMPTS or max_attempts) + 1, MAX_ATTEMPTS_MAX)
redis.call('HSET', policy_key, id, policy_text(policy))
emit(events_key, keep, 'adopted', id, 'children', string.format('%d', new), 'open', open)
return {1, incarnation, open_children}
