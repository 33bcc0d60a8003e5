--[[ The fence (PROTOCOL.md §6): a record that must be active and hold the
call's token as its attempts. Shared by the fenced transitions
(includes/fenced), ACK's last check (includes/ack) and ACKMANY.
]]
--@include record

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
