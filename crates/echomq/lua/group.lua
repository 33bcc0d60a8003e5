--[[ GROUP: read or set one group's settings, its weight, cap, rate, most
pending and pause (protocol 1.7, PROTOCOL.md §7.9).

groups_key  emq:{q}:groups  (hash) set:<g> -> the group's settings; its tags
gnames_key   emq:{q}:gnames  (zset) the groups with jobs or settings, by name
ready_key   emq:{q}:ready   (zset) the groups a claim may take from, by start tag
gwait_key    emq:{q}:gwait   (zset) the groups held by their rate, by when it frees
wake_key    emq:{q}:wake    (zset) the wake-up key (includes/wake): told when the
                            group becomes one a claim may take from
ARGV[1]  group: 1 to 200 bytes
ARGV[2..] options, in any order:
         WEIGHT <n>      1..=1000: its share against the others
         CAP <n>         0..=2147483647: the most running at once (0: none)
         RATE <n>        0..=100000, with PER <ms> 1..=86400000: the most claims in any
                         PER ms (RATE 0: none)
         MAX <n>         0..=1000000000: the most pending (0: none); ENQUEUE past it is EMQFULL
         PAUSED <0|1>    a paused group is claimed from by no one
Reply    [group, pending, running, standing, settings]: standing `ready`, `idle`, `paused`,
         `capped` or `limited`; settings as stored (`` for the defaults)
Errors   EMQARG, EMQTYPE, EMQDATA
]]
--@include wake
--@include forget
--@include options

--@keys GROUP's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local groups_key = KEYS[1]
local gnames_key = KEYS[2]
local ready_key = KEYS[3]
local gwait_key = KEYS[4]
local wake_key = KEYS[5]
local key_names = {'groups', 'gnames', 'ready', 'gwait', 'wake'}
local key_forms = {5}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local group
group, err = group_lib().name(ARGV[1])
if err then return err end
local opts
opts, err = options(2, {WEIGHT = {GROUP_WEIGHT_MIN, GROUP_WEIGHT_MAX}, CAP = {CONCURRENCY_MIN, CONCURRENCY_MAX},
  RATE = {RATE_MIN, RATE_MAX}, PER = {RATE_PERIOD_MS_MIN, RATE_PERIOD_MS_MAX},
  MAX = {KEEP_COUNT_MIN, KEEP_COUNT_MAX}, PAUSED = {SWITCH_MIN, SWITCH_MAX}})
if err then return err end
if opts.RATE and opts.RATE > 0 and not opts.PER then return emq_error('EMQARG', 'RATE needs PER') end
if opts.PER and not opts.RATE then return emq_error('EMQARG', 'PER needs RATE') end

local G = group_lib()
err = G.check(prefix)
if err then return err end
local wakes
wakes, err = wake_target(wake_key)
if err then return err end
err = type_error(groups_key, 'hash')
if err then return err end
local before
before, err = G.settings(prefix, group)
if err then return err end
local after = {weight = before.weight, cap = before.cap, rate = before.rate, per = before.per,
  max = before.max, paused = before.paused}
local function some(n) if n > 0 then return n end end
if opts.WEIGHT then after.weight = opts.WEIGHT end
if opts.CAP then after.cap = some(opts.CAP) end
if opts.RATE then
  after.rate = some(opts.RATE)
  after.per = after.rate and opts.PER or nil
end
if opts.MAX then after.max = some(opts.MAX) end
if opts.PAUSED then after.paused = opts.PAUSED == 1 or nil end

local text = G.text(after)
if text ~= G.text(before) then
  if text == '' then
    redis.call('HDEL', groups_key, 'set:' .. group)
  else
    redis.call('HSET', groups_key, 'set:' .. group, text)
    redis.call('ZADD', gnames_key, '0', group)
  end
  local was_ready = redis.call('ZSCORE', ready_key, group)
  -- Out of the index first, so that it enters at its start tag if it may.
  redis.call('ZREM', ready_key, group)
  redis.call('ZREM', gwait_key, group)
  if G.reindex(prefix, group, true) and not was_ready then wake(wakes) end
end
local row
row, err = G.row(prefix, group)
if err then return err end
return row
