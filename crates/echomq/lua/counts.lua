--[[ COUNTS: the queue's counters, in all and per minute or hour (protocol
1.4). Writes nothing. The transitions that write `enqueued`, `completed`,
`failed` and `dead` events keep them, when passed the counts key
(includes/events).

counts_key  emq:{q}:counts     (hash) the counters
ARGV[1]  span: minute or hour (any case), which ring to read
Reply    [now ms, [enqueued, completed, failed, dead] in all, slots]: slots
         are the ring's 60 minutes (168 hours) up to now's, oldest first,
         each [enqueued, completed, failed, dead]
Errors   EMQARG, EMQTYPE, EMQDATA
]]
--@include events
--@include counts

--@keys COUNTS's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local counts_key = KEYS[1]
local key_names = {'counts'}
local key_forms = {1}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local unit = ARGV[1] and string.lower(ARGV[1])
local tag, len, ms
if unit == 'minute' then
  tag, len, ms = 'm', COUNT_MINUTES, MINUTE_MS
elseif unit == 'hour' then
  tag, len, ms = 'h', COUNT_HOURS, HOUR_MS
elseif not ARGV[1] then
  return emq_error('EMQARG', 'takes minute or hour')
else
  return emq_error('EMQARG', ARGV[1] .. ' is not minute or hour')
end
if ARGV[2] then return emq_error('EMQARG', 'unknown option ' .. ARGV[2]) end
err = type_error(counts_key, 'hash')
if err then return err end
local now = now_ms()
local stamp = unit
local last
last, err = natural(redis.call('HGET', counts_key, stamp), counts_key, stamp)
if err then return err end
local current = math.floor(now / ms)
-- A slot holds its minute (hour) when it is one of the ring's last `len` up
-- to the last one written; any other reads as nothing.
local function held(at)
  return last ~= nil and at <= last and at + len > last
end
local first = math.max(current - len + 1, 0)
local fields = {}
for _, event in ipairs(COUNTED) do fields[#fields + 1] = event end
for at = first, current do
  if held(at) then
    for _, event in ipairs(COUNTED) do
      fields[#fields + 1] = string.format('%s:%s%d', event, tag, at % len)
    end
  end
end
local values = redis.call('HMGET', counts_key, unpack(fields))
for i, field in ipairs(fields) do
  local n
  n, err = natural(values[i], counts_key, field)
  if err then return err end
  values[i] = n or 0
end
local totals = {values[1], values[2], values[3], values[4]}
local slots = {}
local i = 5
for at = first, current do
  if held(at) then
    slots[#slots + 1] = {values[i], values[i + 1], values[i + 2], values[i + 3]}
    i = i + 4
  else
    slots[#slots + 1] = {0, 0, 0, 0}
  end
end
return {now, totals, slots}
