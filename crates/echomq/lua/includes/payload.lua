--[[ A job's payload as the transitions that make jobs take it (ENQUEUE,
ENQUEUEMANY, BATCH's callback, FIRE): present, and at most MAX_PAYLOAD
bytes (the core's twin: `MAX_PAYLOAD` in crates/echomq-core/src/limits.rs).
]]
--@include common

-- nil when `payload` will do, else the error reply to return.
local function payload_error(payload)
  if payload == nil then
    return emq_error('EMQARG', 'payload is missing')
  end
  if #payload > MAX_PAYLOAD then
    return emq_error('EMQSIZE', 'payload exceeds ' .. MAX_PAYLOAD .. ' bytes')
  end
end
