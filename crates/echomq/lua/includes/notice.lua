--[[ What a flow's child tells its parent (protocol 1.6, PROTOCOL.md §7.8;
the core's twin is `Notify` in crates/echomq-core/src/transition/notice.rs):
every transition that ends a job (to done, dead or cancelled, or deleted
unfinished) and finds its link in emq:{q}:parents writes a notice in the
child's own queue, emq:{q}:notices, in the same script, and drops the link,
but for a child that died and stays in the dead set (FAIL, REAP, RESOLVE):
a retry may run it again, and its next end tells its parent again (1.11).
The relay carries notices to the parent's queue (RESOLVE). No notice is lost
with a call that forgot the flows' keys: a call without them that would end
a linked job is refused, before its first write.

A link, as emq:{q}:parents holds it (child id -> link) and ENQUEUE's and
FLOW's PARENT give it: `<incarnation> {<queue>}<parent id>`. A job named
across queues, `{<queue>}<id>`: the queue's hashtag (1 to 255 bytes, no
brace, no NUL; its first `}` ends it), then the id.

A call passes the flows' keys as `parents` and `notices`, both or neither
(nil): notices_open_error checks them, parent_link reads a job's link
before any write (includes/one_link does both for one job, ACK's and
ACKNEXT's), tell_parent (tell_parent_died) writes the notice after every check.
]]
--@include link

-- The last check before the links are read: when the call passed the
-- flows' keys, `parents` must hold a hash and `notices` a stream (or
-- nothing).
local function notices_open_error(parents, notices)
  if parents then
    return type_error(parents, 'hash') or type_error(notices, 'stream')
  end
end

-- The link of job `id`, which the call is about to end: nil when it is no
-- flow's child (or its parent was told already). Read before any write: a
-- link that does not read as one is EMQDATA. A call without the flows' keys
-- (`parents` nil) looks in the queue's own emq:{q}:parents (a hash or
-- nothing: its read is its type check), and a linked job there refuses it
-- (EMQARG): no speaker ends a child and leaves its parent waiting for ever.
local function parent_link(parents, prefix, id)
  if not parents then
    local derived = prefix .. 'parents'
    local link = redis.pcall('HGET', derived, id)
    local err = read_error(link, derived, 'hash')
    if err then return nil, err end
    if link then
      return nil, emq_error('EMQARG', id .. ' has a parent: the call needs ' .. prefix .. 'parents and '
        .. prefix .. 'notices')
    end
    return nil
  end
  local link = redis.call('HGET', parents, id)
  if not link then return nil end
  if not read_link(link) then return nil, malformed(parents, id, 'a link') end
  return link
end

-- Tell the parent of job `id` of the queue at `prefix`, linked by `link`
-- (parent_link's), how its child ended (`done`, `dead`, `cancelled` or
-- `gone`), with the child's result when it kept one: the notice (no
-- MAXLEN: the notices are never trimmed, each waits for the relay), then
-- the link dropped. After every check. tell_parent_died: the notice `dead`
-- of a job that stays in the dead set, its link kept.
local function notice_parent(notices, prefix, id, link, outcome, result)
  local incarnation, parent = read_link(link)
  -- The child as the parent names it: the queue's hashtag, then its id.
  local child = string.sub(prefix, #'emq:' + 1, -2) .. id
  if result then
    redis.call('XADD', notices, '*', 'parent', parent, 'incarnation', incarnation, 'child', child,
      'outcome', outcome, 'result', result)
  else
    redis.call('XADD', notices, '*', 'parent', parent, 'incarnation', incarnation, 'child', child,
      'outcome', outcome)
  end
end

local function tell_parent(parents, notices, prefix, id, link, outcome, result)
  notice_parent(notices, prefix, id, link, outcome, result)
  redis.call('HDEL', parents, id)
end

local function tell_parent_died(notices, prefix, id, link)
  notice_parent(notices, prefix, id, link, 'dead')
end
