--[[ A record's birth fields (PROTOCOL.md §3, §5; the core's twin is `whole`
in crates/echomq-core/src/transition.rs): shared by the transitions that
read records (includes/record) and ENQUEUE, which reads a UNIQUE key's
holder. Every read names `state` first.
]]
--@include common

-- EMQDATA when the record `key`, read as `fields` (of the names `...`, the
-- first `state`), exists without a birth field it was read for, or with a
-- `state` none of the seven: every transition that reads a record reads its
-- state and attempts, and a record it cannot name a state for is refused,
-- never taken for a missing record and dropped, nor taken from a set as if
-- the set named it. Whether it exists is asked only when a field is missing.
local function whole_error(key, fields, ...)
  -- Every read is of one to three fields: all there, only the state to look at.
  local n = select('#', ...)
  if n <= 3 and fields[1] and (n < 2 or fields[2]) and (n < 3 or fields[3]) then
    if not STATES[fields[1]] then return malformed(key, 'state', 'a state') end
    return
  end
  -- A field every record is born with (PROTOCOL.md §3). Made here, on the
  -- slow path: at the top it would be made, and captured, on every call.
  local function birth_field(name)
    return name == 'state' or name == 'attempts' or name == 'payload'
  end
  local missing, found = nil, false
  for i = 1, select('#', ...) do
    if fields[i] then
      found = true
    elseif not missing and birth_field((select(i, ...))) then
      missing = (select(i, ...))
    end
  end
  if missing and (found or redis.call('EXISTS', key) == 1) then
    return emq_error('EMQDATA', key .. ' ' .. missing .. ' is missing')
  end
  if fields[1] and not STATES[fields[1]] then return malformed(key, 'state', 'a state') end
end
