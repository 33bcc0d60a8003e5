--[[ Deleting jobs, shared by PURGE, TRIM, DRAIN and REMOVE. What a call
deletes from, `deleting` (the core's `Deleting`): `set`, the state set the
ids are in (the call's first key, named by the call), and `state`, its name;
`sides`, the side hashes of its next keys (priority, errors, progress,
policy, results, headers); `parents` and `notices`, the flows' keys when the
call passed them (protocol 1.6, includes/notice). The order of writes is
the core's `delete_jobs` (crates/echomq-core/src/transition/delete.rs).
]]
--@include record
--@include notice
--@include forget

-- The set the call's first key, `key`, names by the last word of its name,
-- one of `names`, or an error that says which it must be (`must`).
local function named_set(key, names, must)
  local set = string.match(key or '', ':(%a+)$')
  for _, name in ipairs(names) do
    if set == name then return set end
  end
  return nil, emq_error('EMQARG', 'KEYS[1] must be emq:{<queue>}:' .. must)
end

-- The set the call's first key names (see named_set), and the queue's
-- prefix: the call's KEYS checked (queue_prefix) with that set standing for
-- the first key's role in `key_names`.
local function named_set_prefix(key, names, must, key_names, key_forms)
  local set, err = named_set(key, names, must)
  if err then return nil, nil, err end
  key_names[1] = set
  local prefix
  prefix, err = queue_prefix(key_names, nil, key_forms)
  return set, prefix, err
end

-- `set` must be a zset and each of `sides` a hash (or missing).
local function deleting_types_error(set, sides)
  local err = type_error(set, 'zset')
  for _, side in ipairs(sides) do
    err = err or type_error(side, 'hash')
  end
  return err
end

-- Delete the jobs `ids` of `deleting.set`: their entries in it and in the
-- side hashes, their records and (a parent's) dependencies,
-- emq:{q}:children:<id>; a job a parent waits on tells it, `gone` from an
-- unfinished set, its state from a finished one. Every record and link is
-- checked first, so a refusal writes nothing. How many.
local function delete_jobs(prefix, deleting, ids)
  if #ids == 0 then return 0 end
  for _, id in ipairs(ids) do
    local err = elsewhere_error(prefix .. 'job:' .. id) or type_error(prefix .. 'job:' .. id, 'hash')
    if err then return err end
  end
  local parents, notices = deleting.parents, deleting.notices
  local links = {}
  for i, id in ipairs(ids) do
    local err
    links[i], err = parent_link(parents, prefix, id)
    if err then return err end
  end
  local G, err = grouping(prefix)
  local groups
  if G then groups, err = G.jobs_groups(prefix, ids) end
  if err then return err end
  redis.call('ZREM', deleting.set, unpack(ids))
  if groups then
    for i, id in ipairs(ids) do
      local group = groups[i]
      if group then
        if deleting.state == 'pending' then
          G.off_pending(prefix, id, group)
        elseif deleting.state == 'active' then
          G.off_active(prefix, id, group, false)
        end
        redis.call('HDEL', prefix .. 'group', id)
      end
    end
  end
  for _, side in ipairs(deleting.sides) do
    redis.call('HDEL', side, unpack(ids))
  end
  for _, id in ipairs(ids) do
    redis.call('DEL', prefix .. 'job:' .. id)
  end
  for _, id in ipairs(ids) do
    redis.call('DEL', prefix .. 'children:' .. id)
  end
  local state = deleting.state
  local outcome = (state == 'done' or state == 'dead' or state == 'cancelled') and state or 'gone'
  for i, id in ipairs(ids) do
    if links[i] then tell_parent(parents, notices, prefix, id, links[i], outcome) end
  end
  return #ids
end
