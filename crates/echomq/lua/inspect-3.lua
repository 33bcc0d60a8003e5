--[[ INSPECT: read one job's record, its last error and its last progress.
Writes nothing.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:errors     (hash)
KEYS[3]  emq:{q}:progress   (hash)
ARGV[1]  id: the job id
Reply    [record, error, progress]: the record as a flat field/value array
         (empty when there is no such job), the last error text or nil, and
         the last progress value or nil.
Errors   EMQKIND, EMQARG, EMQTYPE
]]
--@include common

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'errors', 'progress'}, id)
if err then return err end
err = no_options_error(2)
if err then return err end
err = type_error(KEYS[1], 'hash') or type_error(KEYS[2], 'hash') or type_error(KEYS[3], 'hash')
if err then return err end

return {redis.call('HGETALL', KEYS[1]), redis.call('HGET', KEYS[2], id), redis.call('HGET', KEYS[3], id)}
