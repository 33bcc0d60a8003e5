--[[ ENQUEUE's options as given, each once and in its range, before the
script checks how they combine (the core's twin is `Given` in
crates/echomq-core/src/transition/enqueue.rs): shared by ENQUEUE and FLOW,
which takes them all but DELAY, AT and UNIQUE's three.
]]
--@include policy_text
--@include parent_option
--@include options

-- The options from ARGV[first] on, by upper-case name (includes/options),
-- and the job's own policy as stored, its options in a fixed order
-- (includes/policy_text), or nil when it has none; or nil, nil and an
-- error reply. Whether BACKOFF and BACKOFF_EXP come together is the
-- caller's to refuse, in its order of checks.
local function given_options(first)
  local spec = {
    PRIORITY = {PRIORITY_MIN, PRIORITY_MAX}, DELAY = {DELAY_MS_MIN, DELAY_MS_MAX}, AT = {AT_MS_MIN, AT_MS_MAX},
    ATTEMPTS = {MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX}, BACKOFF = {DELAY_MS_MIN, DELAY_MS_MAX},
    BACKOFF_EXP = {DELAY_MS_MIN, DELAY_MS_MAX}, TIMEOUT = {TIMEOUT_MS_MIN, TIMEOUT_MS_MAX},
    UNIQUE = {bytes = MAX_UNIQUE_KEY}, UNIQUE_FOR = {UNIQUE_MS_MIN, UNIQUE_MS_MAX}, UNIQUE_DONE = {FLAG_MIN, FLAG_MAX},
    HEADERS = {bytes = MAX_HEADERS}, PARENT = {check = parent_option}, GROUP = {bytes = MAX_GROUP},
  }
  local opts, err = options(first, spec)
  if err then return nil, nil, err end
  local policy = policy_text(opts)
  if policy == '' then policy = nil end
  return opts, policy
end
