--[[ GROUPS: a page of a queue's groups, each with its depth, running count,
standing and settings (protocol 1.7, PROTOCOL.md §7.9). Writes nothing (run
read-only).

gnames_key   emq:{q}:gnames  (zset) the groups with jobs or settings, by name
groups_key  emq:{q}:groups  (hash) set:<g> -> the group's settings
ARGV     options, in any order:
         AFTER <group>   the page starts after this group (the previous page's next)
         LIMIT <n>       1..=1000, default 100: the most groups in the page
Reply    [next, row...]: next, the AFTER of the next page (nil after the last), then each
         group by name, [group, pending, running, standing, settings] as GROUP answers
Errors   EMQARG, EMQTYPE, EMQDATA
]]
--@include grouping
--@include options

--@keys GROUPS's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local gnames_key = KEYS[1]
local groups_key = KEYS[2]
local key_names = {'gnames', 'groups'}
local key_forms = {2}
--@keys end

local prefix, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local opts
opts, err = options(1, {AFTER = {check = function(value)
  if value == nil then return nil, emq_error('EMQARG', 'AFTER needs a group') end
  return value
end}, LIMIT = {SWEEP_LIMIT_MIN, SWEEP_LIMIT_MAX}})
if err then return err end
err = type_error(gnames_key, 'zset') or type_error(groups_key, 'hash')
if err then return err end
local limit = opts.LIMIT or 100
local from = opts.AFTER and '(' .. opts.AFTER or '-'
local names = redis.call('ZRANGE', gnames_key, from, '+', 'BYLEX', 'LIMIT', 0, limit + 1)
local next_page = false
if #names > limit then
  names[limit + 1] = nil
  next_page = names[limit]
end
local reply = {next_page}
for _, group in ipairs(names) do
  local row
  row, err = group_lib().row(prefix, group)
  if err then return err end
  reply[#reply + 1] = row
end
return reply
