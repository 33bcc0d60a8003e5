--[[ Forgetting a group (protocol 1.7, PROTOCOL.md §7.9; the core's twin is
`tidy` in crates/echomq-core/src/transition/grouping.rs): a group with
nothing pending, nothing running and no settings leaves <q>gnames, its tag
and its rate log. Included by every script that can empty a group, after
includes/grouping, whose group_reindex calls it; a producer's scripts
(ENQUEUE, ENQUEUEMANY, FLOW) only add jobs and leave it out.
]]
--@include grouping

group_forget = function(prefix, group)
  redis.call('ZREM', prefix .. 'gnames', group)
  redis.call('HDEL', prefix .. 'groups', 'tag:' .. group)
  redis.call('DEL', prefix .. 'grate:' .. group)
end
