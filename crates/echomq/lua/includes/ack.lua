--[[ ACK's option and its writes, shared by ACK, ACKNEXT and ACKMANY (the
core's `Ack` and `Finish`, crates/echomq-core/src/transition/ack.rs and fenced.rs).
ack_result(given, value) checks RESULT's bytes: given is the RESULT already
read, if any; it returns the bytes, or nil and an error reply.
ack_keys_error(job, active, done, results, token) is ACK's and ACKNEXT's
last check. finish_job(record, active, done, results, events, id, result,
keep) finishes a job after every check (ACKMANY finishes many at once, with
its own finish_jobs).
]]
--@include fence
--@include events

-- ACK's and ACKNEXT's last check, in KEYS order: the sets' and results'
-- types, then the fence on the record (ACKMANY fences each job on its own).
local function ack_keys_error(job_key, active_key, done_key, results_key, token)
  return type_error(active_key, 'zset') or type_error(done_key, 'zset') or type_error(results_key, 'hash')
    or fence_error(job_key, token)
end

local function ack_result(given, value)
  if given then return nil, emq_error('EMQARG', 'RESULT given twice') end
  if value == nil then return nil, emq_error('EMQARG', 'RESULT is missing its bytes') end
  if #value > MAX_RESULT then
    return nil, emq_error('EMQSIZE', 'result exceeds ' .. MAX_RESULT .. ' bytes')
  end
  return value
end

-- Keep job `id`'s result, if any, in `results`, and emit its `completed`
-- event.
local function completed(results, events, id, result, keep)
  if result then
    redis.call('HSET', results, id, result)
    emit(events, keep, 'completed', id, 'result_bytes', string.format('%d', #result))
  else
    emit(events, keep, 'completed', id)
  end
end

-- The job `id`, whose record is at `record`, to done: out of `active`
-- into `done`, its result (if any) kept in `results`, with its `completed`
-- event (includes/events). After every check.
local function finish_job(record, active, done, results, events, id, result, keep)
  redis.call('ZREM', active, id)
  redis.call('HSET', record, 'state', 'done')
  redis.call('ZADD', done, string.format('%d', now_ms()), id)
  completed(results, events, id, result, keep)
end
