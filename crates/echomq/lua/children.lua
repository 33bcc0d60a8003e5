--[[ CHILDREN: a parent's dependencies, each child's state and result
(protocol 1.6, PROTOCOL.md §7.8). Writes nothing (run read-only).

children_key  emq:{q}:children:<id> (hash) the parent's dependencies, as FLOW wrote
                                 them and RESOLVE records its children's ends
ARGV[1]  id: the parent's id
Reply    [incarnation, open, [child, state, result]...]: its incarnation and how many
         children are open (each nil when the hash lacks it), then its children in
         byte order, each `open` or how it ended (done, dead, cancelled or gone), with
         its result (or nil); [] for a job that is no parent
Errors   EMQKIND, EMQARG, EMQTYPE
]]
--@include common
--@include job_call

--@keys CHILDREN's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local children_key = KEYS[1]
local key_names = {'children'}
local key_forms = {1}
--@keys end

local _, _, err = job_call(key_names, key_forms)
if err then return err end
local fields = redis.pcall('HGETALL', children_key)
err = read_error(fields, children_key, 'hash')
if err then return err end
if #fields == 0 then return {} end
-- By field; the children are the fields `{<queue>}<id>`.
local values, named = {}, {}
for i = 1, #fields, 2 do
  local field = fields[i]
  values[field] = fields[i + 1]
  if string.sub(field, 1, 1) == '{' then named[#named + 1] = field end
end
-- Byte order: Lua's `<` on strings follows the server's collation locale.
table.sort(named, function(a, b)
  for at = 1, math.min(#a, #b) do
    local x, y = string.byte(a, at), string.byte(b, at)
    if x ~= y then return x < y end
  end
  return #a < #b
end)
-- false stands for nil in a reply (a table holds no nil).
local reply = {values.incarnation or false, values.open or false}
for _, child in ipairs(named) do
  local dependency = values[child]
  local state = string.sub(dependency, 1, 4) == 'open' and 'open' or dependency
  reply[#reply + 1] = {child, state, values['result:' .. child] or false}
end
return reply
