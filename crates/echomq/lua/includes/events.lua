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
  if keep > 0 then return keep end
end

-- The queue's counters, emq:{q}:counts (protocol 1.4; the core's twin is
-- Counter in events.rs): for each counted event, its total (field
-- `<event>`) and its count in now's minute slot (`<event>:m<minute % 60>`)
-- and hour slot (`<event>:h<hour % 168>`); `minute` and `hour` name the last
-- minute and hour written. nil unless the call passed the counts key and
-- counts_open read it.
local COUNTED = {'enqueued', 'completed', 'failed', 'dead'}
local counter = nil

-- A stored counter: nothing, or an integer of 0 or more (EMQDATA).
local function natural(value, key, field)
  local n, err = stored(value, key, field)
  if err or (n and n < 0) then return nil, malformed(key, field, 'an integer of 0 or more') end
  return n
end

local function ring(tag, len, now, last)
  if last and last > now then now = last end
  return {tag = tag, len = len, now = now, last = last}
end

local function slot_field(slot, event, at)
  return string.format('%s:%s%d', event, slot.tag, at % slot.len)
end

-- The counters at `key` (nothing when the call passed none): a hash or
-- nothing (EMQTYPE), whose `minute` and `hour`, then totals and now's
-- slots, are integers of 0 or more (EMQDATA). Reads only; checked right
-- after the events keys.
local function counts_open(key)
  if not key then return nil end
  local now = now_ms()
  local minute = ring('m', COUNT_MINUTES, math.floor(now / MINUTE_MS), nil)
  local hour = ring('h', COUNT_HOURS, math.floor(now / HOUR_MS), nil)
  local function slots()
    local fields = {}
    for _, event in ipairs(COUNTED) do
      fields[#fields + 1] = event
      fields[#fields + 1] = slot_field(minute, event, minute.now)
      fields[#fields + 1] = slot_field(hour, event, hour.now)
    end
    return fields
  end
  -- One read of the stamps and now's slots, which is also the key's type
  -- check; a second only when the clock is behind the stamps.
  local fields = slots()
  local values = redis.pcall('HMGET', key, 'minute', 'hour', unpack(fields))
  local err = read_error(values, key, 'hash')
  if err then return err end
  local last_minute, last_hour
  last_minute, err = natural(values[1], key, 'minute')
  if err then return err end
  last_hour, err = natural(values[2], key, 'hour')
  if err then return err end
  minute = ring('m', COUNT_MINUTES, minute.now, last_minute)
  hour = ring('h', COUNT_HOURS, hour.now, last_hour)
  local read = {select(3, unpack(values))}
  if (last_minute and last_minute > math.floor(now / MINUTE_MS))
      or (last_hour and last_hour > math.floor(now / HOUR_MS)) then
    fields = slots()
    read = redis.call('HMGET', key, unpack(fields))
  end
  for i, field in ipairs(fields) do
    _, err = natural(read[i], key, field)
    if err then return err end
  end
  counter = {key = key, minute = minute, hour = hour, moved = false}
end

-- The fields to empty before counting now: every slot after the last one
-- written, up to now, at most the whole ring.
local function stale(slot, fields)
  if slot.last and slot.last >= slot.now then return end
  local from = slot.now
  if slot.last then from = math.max(slot.last + 1, slot.now - slot.len + 1) end
  for at = from, slot.now do
    for _, event in ipairs(COUNTED) do fields[#fields + 1] = slot_field(slot, event, at) end
  end
end

-- Count `event` when it is one of COUNTED: the first count of a call in a
-- later minute (or hour) empties the slots since, then names now's.
local function count_event(event)
  if event ~= 'enqueued' and event ~= 'completed' and event ~= 'failed' and event ~= 'dead' then return end
  local c = counter
  if not c.moved and (c.minute.last ~= c.minute.now or c.hour.last ~= c.hour.now) then
    local fields = {}
    stale(c.minute, fields)
    stale(c.hour, fields)
    if #fields > 0 then redis.call('HDEL', c.key, unpack(fields)) end
    redis.call('HSET', c.key, 'minute', string.format('%d', c.minute.now),
      'hour', string.format('%d', c.hour.now))
  end
  c.moved = true
  redis.call('HINCRBY', c.key, event, 1)
  redis.call('HINCRBY', c.key, slot_field(c.minute, event, c.minute.now), 1)
  redis.call('HINCRBY', c.key, slot_field(c.hour, event, c.hour.now), 1)
end

-- Append `event` about job `id` (none when false) with more field/value
-- pairs, and count it when the call keeps the counters.
local function emit(events, keep, event, id, ...)
  if counter then count_event(event) end
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
