--[[ Shared by the transitions that read job records: a record's fields read
before any write (with TRYAGAIN while a resharding may have moved it,
includes/slot) and its attempts. The fence (includes/fence), many records
at once (includes/records) and back to pending (includes/pending) are each
their own include, so that a script makes only the closures it calls.
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
