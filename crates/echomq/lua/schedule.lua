--[[ SCHEDULE: add a schedule to the queue, or replace the one of that name.
The definition is the host's to read (PROTOCOL.md §11.6); the server stores
it and hands it out.

schedules_key  emq:{q}:schedules  (hash) name → definition
ticks_key      emq:{q}:ticks      (zset) name, score = its next tick, server ms
ARGV[1]  name: 1 to MAX_SCHEDULE_NAME (200) bytes
ARGV[2]  definition: at most MAX_DEFINITION (1052672) bytes
ARGV[3]  next: the first tick, server ms, 0..=9999999999999
Reply    1 added, 0 replaced
Errors   EMQARG, EMQSIZE, EMQTYPE
]]
--@include schedule
--@include options

--@keys SCHEDULE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local schedules_key = KEYS[1]
local ticks_key = KEYS[2]
local key_names = {'schedules', 'ticks'}
local key_forms = {2}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local name
name, err = schedule_name(ARGV[1])
if err then return err end
local definition = ARGV[2]
if definition == nil then
  return emq_error('EMQARG', 'definition is missing')
end
if #definition > MAX_DEFINITION then
  return emq_error('EMQSIZE', 'definition exceeds ' .. MAX_DEFINITION .. ' bytes')
end
local next_tick
next_tick, err = integer(ARGV[3], 'next', AT_MS_MIN, AT_MS_MAX)
if err then return err end
err = no_options_error(4)
if err then return err end
err = type_error(schedules_key, 'hash') or type_error(ticks_key, 'zset')
if err then return err end

local added = redis.call('HSET', schedules_key, name, definition)
redis.call('ZADD', ticks_key, next_tick, name)
return added
