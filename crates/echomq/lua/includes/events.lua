--[[ The queue's event log, emq:{q}:events (PROTOCOL.md §7.5; the core's
twin is crates/echomq-core/src/transition/events.rs): a capped stream each
transition appends to in the same script as its change. A call writes events
only when it passes the events key and the config key, whose `events` field
is the log's length (0: off; unset: EVENTS_KEEP).
]]
--@include common

-- How many entries the log at `events` keeps, or nil (no events key, or the
-- log is off). The last check before a write: `events` must hold a stream
-- and `config` a hash (or nothing), its `protocol` this speaker's major and
-- its `events` an integer (EMQVERSION, EMQDATA); config's read is its type
-- check. A call
-- that claims passes `read` (gate's events_setting), which reads all the
-- queue's settings at once; any other reads only the log's length, with
-- HGET, which a producer's ACL allows (SECURITY.md).
-- The log's length as `config` sets it (`events`; EVENTS_KEEP when unset,
-- 0 for anything below 1), read after its `protocol`: HGET twice, not HMGET,
-- since a producer's ACL allows only HGET. nil and an error reply when
-- config holds no hash, another major (EMQVERSION) or a malformed `events`
-- (EMQDATA).
local function events_length(config)
  local version = redis.pcall('HGET', config, 'protocol')
  local err = read_error(version, config, 'hash') or protocol_error(config, version)
  if err then return nil, err end
  local keep
  keep, err = stored(redis.call('HGET', config, 'events'), config, 'events')
  if err then return nil, err end
  return math.max(keep or EVENTS_KEEP, 0)
end

local function events_keep(events, config, read)
  if not events then return nil end
  local err = type_error(events, 'stream')
  if err then return nil, err end
  local keep
  if read then
    keep, err = read(config)
  else
    keep, err = events_length(config)
  end
  if err then return nil, err end
  keep = keep or EVENTS_KEEP
  if keep > 0 then return keep end
end

-- Append `event` about job `id` (none when false) with more field/value pairs.
local function emit(events, keep, event, id, ...)
  if not keep then return end
  if id then
    redis.call('XADD', events, 'MAXLEN', '~', keep, '*', 'event', event, 'id', id, ...)
  else
    redis.call('XADD', events, 'MAXLEN', '~', keep, '*', 'event', event, ...)
  end
end

-- An error text as an event carries it: at most its first MAX_EVENT_ERROR
-- bytes, cut back before a UTF-8 character the cut would split (PROTOCOL.md
-- §7.5): while the first byte left out continues a character (10xxxxxx),
-- the cut moves back one byte, at most three times.
local function event_error(text)
  local cut = MAX_EVENT_ERROR
  if #text <= cut then return text end
  while cut > MAX_EVENT_ERROR - 3 do
    local after = string.byte(text, cut + 1)
    if after < 0x80 or after >= 0xC0 then break end
    cut = cut - 1
  end
  return string.sub(text, 1, cut)
end
