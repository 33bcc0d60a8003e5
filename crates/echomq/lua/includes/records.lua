--[[ The fields of many records at once, read before any write: CLAIM's (and
ACKNEXT's), PROMOTE's and REAP's.
]]
--@include record

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
