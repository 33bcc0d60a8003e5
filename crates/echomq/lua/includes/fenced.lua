--[[ Shared by the fenced transitions, ACK, ACKNEXT, FAIL, DEFER, EXTEND,
RELEASE and PROGRESS: their first steps. Their last check is each
script's own, by role: its keys' types, in KEYS order, then fence_error on
the record (includes/record). The order of checks is the core's `Fenced`
(crates/echomq-core/src/transition/fenced.rs).
]]
--@include fence

-- The first steps of a fenced transition: the id's kind in ARGV[1], the
-- call's keys as queue_prefix checks them against `names` and `forms`
-- (the prologue's key_names and key_forms; the record's is the id's), the
-- token in ARGV[2].
local function fenced_call(names, forms)
  local id = ARGV[1]
  local err = kind_error(id)
  if err then return nil, nil, err end
  -- Only its error: common's `_` would be one more upvalue to make a call.
  err = select(2, queue_prefix(names, id, forms))
  if err then return nil, nil, err end
  local token
  token, err = integer(ARGV[2], 'token', TOKEN_MIN, TOKEN_MAX)
  return id, token, err
end
