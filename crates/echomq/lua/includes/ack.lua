--[[ ACK's option and its writes, shared by ACK and ACKNEXT (the core's
`Ack`, crates/echomq-core/src/transition/lease.rs).
ack_result(given, value) checks RESULT's bytes: given is the RESULT already
read, if any; it returns the bytes, or nil and an error reply.
ack_job(id, result, keep) finishes the job with KEYS[1..5] as ACK names them
(job, active, done, results, events), after every check.
]]
--@include events

local function ack_result(given, value)
  if given then return nil, emq_error('EMQARG', 'RESULT given twice') end
  if value == nil then return nil, emq_error('EMQARG', 'RESULT is missing its bytes') end
  if #value > MAX_RESULT then
    return nil, emq_error('EMQSIZE', 'result exceeds ' .. MAX_RESULT .. ' bytes')
  end
  return value
end

local function ack_job(id, result, keep)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HSET', KEYS[1], 'state', 'done')
  redis.call('ZADD', KEYS[3], now_ms(), id)
  if result then
    redis.call('HSET', KEYS[4], id, result)
    emit(KEYS[5], keep, 'completed', id, 'result_bytes', #result)
  else
    emit(KEYS[5], keep, 'completed', id)
  end
end
