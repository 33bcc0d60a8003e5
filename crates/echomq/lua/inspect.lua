--[[ INSPECT: read one job's record, its last error, its last progress, its
result, its own policy, its headers and its group. Writes nothing.

job_key       emq:{q}:job:<id>   the record (hash)
errors_key    emq:{q}:errors     (hash)
progress_key  emq:{q}:progress   (hash)
results_key   emq:{q}:results    (hash)
policy_key    emq:{q}:policy     (hash)
headers_key   emq:{q}:headers    (hash)
group_key     emq:{q}:group      (hash) id -> the job's group (protocol 1.7):
                                 a call may leave it off
ARGV[1]  id: the job id
Reply    [record, error, progress, result, policy, headers(, group)]: the
         record as a flat field/value array (empty when there is no such
         job), then the id's entry in each of the other keys, or nil: as
         many elements as keys.
Errors   EMQKIND, EMQARG, EMQTYPE
]]
--@include common
--@include job_call

--@keys INSPECT's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local job_key = KEYS[1]
local errors_key = KEYS[2]
local progress_key = KEYS[3]
local results_key = KEYS[4]
local policy_key = KEYS[5]
local headers_key = KEYS[6]
local group_key = KEYS[7] -- nil unless the call sends 7 keys
local key_names = {'job', 'errors', 'progress', 'results', 'policy', 'headers', 'group'}
local key_forms = {6, 7}
--@keys end

local id, _, err = job_call(key_names, key_forms)
if err then return err end
err = type_error(job_key, 'hash') or type_error(errors_key, 'hash') or type_error(progress_key, 'hash')
  or type_error(results_key, 'hash') or type_error(policy_key, 'hash') or type_error(headers_key, 'hash')
  or (group_key and type_error(group_key, 'hash'))
if err then return err end

local reply = {redis.call('HGETALL', job_key), redis.call('HGET', errors_key, id),
  redis.call('HGET', progress_key, id), redis.call('HGET', results_key, id), redis.call('HGET', policy_key, id),
  redis.call('HGET', headers_key, id)}
if group_key then reply[7] = redis.call('HGET', group_key, id) end
return reply
