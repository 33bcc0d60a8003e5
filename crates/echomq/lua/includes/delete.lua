--[[ Deleting jobs, shared by PURGE and DRAIN: KEYS[1] is the set the ids are
in, KEYS[2..5] the side hashes (priority, errors, progress, policy). The
order of writes is the core's `delete_jobs`
(crates/echomq-core/src/transition/upkeep.rs).
]]
--@include record

-- The set KEYS[1] names by the last word of its name, one of `names`, or an
-- error that says which it must be (`must`).
local function named_set(names, must)
  local set = string.match(KEYS[1] or '', ':(%a+)$')
  for _, name in ipairs(names) do
    if set == name then return set end
  end
  return nil, emq_error('EMQARG', 'KEYS[1] must be emq:{<queue>}:' .. must)
end

-- Delete the jobs `ids` of KEYS[1], their side entries and their records;
-- every record is checked first, so a refusal writes nothing. How many.
local function delete_jobs(prefix, ids)
  if #ids == 0 then return 0 end
  for _, id in ipairs(ids) do
    local err = elsewhere_error(prefix .. 'job:' .. id) or type_error(prefix .. 'job:' .. id, 'hash')
    if err then return err end
  end
  redis.call('ZREM', KEYS[1], unpack(ids))
  for i = 2, 5 do
    redis.call('HDEL', KEYS[i], unpack(ids))
  end
  for _, id in ipairs(ids) do
    redis.call('DEL', prefix .. 'job:' .. id)
  end
  return #ids
end
