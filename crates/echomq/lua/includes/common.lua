--[[ Shared by every transition but ENQUEUE (which stands alone, as the seed
shows). Expanded in place of each script's include line when the host loads
the scripts. Every helper that can fail returns an error reply as its last
value; the caller returns it at once, before its first write.
]]

local _ -- the throwaway, declared so no script ever writes a global

local function emq_error(code, text)
  return redis.error_reply(code .. ' ' .. text)
end

-- The server's clock, in milliseconds since the Unix epoch.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- An integer argument: decimal, an optional '-', at most 15 digits, in lo..=hi.
local function integer(value, name, lo, hi)
  local digits = value and string.match(value, '^%-?(%d+)$')
  local n = digits and #digits <= 15 and tonumber(value)
  if not n or n < lo or n > hi then
    return nil, emq_error('EMQARG', string.format('%s must be an integer in %d..=%d', name, lo, hi))
  end
  return n
end

-- The kind gate: the first three bytes of an id must be JOB.
local function kind_error(id)
  if id == nil or string.sub(id, 1, 3) ~= 'JOB' then
    return emq_error('EMQKIND', 'job id must be JOB-namespaced')
  end
end

-- The queue's prefix, emq:{q}:, read off KEYS[1] and checked against every key:
-- the keys must be this queue's, named as the protocol names them. The name
-- 'job' stands for the record of `id`.
local function queue_prefix(names, id)
  if #KEYS ~= #names then
    return nil, emq_error('EMQARG', 'wrong number of keys')
  end
  local function key_name(name)
    if name == 'job' then return 'job:' .. id end
    return name
  end
  local first = key_name(names[1])
  local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #first)
  if #KEYS[1] <= #first or string.sub(KEYS[1], #prefix + 1) ~= first
      or not string.match(prefix, '^emq:{[^{}]+}:$') then
    local shape = names[1] == 'job' and 'job:<id>' or names[1]
    return nil, emq_error('EMQARG', 'KEYS[1] must be emq:{<queue>}:' .. shape)
  end
  for i = 2, #names do
    if KEYS[i] ~= prefix .. key_name(names[i]) then
      return nil, emq_error('EMQARG', 'KEYS[' .. i .. '] must be ' .. prefix .. key_name(names[i]))
    end
  end
  return prefix
end

-- Options after the positional arguments: NAME value pairs, each at most once.
-- `spec` maps an upper-case name to its {lo, hi}; the result maps it to its number.
local function options(first, spec)
  local found = {}
  local i = first
  while i <= #ARGV do
    local name = string.upper(ARGV[i])
    local range = spec[name]
    if not range then
      return nil, emq_error('EMQARG', 'unknown option ' .. ARGV[i])
    end
    if found[name] then
      return nil, emq_error('EMQARG', name .. ' given twice')
    end
    local n, err = integer(ARGV[i + 1], name, range[1], range[2])
    if err then return nil, err end
    found[name] = n
    i = i + 2
  end
  return found
end

-- Each key must hold `want` or nothing; checked before the first write.
local function type_error(key, want)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= want then
    return emq_error('EMQTYPE', key .. ' holds a ' .. found .. ', not a ' .. want)
  end
end

-- Whether key's Redis Cluster slot is being moved to or from this node (a
-- resharding), as this node's CLUSTER NODES shows on its own line:
-- [<slot>->-<id>] migrating, [<slot>-<-<id>] importing. False outside a
-- cluster, and when an ACL denies INFO or CLUSTER (see SECURITY.md).
local function slot_moving(key)
  local info = redis.pcall('INFO', 'cluster')
  if type(info) ~= 'string' or not string.find(info, 'cluster_enabled:1', 1, true) then
    return false
  end
  local slot, nodes = redis.pcall('CLUSTER', 'KEYSLOT', key), redis.pcall('CLUSTER', 'NODES')
  if type(slot) ~= 'number' or type(nodes) ~= 'string' then
    return false
  end
  for line in string.gmatch(nodes, '[^\n]+') do
    local flags = string.match(line, '^%S+ %S+ (%S+)')
    if flags and string.find(',' .. flags .. ',', ',myself,', 1, true) then
      return string.find(line, '[' .. slot .. '->-', 1, true) ~= nil
        or string.find(line, '[' .. slot .. '-<-', 1, true) ~= nil
    end
  end
  return false
end

-- TRYAGAIN when the record at key is not on this node and the queue's slot
-- is moving: the record may be on the other node, so the transition changes
-- nothing and the cluster client tries again once the slot has moved.
local function elsewhere_error(key)
  local here = redis.pcall('EXISTS', key)
  if (type(here) == 'table' or here == 0) and slot_moving(key) then
    return redis.error_reply('TRYAGAIN ' .. key .. ' may be on another node while its slot moves')
  end
end

-- A record's fields, read before any write: nil and an error reply when the
-- key holds no hash. A missing record reads as all false.
local function read_record(key, ...)
  local fields = redis.pcall('HMGET', key, ...)
  if fields['err'] or not fields[1] then
    local err = elsewhere_error(key)
    if err then return nil, err end
  end
  if fields['err'] then
    return nil, emq_error('EMQTYPE', key .. ' holds a ' .. redis.call('TYPE', key)['ok'] .. ', not a hash')
  end
  return fields
end

-- The fence: the record must exist, be active, and hold `token` as its attempts.
local function fence_error(key, token)
  local fields, err = read_record(key, 'state', 'attempts')
  if err then return err end
  if not fields[1] then
    return emq_error('EMQNOJOB', 'no such job')
  end
  if fields[1] ~= 'active' or tonumber(fields[2]) ~= token then
    return emq_error('EMQFENCE', 'token does not hold the lease')
  end
end

-- Back to pending at the job's own priority (0 when it has none).
local function to_pending(record_key, pending_key, priority_key, id)
  redis.call('HSET', record_key, 'state', 'pending')
  redis.call('ZADD', pending_key, redis.call('HGET', priority_key, id) or 0, id)
end
