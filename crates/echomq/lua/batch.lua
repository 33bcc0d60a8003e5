--[[ BATCH: open a batch of jobs already enqueued, with a callback job that
SETTLE enqueues once every one of them has finished (PROTOCOL.md §7.7).

batches_key     emq:{q}:batches    (hash) <batch> -> <total> <cursor> <done> <dead>
                                   <cancelled> <gone> <callback id>;
                                   <batch>:callback -> the callback's payload
batch_jobs_key  emq:{q}:batch_jobs (hash) <batch>:<n> -> the batch's nth job, n from 0
batch_open_key  emq:{q}:batch_open (zset) the open batches, score = creation (or when a SETTLE
                                   passed the batch over), server ms
ARGV[1]  batch: its id, 1 to 200 bytes of letters, digits, _, -, . and :,
         not ending in :callback
ARGV[2]  callback: the callback job's id
ARGV[3]  payload: the callback's payload, at most MAX_PAYLOAD bytes
ARGV[4..] the batch's job ids, 1 to 1000
Reply    1 opened, 0 a batch of this id is open already (nothing changed)
Errors   EMQKIND, EMQARG, EMQSIZE, EMQTYPE, EMQVERSION, EMQDATA
]]
--@include payload

--@keys BATCH's KEYS by role (generated from its description: ECHOMQ_BLESS=1 cargo build -p echomq)
local batches_key = KEYS[1]
local batch_jobs_key = KEYS[2]
local batch_open_key = KEYS[3]
local key_names = {'batches', 'batch_jobs', 'batch_open'}
local key_forms = {3}
--@keys end

local _, err = queue_prefix(key_names, nil, key_forms)
if err then return err end
local batch = ARGV[1]
-- Not ending in :callback, the field of another batch's callback payload.
if batch == nil or #batch == 0 or #batch > MAX_BATCH_ID or string.find(batch, '[^%w_%-%.:]')
    or string.sub(batch, -9) == ':callback' then
  return emq_error('EMQARG', 'batch id must be 1 to ' .. MAX_BATCH_ID
    .. ' bytes of letters, digits, _, -, . and :, and not end in :callback')
end
local callback = ARGV[2]
err = kind_error(callback)
if err then return err end
local payload = ARGV[3]
err = payload_error(payload)
if err then return err end
local total = #ARGV - 3
if total < BATCH_SIZE_MIN or total > BATCH_SIZE_MAX then
  return emq_error('EMQARG', 'a batch has ' .. BATCH_SIZE_MIN .. ' to ' .. BATCH_SIZE_MAX .. ' jobs')
end
for i = 4, #ARGV do
  err = kind_error(ARGV[i])
  if err then return err end
end
err = type_error(batches_key, 'hash') or type_error(batch_jobs_key, 'hash')
  or type_error(batch_open_key, 'zset')
if err then return err end

if redis.call('HEXISTS', batches_key, batch) == 1 then return 0 end
redis.call('HSET', batches_key, batch, total .. ' 0 0 0 0 0 ' .. callback, batch .. ':callback', payload)
local fields = {}
for i = 4, #ARGV do
  fields[#fields + 1] = batch .. ':' .. (i - 4)
  fields[#fields + 1] = ARGV[i]
end
redis.call('HSET', batch_jobs_key, unpack(fields))
redis.call('ZADD', batch_open_key, now_ms(), batch)
return 1
