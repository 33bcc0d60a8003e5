--[[ Counting the events a call emits (includes/events) in the queue's
counters, emq:{q}:counts (protocol 1.4, PROTOCOL.md §7.5): included only by
the transitions that count, so that the others make none of its closures.
]]
--@include events

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

-- The counters at `key` (nothing when the call passed none), for `events`,
-- the counted events this transition may write: a hash or nothing
-- (EMQTYPE, the read's own refusal), whose `minute` and `hour`, then those
-- events' totals and fields of now's slots, are integers of 0 or more
-- (EMQDATA). Reads only; checked right after the events keys.
local function counts_open(key, events)
  if not key then return nil end
  -- Each event's three fields, in minute `minute`'s and hour `hour`'s slots:
  -- names[event] = {total, minute slot, hour slot}; and every name, after
  -- `minute` and `hour`, in the order a call reads them. Made inside its one
  -- caller, as common's key_name is.
  local function count_fields(events, minute, hour)
    local fields, names = {'minute', 'hour'}, {}
    local m, h = string.format(':m%d', minute % COUNT_MINUTES), string.format(':h%d', hour % COUNT_HOURS)
    for _, event in ipairs(events) do
      local three = {event, event .. m, event .. h}
      names[event] = three
      fields[#fields + 1], fields[#fields + 2], fields[#fields + 3] = three[1], three[2], three[3]
    end
    return fields, names
  end
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

-- Count `event` when the call keeps the counters (counts_open opened them)
-- and it is one of COUNTED: the first count of a call in a later minute (or
-- hour) empties the slots since, then names now's. Declared by
-- includes/events, whose emit calls it.
count_event = function(event)
  local c = counter
  if not c then return end
  if event ~= 'enqueued' and event ~= 'completed' and event ~= 'failed' and event ~= 'dead' then return end
  if not c.moved and (c.last_minute ~= c.minute or c.last_hour ~= c.hour) then
    -- Add to `fields` the ones to empty before counting now: every slot after
    -- `last`, the last one written, up to `now`, at most the whole ring of
    -- `len` slots. Made here, on the path of a call's first count in a later
    -- minute, not on every call.
    local function stale(len, now, last, tag, fields)
      if last and last >= now then return end
      local from = now
      if last then from = math.max(last + 1, now - len + 1) end
      for at = from, now do
        for _, event in ipairs(COUNTED) do fields[#fields + 1] = event .. tag .. (at % len) end
      end
    end
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
    local m, h = string.format(':m%d', c.minute % COUNT_MINUTES), string.format(':h%d', c.hour % COUNT_HOURS)
    for _, field in ipairs({event, event .. m, event .. h}) do redis.call('HINCRBY', c.key, field, '1') end
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
