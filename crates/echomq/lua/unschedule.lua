--[[ UNSCHEDULE: remove a schedule from the queue. Jobs it fired stay.

schedules_key  emq:{q}:schedules  (hash)
ticks_key      emq:{q}:ticks      (zset)
ARGV[1]  name: 1 to MAX_SCHEDULE_NAME (200) bytes
Reply    1 removed, 0 there was no such schedule
Errors   EMQARG, EMQTYPE
]]
--@include schedule
--@include options

--@keys UNSCHEDULE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
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
err = no_options_error(2)
if err then return err end
err = type_error(schedules_key, 'hash') or type_error(ticks_key, 'zset')
if err then return err end

local removed = redis.call('HDEL', schedules_key, name)
redis.call('ZREM', ticks_key, name)
return removed
