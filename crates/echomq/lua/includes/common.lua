--[[ Shared by every transition: errors, the clock, arguments, keys and their
types. Expanded in place of each script's include line when the host loads
the scripts, each include once.
Every helper that can fail returns an error reply as its last value; the
caller returns it at once, before its first write. The limits come from the
host's one table of them (echomq_core::limits), as locals named as there; a
range is two, <NAME>_MIN and <NAME>_MAX (numbers, so defining them costs a
call nothing, where a table would be built on every call).
Every EVALSHA makes each top-level function of its script anew, with each
upvalue it captures, whether or not the call runs it: what only some
transitions call is an include of its own (options, counts, fence...), so
that a script includes only what it calls (bench/prologue_instructions.py).
]]
--@include limits

local _ -- the throwaway, declared so no script ever writes a global

local function emq_error(code, text)
  return redis.error_reply(code .. ' ' .. text)
end

-- The server's clock, in milliseconds since the Unix epoch: read once a
-- call, so that everything one transition stamps shares one moment.
local clock_ms = nil
local function now_ms()
  if not clock_ms then
    local t = redis.call('TIME')
    clock_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_ms
end

-- An integer argument: decimal, an optional '-', at most MAX_DIGITS digits,
-- within lo..=hi.
local function integer(value, name, lo, hi)
  local digits = value and string.match(value, '^%-?(%d+)$')
  local n = digits and #digits <= MAX_DIGITS and tonumber(value)
  if not n or n < lo or n > hi then
    return nil, emq_error('EMQARG', string.format('%s must be an integer in %d..=%d', name, lo, hi))
  end
  return n
end

-- `EMQDATA <key> <field> is not <what>`: a key of the right type holds a
-- value of the wrong shape (malformed stored state, PROTOCOL.md §5).
local function malformed(key, field, what)
  return emq_error('EMQDATA', key .. ' ' .. field .. ' is not ' .. what)
end

-- A stored integer (PROTOCOL.md §5): a field the protocol writes as a number
-- holds one in the form ARGV's integers take, or nothing (nil, false from a
-- read); anything else is EMQDATA, returned before any write.
local function stored(value, key, field)
  if not value then return nil end
  local digits = string.match(value, '^%-?(%d+)$')
  if not digits or #digits > MAX_DIGITS then
    return nil, malformed(key, field, 'an integer')
  end
  return tonumber(value)
end

-- The queue's protocol, emq:{q}:config's `protocol` (PROTOCOL.md §2):
-- nothing, or `major.minor` of this speaker's major; else EMQVERSION, before
-- any write.
local function protocol_error(config, value)
  if not value then return nil end
  local major, minor = string.match(value, '^(%d+)%.(%d+)$')
  local speaker = PROTOCOL_MAJOR .. '.' .. PROTOCOL_MINOR
  if not major or #major > 9 or #minor > 9 then
    return emq_error('EMQVERSION', config .. ' protocol is not <major>.<minor>; this speaker is ' .. speaker)
  end
  if tonumber(major) ~= PROTOCOL_MAJOR then
    return emq_error('EMQVERSION', string.format('queue written by protocol %d.%d; this speaker is %s',
      tonumber(major), tonumber(minor), speaker))
  end
end

-- The seven states a record's `state` may hold: `waiting`, a parent's while
-- it waits for its children, since protocol 1.6.
local STATES = {pending = true, active = true, delayed = true, done = true, dead = true, cancelled = true,
  waiting = true}

-- The kind gate: the first three bytes of an id must be JOB.
local function kind_error(id)
  if id == nil or string.sub(id, 1, 3) ~= 'JOB' then
    return emq_error('EMQKIND', 'job id must be JOB-namespaced')
  end
end

-- The queue's prefix, emq:{q}:, read off the call's first key and checked
-- against every one (only this check reads KEYS by position: a script reads
-- its keys by role, from its prologue): the keys must be this queue's,
-- named as the protocol names them: their count one of `forms`, each the
-- name `names` gives at its position (the prologue's key_names and
-- key_forms), as key_name spells it for `id`.
local function queue_prefix(names, id, forms)
  -- A key's name after the queue's prefix, as the prologue's key_names name
  -- it: 'job' stands for the record of `id`, 'children' for its dependencies
  -- (a parent's, protocol 1.6); every other name is the key's own. Made
  -- inside its one caller: a top-level function that another captures costs
  -- every call an upvalue besides its closure (bench/prologue_instructions.py).
  local function key_name(name, id)
    if name == 'job' then return 'job:' .. id end
    if name == 'children' then return 'children:' .. id end
    return name
  end
  local keys = KEYS
  local count = nil
  for _, n in ipairs(forms) do
    if #keys == n then count = n end
  end
  if not count then
    return nil, emq_error('EMQARG', 'wrong number of keys: takes ' .. table.concat(forms, ' or '))
  end
  local first_key = keys[1]
  local first = key_name(names[1], id)
  local prefix = string.sub(first_key, 1, #first_key - #first)
  if #first_key <= #first or string.sub(first_key, #prefix + 1) ~= first
      or not string.match(prefix, '^emq:{[^{}]+}:$') then
    return nil, emq_error('EMQARG', 'KEYS[1] must be emq:{<queue>}:' .. key_name(names[1], '<id>'))
  end
  for i = 2, count do
    local key = prefix .. key_name(names[i], id)
    if keys[i] ~= key then
      return nil, emq_error('EMQARG', 'KEYS[' .. i .. '] must be ' .. key)
    end
  end
  return prefix
end

-- Each key's type as this call first found it: asked once, although several
-- includes check the same key (a call only ever writes a key of its own
-- type, so a key that passed stays passed).
local typed = {}

-- Each key must hold `want` or nothing; checked before the first write.
local function type_error(key, want)
  local found = typed[key]
  if not found then
    found = redis.call('TYPE', key)['ok']
    typed[key] = found
  end
  if found ~= 'none' and found ~= want then
    return emq_error('EMQTYPE', key .. ' holds a ' .. found .. ', not a ' .. want)
  end
end

-- A read sent with redis.pcall that may double as its key's type check
-- (HMGET, HGET, ZRANGE refuse a key of another type): nil when it was
-- answered, else type_error's reply when the key's type is wrong (TYPE is
-- asked only then), else the refusal itself (an ACL's NOPERM, say).
local function read_error(reply, key, want)
  if type(reply) == 'table' and reply['err'] then
    return type_error(key, want) or reply
  end
end
