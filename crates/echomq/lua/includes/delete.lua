--[[ Deleting jobs, shared by PURGE, TRIM and DRAIN: KEYS[1] is the set the
ids are in, KEYS[2..7] the side hashes (priority, errors, progress, policy,
results, headers). The
order of writes is the core's `delete_jobs`
(crates/echomq-core/src/transition/delete.rs).
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

-- The side hashes, KEYS[2..7], by name: the keys after KEYS[1] that
-- queue_prefix checks.
local SIDES = {'priority', 'errors', 'progress', 'policy', 'results', 'headers'}

-- The names queue_prefix checks: KEYS[1]'s (`set`), the side hashes', then `more`.
local function deleting_keys(set, more)
  local names = {set}
  for _, side in ipairs(SIDES) do names[#names + 1] = side end
  for _, name in ipairs(more or {}) do names[#names + 1] = name end
  return names
end

-- KEYS[1] must be a zset and the side hashes hashes (or missing).
local function deleting_types_error()
  local err = type_error(KEYS[1], 'zset')
  for i = 2, #SIDES + 1 do
    err = err or type_error(KEYS[i], 'hash')
  end
  return err
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
  for i = 2, #SIDES + 1 do
    redis.call('HDEL', KEYS[i], unpack(ids))
  end
  for _, id in ipairs(ids) do
    redis.call('DEL', prefix .. 'job:' .. id)
  end
  return #ids
end
