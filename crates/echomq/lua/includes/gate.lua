--[[ The claim gate, the one place a transition that hands out jobs looks at
the queue's settings (emq:{q}:config, read by common's settings), and the
one place it logs a rate-limited claim (emq:{q}:rate): paused? room under
the concurrency limit? a rate slot?
gate(config, active, rate, count, ending) returns how many jobs the claim may
take (`ending` leases of active end first in the same call: ACKNEXT's one);
why it may take fewer than count (-1 paused, 0 at the concurrency limit,
n > 0 ms until the rate's next slot or the end of a timed pause), or nil
when it held nothing back; the log's state for spend (nil without a rate);
or an error reply as its last value. It writes nothing. With no settings it
costs one HMGET, which the event log's length shares; rate is type-checked
only when a rate is set, since only then is it read.
spend(rate, log, claimed), when the claim took jobs, then drops what left the window (at most
SWEEP_LIMIT entries, the oldest, in one ZREM as the core's store sends it)
and logs each claimed `<id>:<token>` (claimed[i][1]) at the time of its
`active` event (claimed[i][2], the ms of the entry's id; nil when no event
was written), never before the gate's now (a new life's claim whose
`<id>:<token>` is still in the window as `<id>:<token>:<n>`, 1.2). The
server stamps an entry by its own reading of the clock, which may be a
millisecond later than the gate's: logged at the gate's now, that claim
would leave the window early and the event log could show more than the
rate in one period (the core's `spend` says why this holds).
]]
--@include common
--@include switch

-- The queue's settings that a claim reads, by name: the gate's, and the
-- event log's length, read with the queue's `protocol`.
-- One HMGET a call, which is also the key's type check (read_error); a
-- missing key reads as all false. Each is checked as it is read, before the
-- gate decides anything (EMQVERSION, then EMQDATA in the order of the
-- fields): `paused` is true or false, the others numbers or nil. By name,
-- not by position: a constant for each position would be one more upvalue
-- for every call to make (bench/prologue_instructions.py).
local settings_key, settings_read = nil, nil
local function settings(config)
  if settings_key ~= config then
    local numbers = {'concurrency', 'rate', 'per', 'paused_until', 'events'}
    local read = redis.pcall('HMGET', config, 'protocol', 'paused', unpack(numbers))
    local err = read_error(read, config, 'hash') or protocol_error(config, read[1])
    if err then return nil, err end
    local checked = {}
    checked.paused, err = switch(read[2], config, 'paused')
    if err then return nil, err end
    for i, name in ipairs(numbers) do
      checked[name], err = stored(read[i + 2], config, name)
      if err then return nil, err end
    end
    settings_key, settings_read = config, checked
  end
  return settings_read
end

-- The event log's length as the settings hold it, for events_keep: a call
-- that claims reads it with the gate's settings.
local function events_setting(config)
  local s, err = settings(config)
  if err then return nil, err end
  return s.events
end

local function gate(config, active, rate, count, ending)
  local s, err = settings(config)
  if err then return nil, nil, nil, err end
  -- A limit below 1 is none.
  local function setting(name)
    local n = s[name]
    if n and n >= 1 then return n end
  end
  if s.paused then return 0, -1 end
  -- A timed pause (DEFER's): nothing until the server's clock reaches it.
  local clock = nil
  local paused_until = setting('paused_until')
  if paused_until then
    clock = now_ms()
    if paused_until > clock then return 0, paused_until - clock end
  end
  local room, held, log = count, nil, nil
  local concurrency = setting('concurrency')
  if concurrency then
    local left = math.max(concurrency - (redis.call('ZCARD', active) - (ending or 0)), 0)
    if left < room then room, held = left, 0 end
  end
  local limit, per = setting('rate'), setting('per')
  if limit and per then
    local err = type_error(rate, 'zset')
    if err then return nil, nil, nil, err end
    local now = clock or now_ms()
    local edge = math.max(now - per, 0)
    local above = string.format('(%d', edge)
    local live = redis.call('ZCOUNT', rate, above, '+inf')
    local left = math.max(limit - live, 0)
    if left <= room and left < count then
      room = left
      local oldest = redis.call('ZRANGE', rate, above, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')[2]
      held = math.max((tonumber(oldest) or now) + per - now, 1)
    end
    log = {now = now, edge = edge}
  end
  return room, held, log
end

local function spend(rate, log, claimed)
  -- A claim that took nothing writes nothing, not even the trim.
  if not log or #claimed == 0 then return end
  local expired = redis.call('ZRANGE', rate, '-inf', string.format('%d', log.edge), 'BYSCORE', 'LIMIT', '0',
    string.format('%d', SWEEP_LIMIT_MAX))
  if #expired > 0 then redis.call('ZREM', rate, unpack(expired)) end
  for _, claim in ipairs(claimed) do
    local member, at = claim[1], claim[2]
    -- A new life of an id (enqueued again after a delete) claims token 1
    -- again: an earlier life's entry still in the window keeps its place,
    -- and this claim is logged as <id>:<token>:<n>, the least n >= 2 free.
    local logged, n = member, 1
    local score = redis.call('ZSCORE', rate, logged)
    while score and tonumber(score) > log.edge do
      n = n + 1
      logged = member .. ':' .. n
      score = redis.call('ZSCORE', rate, logged)
    end
    redis.call('ZADD', rate, string.format('%d', math.max(at or log.now, log.now)), logged)
  end
end
