--[[ FLOW: a parent job that waits for its children (protocol 1.6, PROTOCOL.md
§7.8). The parent is written first, `waiting`, with its open dependencies
and an incarnation (the server's now, which its children's links name); its
children are then enqueued, each in its own queue, with a link to it
(ENQUEUE's or FLOW's PARENT). Each child that ends tells it, through its
queue's notices and the relay (RESOLVE): it is pending once none is left
open, or at once for a child it continues after; dead for one it fails with.

job_key       emq:{q}:job:<id>   the parent's record (hash), born `waiting`
children_key  emq:{q}:children:<id> (hash) its dependencies: `incarnation`, `open` (how
                                 many children are open), `children` (how many in all),
                                 and each child -> `open <on_failure>`
waiting_key   emq:{q}:waiting    (zset) the parents waiting, by when they began to wait
priority_key  emq:{q}:priority   (hash) id -> PRIORITY, when not 0: its priority once pending
policy_key    emq:{q}:policy     (hash) id -> the job's own policy (includes/policy)
headers_key   emq:{q}:headers    (hash) id -> HEADERS
parents_key   emq:{q}:parents    (hash) id -> PARENT, its own link when it is a child too
events_key    emq:{q}:events     (stream) the event log,
config_key    emq:{q}:config     (hash) an `enqueued` event (includes/events)
counts_key    emq:{q}:counts     (hash) the queue's counters (includes/events)
ARGV[1]  id: the parent's id
ARGV[2]  payload: stored verbatim, at most MAX_PAYLOAD (1048576) bytes
ARGV[3]  children: n, 1..=1000: how many children follow
ARGV[4]  child: the first child, `{<queue>}<id>` (its id JOB-namespaced; each child once)
ARGV[5]  on_failure: what the parent does when that child ends otherwise than done (dead,
         cancelled or gone): `fail` (it dies), `ignore` (it waits on for the others)
         or `continue` (it is pending at once)
ARGV[6..] the other children, each a child and its on_failure; then options, ENQUEUE's
         (includes/given) but for DELAY, AT, UNIQUE, UNIQUE_FOR and UNIQUE_DONE:
         PRIORITY <int>       -2147483648..=2147483647, default 0: once pending
         ATTEMPTS <n>         the job's own policy, as ENQUEUE's
         BACKOFF <ms>
         BACKOFF_EXP <ms>
         TIMEOUT <ms>
         HEADERS <bytes>      1 to 8192 bytes, kept in headers_key
         PARENT <link>        `<incarnation> {<queue>}<id>`: the parent is a child too
         GROUP <g>            1 to 200 bytes: the parent's group, which it joins once its
                              children end (1.7, includes/grouping)
Reply    [1, incarnation]: written. A record that exists changes nothing:
         [0, incarnation] when it is a parent, [0] when it is not
Errors   EMQKIND (the id or a child's), EMQARG, EMQSIZE, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include payload
--@include events
--@include grouping
--@include given
--@include counts
--@include dependencies

--@keys FLOW's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local children_key = KEYS[2]
local waiting_key = KEYS[3]
local priority_key = KEYS[4]
local policy_key = KEYS[5]
local headers_key = KEYS[6]
local parents_key = KEYS[7]
local events_key = KEYS[8]
local config_key = KEYS[9]
local counts_key = KEYS[10]
local key_names = {'job', 'children', 'waiting', 'priority', 'policy', 'headers', 'parents', 'events',
  'config', 'counts'}
local key_forms = {10}
--@keys end

-- The call: the id's kind, the keys, the payload, the children, the options.
local id, payload = ARGV[1], ARGV[2]
local err = kind_error(id)
if err then return err end
local prefix
prefix, err = queue_prefix(key_names, id, key_forms)
if err then return err end
-- The parent as its children name it: `{<queue>}<id>`.
local own = string.sub(prefix, 5, -2) .. id
err = payload_error(payload)
if err then return err end
local n
n, err = integer(ARGV[3], 'children', FLOW_CHILDREN_MIN, FLOW_CHILDREN_MAX)
if err then return err end
-- Each child, `{<queue>}<id>` and what its end other than done does to the
-- parent, in the order given.
local children, entries
children, entries, err = read_dependencies(4, n, own)
if err then return err end
local dependencies = {}
for at = 1, n do
  dependencies[2 * at - 1], dependencies[2 * at] = children[at], entries[at]
end
local opts, policy
opts, policy, err = given_options(4 + 2 * n)
if err then return err end
if opts.DELAY or opts.AT or opts.UNIQUE or opts.UNIQUE_FOR or opts.UNIQUE_DONE then
  return emq_error('EMQARG', 'FLOW takes no DELAY, AT, UNIQUE, UNIQUE_FOR or UNIQUE_DONE')
end
if opts.BACKOFF and opts.BACKOFF_EXP then
  return emq_error('EMQARG', 'BACKOFF and BACKOFF_EXP exclude each other')
end
local priority = opts.PRIORITY or 0

-- Idempotent: a record that exists changes nothing; a parent answers the
-- incarnation its children's links name.
err = type_error(job_key, 'hash')
if err then return err end
if redis.call('EXISTS', job_key) == 1 then
  err = type_error(children_key, 'hash')
  if err then return err end
  local incarnation = redis.call('HGET', children_key, 'incarnation')
  if incarnation then return {0, incarnation} end
  return {0}
end
err = type_error(children_key, 'hash') or type_error(waiting_key, 'zset') or type_error(priority_key, 'hash')
  or type_error(policy_key, 'hash') or type_error(headers_key, 'hash') or type_error(parents_key, 'hash')
if err then return err end
if opts.GROUP then
  err = group_lib().check(prefix)
  if err then return err end
  _, err = group_lib().settings(prefix, opts.GROUP)
  if err then return err end
end
local keep
keep, err = events_keep(events_key, config_key)
if err then return err end
err = counts_open(counts_key, {'enqueued'})
if err then return err end

-- The parent, waiting, and its dependencies, stamped with its incarnation.
local incarnation = string.format('%d', now_ms())
redis.call('HSET', job_key, 'state', 'waiting', 'attempts', '0', 'payload', payload)
if opts.GROUP then
  redis.call('HSET', prefix .. 'group', id, opts.GROUP)
end
redis.call('HSET', children_key, 'incarnation', incarnation, 'open', string.format('%d', n), 'children',
  string.format('%d', n), unpack(dependencies))
redis.call('ZADD', waiting_key, incarnation, id)
if priority ~= 0 then
  redis.call('HSET', priority_key, id, priority)
end
if policy then
  redis.call('HSET', policy_key, id, policy)
end
if opts.HEADERS then
  redis.call('HSET', headers_key, id, opts.HEADERS)
end
if opts.PARENT then
  redis.call('HSET', parents_key, id, opts.PARENT)
end
emit(events_key, keep, 'enqueued', id, 'state', 'waiting')
return {1, incarnation}
