--[[ RESOLVE: a parent hears how one of its children ended (protocol 1.6,
PROTOCOL.md §7.8). The relay sends it for each notice of the child's queue
(includes/notice); it applies a notice once per (parent, incarnation,
child), so a notice sent twice, late, or after the parent was done or
cancelled changes nothing. The child's end is recorded in the parent's
dependencies, and the parent, while it waits, is pending when none is left
open (or at once, for a child it continues after), dead for a child it
fails with; a parent that runs already (pending, active or delayed: a child
it continued after ended, or it was retried) or is dead (a retry may run it
again, 1.11) only records it. A child recorded dead whose notice says done
(it was retried) is recorded done, the open count as it was (1.11).

job_key       emq:{q}:job:<id>   the parent's record (hash)
children_key  emq:{q}:children:<id> (hash) its dependencies (FLOW's): the child's
                                 `open <on_failure>` becomes its outcome, `open` one less,
                                 and `result:<child>` keeps a done child's RESULT
waiting_key   emq:{q}:waiting    (zset) the parents waiting for their children
pending_key   emq:{q}:pending    (zset) a parent ready, at its priority
priority_key  emq:{q}:priority   (hash)
dead_key      emq:{q}:dead       (zset) a parent a child failed
errors_key    emq:{q}:errors     (hash) its error: `child <child> <outcome>`
parents_key   emq:{q}:parents    (hash) the parent's own link, when it is a child too: a
notices_key   emq:{q}:notices    (stream) parent that dies tells its own (includes/notice)
events_key    emq:{q}:events     (stream) the event log: a `resolved` event (child,
config_key    emq:{q}:config     (hash) outcome, open, state after), and `dead` for a parent failed
wake_key      emq:{q}:wake       (zset) the wake-up key (includes/wake), told when it is pending
counts_key    emq:{q}:counts     (hash) the queue's counters (includes/events)
ARGV[1]  id: the parent's id
ARGV[2]  incarnation: 0..=999999999999999, as the child's link names it
ARGV[3]  child: `{<queue>}<id>`, as the parent's dependencies name it
ARGV[4]  outcome: done, dead, cancelled or gone
ARGV[5..] options:
         RESULT <bytes>     0 to 1048576 bytes: a done child's result, kept in children_key
Reply    1 recorded; 0 and no change for a parent that is gone, done or cancelled, of
         another incarnation, or told of this child already
Errors   EMQKIND (the id or the child's), EMQARG, EMQSIZE, EMQTYPE, EMQVERSION, EMQDATA (the
         record, the dependencies' `open` or the child's entry, the parent's own link, its
         priority, or a setting), TRYAGAIN
]]
--@include record
--@include wake
--@include ack
--@include notice
--@include forget
--@include trailing_keys
--@include event_error
--@include pending

--@keys RESOLVE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local children_key = KEYS[2]
local waiting_key = KEYS[3]
local pending_key = KEYS[4]
local priority_key = KEYS[5]
local dead_key = KEYS[6]
local errors_key = KEYS[7]
local parents_key = KEYS[8]
local notices_key = KEYS[9]
local events_key = KEYS[10]
local config_key = KEYS[11]
local wake_key = KEYS[12]
local counts_key = KEYS[13]
local key_names = {'job', 'children', 'waiting', 'pending', 'priority', 'dead', 'errors', 'parents',
  'notices', 'events', 'config', 'wake', 'counts'}
local key_forms = {13}
--@keys end

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
local prefix
prefix, err = queue_prefix(key_names, id, key_forms)
if err then return err end
local incarnation
incarnation, err = integer(ARGV[2], 'incarnation', INCARNATION_MIN, INCARNATION_MAX)
if err then return err end
local child = ARGV[3] or ''
local _, child_id = split_job_ref(child)
if not child_id then
  return emq_error('EMQARG', 'child must be {<queue>}<id>, not ' .. child)
end
err = kind_error(child_id)
if err then return err end
-- How the child ended, as its notice says.
local OUTCOMES = {done = true, dead = true, cancelled = true, gone = true}
local outcome = ARGV[4]
if not OUTCOMES[outcome] then
  return emq_error('EMQARG', 'outcome must be done, dead, cancelled or gone')
end
local result
local i = 5
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'RESULT' then
    return emq_error('EMQARG', 'unknown option ' .. ARGV[i])
  end
  result, err = ack_result(result, ARGV[i + 1])
  if err then return err end
  i = i + 2
end

err = type_error(children_key, 'hash') or type_error(waiting_key, 'zset') or type_error(pending_key, 'zset')
  or type_error(priority_key, 'hash') or type_error(dead_key, 'zset') or type_error(errors_key, 'hash')
if err then return err end
local fields
fields, err = read_record(job_key, 'state', 'attempts')
if err then return err end
local state, attempts = fields[1], nil
-- Its attempts, for a `dead` event (none: 0), checked whatever its state.
attempts, err = attempts_of(job_key, fields[2])
if err then return err end
-- A parent gone, done or cancelled hears nothing; one that runs already (a
-- child it continued after ended, or it was retried) or is dead (a retry
-- may run it again) only records its children's ends.
local waits = state == 'waiting'
if not waits and state ~= 'pending' and state ~= 'active' and state ~= 'delayed' and state ~= 'dead' then
  return 0
end
local read = redis.call('HMGET', children_key, 'incarnation', 'open', child)
local incarnation_read, open, dependency = read[1], read[2], read[3]
local stored_incarnation
stored_incarnation, err = stored(incarnation_read, children_key, 'incarnation')
if err then return err end
-- Another incarnation's notice, or a child it does not wait on, or one it
-- was told of already (its entry is its outcome), changes nothing.
if stored_incarnation ~= incarnation or not dependency then return 0 end
-- An open child's entry is `open <on_failure>` (FLOW's).
local on_failure = string.sub(dependency, 1, 5) == 'open ' and string.sub(dependency, 6)
-- A child that died, retried and done now: it was counted as ended.
local redone = dependency == 'dead' and outcome == 'done'
if not on_failure and not redone then
  if OUTCOMES[dependency] then return 0 end
  return malformed(children_key, child, 'a dependency')
end
if on_failure and on_failure ~= 'fail' and on_failure ~= 'ignore' and on_failure ~= 'continue' then
  return malformed(children_key, child, 'a dependency')
end
open, err = stored(open, children_key, 'open')
if err then return err end
if redone then
  if not open or open < 0 then return malformed(children_key, 'open', 'an integer of 0 or more') end
else
  if not open or open < 1 then return malformed(children_key, 'open', 'an integer of 1 or more') end
  open = open - 1
end

-- What the notice does to the parent: it waits (on), is ready, or dies.
local failed = outcome ~= 'done'
local after = state
if waits and not redone then
  if failed and on_failure == 'fail' then
    after = 'dead'
  elseif (failed and on_failure == 'continue') or open == 0 then
    after = 'pending'
  end
end
-- It dies of this child (a parent dead already only records it).
local dies = waits and after == 'dead'
local score = 0
if after == 'pending' and waits then
  score, err = priority_of(priority_key, id)
  if err then return err end
end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key, counts_key, {'dead'})
if err then return err end
local link
err = notices_open_error(parents_key, notices_key)
if err then return err end
if dies then
  link, err = parent_link(parents_key, prefix, id)
  if err then return err end
end
local G, group
G, err = grouping(prefix)
if G then group, err = G.job_group(prefix, id) end
if err then return err end

local open_text = string.format('%d', open)
if result and not failed then
  redis.call('HSET', children_key, child, outcome, 'open', open_text, 'result:' .. child, result)
else
  redis.call('HSET', children_key, child, outcome, 'open', open_text)
end
local now = now_ms()
if waits and after ~= 'waiting' then
  redis.call('ZREM', waiting_key, id)
  if after == 'pending' then
    to_pending(job_key, pending_key, score, id, G, prefix, group)
    wake(wakes)
  else
    redis.call('HSET', job_key, 'state', after)
    redis.call('ZADD', dead_key, now, id)
  end
end
emit(events_key, keep, 'resolved', id, 'child', child, 'outcome', outcome, 'open', open_text, 'state', after)
if dies then
  local text = 'child ' .. child .. ' ' .. outcome
  redis.call('HSET', errors_key, id, text)
  emit(events_key, keep, 'dead', id, 'attempt', string.format('%d', attempts or 0), 'error', event_error(text))
  if link then tell_parent_died(notices_key, prefix, id, link) end
end
return 1
