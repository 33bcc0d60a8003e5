--[[ The queue's event log, emq:{q}:events (PROTOCOL.md §7.5; the core's
twin is crates/echomq-core/src/transition/events.rs): a capped stream each
transition appends to in the same script as its change. A call writes events
only when it passes the events key and the config key, whose `events` field
is the log's length (0: off; unset: EVENTS_KEEP).
]]
--@include common

-- How many entries the log at `events` keeps, or nil (no events key, or the
-- log is off). The last check before a write: `events` must hold a stream
-- and `config` a hash (or nothing); config's read is its type check. A call
-- that claims passes `read` (gate's events_setting), which reads all the
-- queue's settings at once; any other reads only the log's length, with
-- HGET, which a producer's ACL allows (SECURITY.md).
local function events_keep(events, config, read)
  if not events then return nil end
  local err = type_error(events, 'stream')
  if err then return nil, err end
  local keep
  if read then
    keep, err = read(config)
  else
    keep = redis.pcall('HGET', config, 'events')
    err = read_error(keep, config, 'hash')
  end
  if err then return nil, err end
  keep = tonumber(keep) or EVENTS_KEEP
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

-- An error text as an event carries it: its first MAX_EVENT_ERROR bytes.
local function event_error(text)
  return string.sub(text, 1, MAX_EVENT_ERROR)
end
