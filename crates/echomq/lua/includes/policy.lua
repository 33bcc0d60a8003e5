--[[ A job's own policy, as ENQUEUE stored it in emq:{q}:policy (id -> text):
its options, `ATTEMPTS <n>`, `BACKOFF <ms>` or `BACKOFF_EXP <ms>`, and
`TIMEOUT <ms>`, separated by single spaces. The core reads it by the same
rules (crates/echomq-core/src/policy.rs): text that does not read as a policy
(a leading, trailing or doubled space among its faults) is malformed stored
state, which a transition refuses (policy_of: EMQDATA) before any write.
]]
--@include common

-- The policy `text` holds, or nil when it does not read as one: its words
-- split on each single space (an empty word is no option), read as the
-- options are.
local function read_policy(text)
  local spec = {
    ATTEMPTS = {MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX},
    BACKOFF = {DELAY_MS_MIN, DELAY_MS_MAX},
    BACKOFF_EXP = {DELAY_MS_MIN, DELAY_MS_MAX},
    TIMEOUT = {TIMEOUT_MS_MIN, TIMEOUT_MS_MAX},
  }
  local words = {}
  for word in string.gmatch(text .. ' ', '([^ ]*) ') do words[#words + 1] = word end
  if #words % 2 == 1 then return nil end
  local found = {}
  for i = 1, #words, 2 do
    local name = string.upper(words[i])
    local range = spec[name]
    if not range or found[name] then return nil end
    local n = integer(words[i + 1], name, range[1], range[2])
    if not n then return nil end
    found[name] = n
  end
  if found.BACKOFF and found.BACKOFF_EXP then return nil end
  return found
end

-- A job's own policy, its entry in emq:{q}:policy (nil when it has none),
-- read before any write: an entry that does not read is EMQDATA.
local function policy_of(policies, id)
  local text = redis.call('HGET', policies, id)
  if not text then return nil end
  local policy = read_policy(text)
  if not policy then return nil, malformed(policies, id, 'a policy') end
  return policy
end

-- The back-off after failed attempt `attempt`: the policy's, or `default`.
-- BACKOFF_EXP doubles from its base with each attempt, up to the longest delay.
local function policy_backoff(policy, default, attempt)
  if policy.BACKOFF then return policy.BACKOFF end
  local base = policy.BACKOFF_EXP
  if not base then return default end
  if base == 0 then return 0 end
  local doublings = math.max(attempt - 1, 0)
  if doublings >= 40 then return DELAY_MS_MAX end
  return math.min(base * 2 ^ doublings, DELAY_MS_MAX)
end
