--[[ ENQUEUE: admit one job. Stands alone (no includes), so it loads as it is.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:pending    the pending set (zset)
KEYS[3]  emq:{q}:delayed    the delayed set (zset)    only needed with DELAY or AT
KEYS[4]  emq:{q}:priority   priorities (hash)         only needed with PRIORITY
         Two keys (the seed's call) are enough for a job with no options.
ARGV[1]  the job id (JOB_<ulid>)
ARGV[2]  the payload, stored verbatim (at most 1048576 bytes)
ARGV[3..] options, each a name and a value:
         PRIORITY <int>       -2147483648..=2147483647, default 0; lower is claimed first
         DELAY <ms>           0..=999999999999: due that long after the server's now
         AT <unix ms>         0..=9999999999999: due at that server time
Reply    1 enqueued, 0 duplicate (a record with this id exists; nothing changed)
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE
]]

-- The kind gate: the first three bytes of the id must be JOB (EMQKIND).
-- The full branded-id check already ran host-side, in the keyspace.
local id, payload = ARGV[1], ARGV[2]
if id == nil or string.sub(id, 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
-- The keys must be this queue's keys, as the protocol names them.
if #KEYS ~= 2 and #KEYS ~= 4 then
  return redis.error_reply('EMQARG wrong number of keys')
end
local suffix = 'job:' .. id
local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #suffix)
if #KEYS[1] <= #suffix or string.sub(KEYS[1], #prefix + 1) ~= suffix
    or not string.match(prefix, '^emq:{[^{}]+}:$') then
  return redis.error_reply('EMQARG KEYS[1] must be emq:{<queue>}:job:<id>')
end
local names = {'job', 'pending', 'delayed', 'priority'}
for i = 2, #KEYS do
  if KEYS[i] ~= prefix .. names[i] then
    return redis.error_reply('EMQARG KEYS[' .. i .. '] must be ' .. prefix .. names[i])
  end
end

if payload == nil then
  return redis.error_reply('EMQARG payload is missing')
end
if #payload > 1048576 then
  return redis.error_reply('EMQSIZE payload exceeds 1048576 bytes')
end

-- Options: PRIORITY, DELAY, AT. Integers are decimal, at most 15 digits.
local function integer(value, lo, hi)
  local digits = value and string.match(value, '^%-?(%d+)$')
  if not digits or #digits > 15 then return nil end
  local n = tonumber(value)
  if n < lo or n > hi then return nil end
  return n
end
local priority, delay, at = nil, nil, nil
local i = 3
while i <= #ARGV do
  local name, value = string.upper(ARGV[i]), ARGV[i + 1]
  if name == 'PRIORITY' and not priority then
    priority = integer(value, -2147483648, 2147483647)
    if not priority then
      return redis.error_reply('EMQARG PRIORITY must be an integer in -2147483648..=2147483647')
    end
  elseif name == 'DELAY' and not delay then
    delay = integer(value, 0, 999999999999)
    if not delay then
      return redis.error_reply('EMQARG DELAY must be an integer in 0..=999999999999')
    end
  elseif name == 'AT' and not at then
    at = integer(value, 0, 9999999999999)
    if not at then
      return redis.error_reply('EMQARG AT must be an integer in 0..=9999999999999')
    end
  elseif name == 'PRIORITY' or name == 'DELAY' or name == 'AT' then
    return redis.error_reply('EMQARG ' .. name .. ' given twice')
  else
    return redis.error_reply('EMQARG unknown option ' .. ARGV[i])
  end
  i = i + 2
end
if delay and at then
  return redis.error_reply('EMQARG DELAY and AT exclude each other')
end
priority = priority or 0
-- The due time, on the server's clock; a job already due is simply pending.
local due = nil
if delay or at then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  due = at or now + delay
  if due <= now then due = nil end
end
if (delay or at or priority ~= 0) and #KEYS ~= 4 then
  return redis.error_reply('EMQARG PRIORITY, DELAY and AT need all four keys')
end

-- Wrong-typed keys are refused before the first write.
local function wrong_type(key, want)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= want then
    return redis.error_reply('EMQTYPE ' .. key .. ' holds a ' .. found .. ', not a ' .. want)
  end
end
local record_type = redis.call('TYPE', KEYS[1])['ok']
if record_type ~= 'none' and record_type ~= 'hash' then
  return redis.error_reply('EMQTYPE ' .. KEYS[1] .. ' holds a ' .. record_type .. ', not a hash')
end
-- Idempotent: a row that already exists is a no-op (a duplicate enqueue).
if record_type == 'hash' then
  return 0
end
local bad = wrong_type(KEYS[2], 'zset')
  or (due and wrong_type(KEYS[3], 'zset'))
  or (priority ~= 0 and wrong_type(KEYS[4], 'hash'))
if bad then return bad end

-- THE RECORD: one HSET writes the three named fields with their birth values.
--   state    'pending'  the lifecycle position ('delayed' when not yet due)
--   attempts '0'        the fencing token, minted by the first claim
--   payload  ARGV[2]    the caller's opaque cargo, stored verbatim
-- The native command EMQ.ENQUEUE writes this same HSET.
redis.call('HSET', KEYS[1], 'state', due and 'delayed' or 'pending', 'attempts', '0', 'payload', payload)
if priority ~= 0 then
  redis.call('HSET', KEYS[4], id, priority)
end
if due then
  redis.call('ZADD', KEYS[3], string.format('%d', due), id)
else
  -- The pending set: the id is the member, so byte order is mint order.
  redis.call('ZADD', KEYS[2], priority, id)
end
return 1
