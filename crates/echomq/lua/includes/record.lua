--[[ Shared by the transitions that read or move job records: a record's
fields read before any write (with TRYAGAIN while a resharding may have
moved it, includes/slot), the fence, taking ids out of a set, and back to
pending.
]]
--@include slot
--@include birth

-- A record's fields, read before any write: nil and an error reply when the
-- key holds no hash. A missing record reads as all false. Its birth fields
-- are for the caller to check (whole_error): ACKMANY answers them per job.
local function read_hash(key, ...)
  local fields = redis.pcall('HMGET', key, ...)
  if fields['err'] or not fields[1] then
    local err = elsewhere_error(key)
    if err then return nil, err end
  end
  if fields['err'] then return nil, read_error(fields, key, 'hash') end
  return fields
end

-- read_hash, and the record must be whole (whole_error).
local function read_record(key, ...)
  local fields, err = read_hash(key, ...)
  if err then return nil, err end
  err = whole_error(key, fields, ...)
  if err then return nil, err end
  return fields
end

-- A record's `attempts`, read before a write: EMQDATA unless it is an
-- integer of 0 or more (a missing record has none: nil).
local function attempts_of(key, attempts)
  local n, err = stored(attempts, key, 'attempts')
  if err then return nil, err end
  if n and n < 0 then return nil, malformed(key, 'attempts', 'an integer of 0 or more') end
  return n
end

-- The fence of an existing record whose `state` and `attempts` were read:
-- a state none of the seven, or attempts not an integer, is EMQDATA; then
-- it must be active and hold `token` as its attempts (EMQFENCE).
local function fenced_record_error(key, state, attempts, token)
  if not STATES[state] then return malformed(key, 'state', 'a state') end
  local n, err = attempts_of(key, attempts)
  if err then return err end
  if state ~= 'active' or n ~= token then
    return emq_error('EMQFENCE', 'token does not hold the lease')
  end
end

-- The fence: the record must exist, be active, and hold `token` as its attempts.
local function fence_error(key, token)
  local fields, err = read_record(key, 'state', 'attempts')
  if err then return err end
  if not fields[1] then
    return emq_error('EMQNOJOB', 'no such job')
  end
  return fenced_record_error(key, fields[1], fields[2], token)
end

-- The fields `...` of each id's record (each must be a hash or missing: the
-- last check before any write), by id's position; a missing record's are
-- all false.
local function read_records(prefix, ids, ...)
  local records = {}
  for i, id in ipairs(ids) do
    local fields, err = read_record(prefix .. 'job:' .. id, ...)
    if err then return nil, err end
    records[i] = fields
  end
  return records
end


-- A job's priority, its entry in emq:{q}:priority (0 when it has none),
-- read before any write: an entry that is not an integer is EMQDATA.
local function priority_of(priority_key, id)
  local n, err = stored(redis.call('HGET', priority_key, id), priority_key, id)
  if err then return nil, err end
  return n or 0
end


-- Back to pending at `score`, the job's priority as priority_of read it.
local function to_pending(record_key, pending_key, score, id)
  redis.call('HSET', record_key, 'state', 'pending')
  redis.call('ZADD', pending_key, score, id)
end
