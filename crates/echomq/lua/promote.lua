--[[ PROMOTE: delayed jobs whose time has come move to pending.
Safe to run from many workers at once: each due job moves exactly once.

delayed_key   emq:{q}:delayed    (zset) score = due time, server ms
pending_key   emq:{q}:pending    (zset)
priority_key  emq:{q}:priority   (hash)
events_key    emq:{q}:events     (stream) the event log, a
config_key    emq:{q}:config     (hash) `promoted` event per job (includes/events)
wake_key      emq:{q}:wake       (zset) the wake-up key
                                 (includes/wake), told when a job was promoted
ARGV[1..] options:
         LIMIT <n>          1..=1000, default 1000: at most this many jobs
Derived  emq:{q}:job:<id>   the record of each due id (same hashtag)
Reply    how many moved to pending. An id in delayed whose record is missing
         is dropped and not counted.
Errors   EMQARG, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include record
--@include events
--@include wake
--@include forget
--@include trailing_keys
--@include options
--@include records
--@include pending

--@keys PROMOTE's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local delayed_key = KEYS[1]
local pending_key = KEYS[2]
local priority_key = KEYS[3]
local events_key = KEYS[4]
local config_key = KEYS[5]
local wake_key = KEYS[6]
local key_names = {'delayed', 'pending', 'priority', 'events', 'config', 'wake'}
local key_forms = {6}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
err = type_error(delayed_key, 'zset') or type_error(pending_key, 'zset') or type_error(priority_key, 'hash')
if err then return err end
local keep, wakes
keep, wakes, err = events_and_wake(events_key, config_key, wake_key)
if err then return err end

local ids = redis.call('ZRANGEBYSCORE', delayed_key, '-inf', now_ms(), 'LIMIT', 0,
  opts.LIMIT or SWEEP_LIMIT_MAX)
if #ids == 0 then return 0 end
local records
records, err = read_records(prefix, ids, 'state', 'attempts')
if err then return err end
-- Each priority read before the first write (an `abc` refuses them all).
local scores = {}
for i, id in ipairs(ids) do
  scores[i] = 0
  if records[i][1] then
    scores[i], err = priority_of(priority_key, id)
    if err then return err end
  end
end
local G, groups
G, err = grouping(prefix)
if G then groups, err = G.jobs_groups(prefix, ids) end
if err then return err end
redis.call('ZREM', delayed_key, unpack(ids))

local promoted = 0
for i, id in ipairs(ids) do
  if records[i][1] then
    to_pending(prefix .. 'job:' .. id, pending_key, scores[i], id, G, prefix, groups and groups[i])
    emit(events_key, keep, 'promoted', id)
    promoted = promoted + 1
  end
end
if promoted > 0 then wake(wakes) end
return promoted
