--[[ INSPECT: read one job's record and its last error. Writes nothing.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:errors     (hash)
ARGV[1]  id: the job id
Reply    [record, error]: the record as a flat field/value array (empty when
         there is no such job) and the last error text, or nil.
Errors   EMQKIND, EMQARG, EMQTYPE
]]
--@include common

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'errors'}, id)
if err then return err end
err = no_options_error(2)
if err then return err end
err = type_error(KEYS[1], 'hash') or type_error(KEYS[2], 'hash')
if err then return err end

return {redis.call('HGETALL', KEYS[1]), redis.call('HGET', KEYS[2], id)}
