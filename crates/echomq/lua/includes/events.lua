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
-- HGET.
-- The log's length as `config` sets it (`events`; EVENTS_KEEP when unset,
-- 0 for anything below 1), read after its `protocol`: HGET twice. nil and
-- an error reply when
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
  -- As XADD's MAXLEN takes it: the digits, not a number to print each time.
  if keep > 0 then return string.format('%d', keep) end
end

-- Counts an event a call emits (emit): false unless the script also
-- includes includes/counts, which sets it. A transition that never counts
-- (CLAIM, say) leaves the counters out, whose closures every call would
-- make (bench/prologue_instructions.py).
local count_event = false

-- Append `event` about job `id` (none when false) with more field/value
-- pairs, and count it when the call keeps the counters. The entry's id, or
-- nil when the log is off.
local function emit(events, keep, event, id, ...)
  if count_event then count_event(event) end
  if not keep then return end
  if id then
    return redis.call('XADD', events, 'MAXLEN', '~', keep, '*', 'event', event, 'id', id, ...)
  end
  return redis.call('XADD', events, 'MAXLEN', '~', keep, '*', 'event', event, ...)
end
