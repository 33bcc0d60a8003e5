--[[ Shared by the fenced transitions, ACK, FAIL, EXTEND and RELEASE: their
first steps and their last check. The order of checks is the core's
`Fenced` (crates/echomq-core/src/transition/fenced.rs).
]]
--@include record

-- The first steps of a fenced transition (ACK, FAIL, EXTEND, RELEASE): the
-- id's kind in ARGV[1], the keys (KEYS[1] its record; as many as one of
-- `forms` says, or all of `names`), the token in ARGV[2].
local function fenced_call(names, forms)
  local id = ARGV[1]
  local err = kind_error(id)
  if err then return nil, nil, err end
  _, err = queue_prefix(names, id, forms)
  if err then return nil, nil, err end
  local token
  token, err = integer(ARGV[2], 'token', TOKEN_MIN, TOKEN_MAX)
  return id, token, err
end

-- A fenced transition's last check: KEYS[2..] hold the types `types` lists
-- (or nothing), then the fence on the record, KEYS[1].
local function fenced_keys_error(types, token)
  for i, want in ipairs(types) do
    local err = type_error(KEYS[i + 1], want)
    if err then return err end
  end
  return fence_error(KEYS[1], token)
end
