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

-- The queue's counters, emq:{q}:counts (protocol 1.4; the core's twin is
-- Counter in events.rs): for each counted event, its total (field
-- `<event>`) and its count in now's minute slot (`<event>:m<minute % 60>`)
-- and hour slot (`<event>:h<hour % 168>`); `minute` and `hour` name the last
-- minute and hour written. nil unless the call passed the counts key and
-- counts_open read it. Every ACK and ENQUEUE counts, so this keeps to few
-- tables and strings a call: each costs the script its making and the
-- garbage collector its sweep (bench/acknext_sections.py).
local COUNTED = {'enqueued', 'completed', 'failed', 'dead'}
local counter = nil

-- A stored counter: nothing, or an integer of 0 or more (EMQDATA).
local function natural(value, key, field)
  local n, err = stored(value, key, field)
  if err or (n and n < 0) then return nil, malformed(key, field, 'an integer of 0 or more') end
  return n
end

-- Each event's three fields, in minute `minute`'s and hour `hour`'s slots:
-- names[event] = {total, minute slot, hour slot}; and every name, after
-- `minute` and `hour`, in the order a call reads them.
local function count_fields(events, minute, hour)
  local fields, names = {'minute', 'hour'}, {}
  local m, h = ':m' .. (minute % COUNT_MINUTES), ':h' .. (hour % COUNT_HOURS)
  for _, event in ipairs(events) do
    local three = {event, event .. m, event .. h}
    names[event] = three
    fields[#fields + 1], fields[#fields + 2], fields[#fields + 3] = three[1], three[2], three[3]
  end
  return fields, names
end

-- The counters at `key` (nothing when the call passed none), for `events`,
-- the counted events this transition may write: a hash or nothing
-- (EMQTYPE, the read's own refusal), whose `minute` and `hour`, then those
-- events' totals and fields of now's slots, are integers of 0 or more
-- (EMQDATA). Reads only; checked right after the events keys.
local function counts_open(key, events)
  if not key then return nil end
  local now = now_ms()
  local minute, hour = math.floor(now / MINUTE_MS), math.floor(now / HOUR_MS)
  local fields, names = count_fields(events, minute, hour)
  local values = redis.pcall('HMGET', key, unpack(fields))
  local err = read_error(values, key, 'hash')
  if err then return err end
  local last_minute, last_hour
  last_minute, err = natural(values[1], key, 'minute')
  if err then return err end
  last_hour, err = natural(values[2], key, 'hour')
  if err then return err end
  if (last_minute and last_minute > minute) or (last_hour and last_hour > hour) then
    -- A clock behind the stamps counts in their slots: those are read.
    minute, hour = math.max(minute, last_minute or 0), math.max(hour, last_hour or 0)
    fields, names = count_fields(events, minute, hour)
    values = redis.call('HMGET', key, unpack(fields))
  end
  -- What each field holds now, so that a count writes all three in one HSET.
  local held = {}
  for i = 3, #fields do
    local n
    n, err = natural(values[i], key, fields[i])
    if err then return err end
    held[fields[i]] = n or 0
  end
  counter = {key = key, minute = minute, last_minute = last_minute, hour = hour, last_hour = last_hour,
    names = names, held = held, moved = false}
end

-- Add to `fields` the ones to empty before counting now: every slot after
-- `last`, the last one written, up to `now`, at most the whole ring of
-- `len` slots.
local function stale(len, now, last, tag, fields)
  if last and last >= now then return end
  local from = now
  if last then from = math.max(last + 1, now - len + 1) end
  for at = from, now do
    for _, event in ipairs(COUNTED) do fields[#fields + 1] = event .. tag .. (at % len) end
  end
end

-- Write what count_event added up since the last write: each changed
-- count, in the order first counted, in one HSET, as digits.
local function counts_flush()
  local c = counter
  if not c or not c.order or #c.order == 0 then return end
  local sets = {}
  for _, field in ipairs(c.order) do
    sets[#sets + 1] = field
    sets[#sets + 1] = string.format('%d', c.unwritten[field])
  end
  redis.call('HSET', c.key, unpack(sets))
  c.order, c.unwritten = nil, nil
end

-- Note `field` to be set to `value` (a number) at the next flush: a call
-- that counts many jobs prints each count once, not once a job.
local function count_set(c, field, value)
  if not c.order then c.order, c.unwritten = {}, {} end
  if not c.unwritten[field] then c.order[#c.order + 1] = field end
  c.unwritten[field] = value
end

-- A call that counts many jobs (ACKMANY, ENQUEUEMANY, REAP, SETTLE) holds
-- its counts until its end, counts_flush, where one job's call writes at
-- each count.
local function counts_hold()
  if counter then counter.holding = true end
end

-- Count `event` when it is one of COUNTED: the first count of a call in a
-- later minute (or hour) empties the slots since, then names now's.
local function count_event(event)
  if event ~= 'enqueued' and event ~= 'completed' and event ~= 'failed' and event ~= 'dead' then return end
  local c = counter
  if not c.moved and (c.last_minute ~= c.minute or c.last_hour ~= c.hour) then
    local fields = {}
    stale(COUNT_MINUTES, c.minute, c.last_minute, ':m', fields)
    stale(COUNT_HOURS, c.hour, c.last_hour, ':h', fields)
    if #fields > 0 then redis.call('HDEL', c.key, unpack(fields)) end
    -- Now's slots were among the emptied ones.
    for _, field in ipairs(fields) do
      if c.held[field] then c.held[field] = 0 end
    end
    count_set(c, 'minute', c.minute)
    count_set(c, 'hour', c.hour)
  end
  c.moved = true
  -- The total and now's two slots, each one more, in one write: what the
  -- call read of them (counts_open), or HINCRBY for an event it did not
  -- read.
  local names = c.names[event]
  if not names then
    local m, h = ':m' .. (c.minute % COUNT_MINUTES), ':h' .. (c.hour % COUNT_HOURS)
    for _, field in ipairs({event, event .. m, event .. h}) do redis.call('HINCRBY', c.key, field, 1) end
  elseif c.order or c.holding then
    for _, field in ipairs(names) do
      local n = c.held[field] + 1
      c.held[field] = n
      count_set(c, field, n)
    end
  else
    -- One job's call, the usual ACK or ENQUEUE: its three fields in one
    -- HSET, without the bookkeeping a held batch needs.
    local held = c.held
    local total, minute, hour = names[1], names[2], names[3]
    held[total], held[minute], held[hour] = held[total] + 1, held[minute] + 1, held[hour] + 1
    redis.call('HSET', c.key, total, string.format('%d', held[total]), minute,
      string.format('%d', held[minute]), hour, string.format('%d', held[hour]))
    return
  end
  if not c.holding then counts_flush() end
end

-- Append `event` about job `id` (none when false) with more field/value
-- pairs, and count it when the call keeps the counters. The entry's id, or
-- nil when the log is off.
local function emit(events, keep, event, id, ...)
  if counter then count_event(event) end
  if not keep then return end
  if id then
    return redis.call('XADD', events, 'MAXLEN', '~', keep, '*', 'event', event, 'id', id, ...)
  end
  return redis.call('XADD', events, 'MAXLEN', '~', keep, '*', 'event', event, ...)
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
