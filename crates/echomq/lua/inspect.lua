--[[ INSPECT: read one job's record, its last error, its last progress, its
result, its own policy and its headers. Writes nothing.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:errors     (hash)
KEYS[3]  emq:{q}:progress   (hash)
KEYS[4]  emq:{q}:results    (hash)
KEYS[5]  emq:{q}:policy     (hash)
KEYS[6]  emq:{q}:headers    (hash)
ARGV[1]  id: the job id
Reply    [record, error, progress, result, policy, headers]: the record as a flat
         field/value array (empty when there is no such job), then the id's
         entry in each of KEYS[2..] or nil.
Errors   EMQKIND, EMQARG, EMQTYPE
]]
--@include common

--@keys INSPECT's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local errors_key = KEYS[2]
local progress_key = KEYS[3]
local results_key = KEYS[4]
local policy_key = KEYS[5]
local headers_key = KEYS[6]
local key_names = {'job', 'errors', 'progress', 'results', 'policy', 'headers'}
local key_forms = {6}
--@keys end

local id = ARGV[1]
local err = kind_error(id)
if err then return err end
_, err = queue_prefix({'job', 'errors', 'progress', 'results', 'policy', 'headers'}, id)
if err then return err end
err = no_options_error(2)
if err then return err end
for i = 1, #KEYS do
  err = type_error(KEYS[i], 'hash')
  if err then return err end
end

local reply = {redis.call('HGETALL', KEYS[1])}
for i = 2, #KEYS do
  reply[i] = redis.call('HGET', KEYS[i], id)
end
return reply
