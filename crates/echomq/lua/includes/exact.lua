--[[ A partitioned queue's exact limits, as its definition holds them
(protocol 1.8, PROTOCOL.md §7.10): PERMIT's and RENEW's one read of it.

exact_limits(key) reads `rate`, `per`, `permits` and `concurrency` in one
HMGET and checks each, in that order; it answers a table: `rate` and
`per` when an exact rate is set (a `rate` missing or 0 is none),
`concurrency` when one is set (missing or 0, none), `issued`, the last
permit's number (0 for none), and `hold`, how long a claim may run after
its permits' grant: a tenth of the period, or RUNNING_HOLD_MS without a
rate. Or nil and the EMQDATA error.
]]
--@include common
local function exact_limits(key)
  local read = redis.call('HMGET', key, 'rate', 'per', 'permits', 'concurrency')
  local values, err = {}, nil
  for i, field in ipairs({'rate', 'per', 'permits', 'concurrency'}) do
    values[i], err = stored(read[i], key, field)
    if err then return nil, err end
  end
  local rate, per, issued, concurrency = values[1], values[2], values[3], values[4]
  if issued and issued < 0 then return nil, malformed(key, 'permits', '0 or more') end
  local exact = {issued = issued or 0, hold = RUNNING_HOLD_MS}
  if rate and rate ~= 0 then
    if rate < 0 or rate > RATE_MAX then return nil, malformed(key, 'rate', '0 to ' .. RATE_MAX) end
    if not per then return nil, malformed(key, 'per', 'set beside rate') end
    if per < EXACT_PERIOD_MS_MIN or per > EXACT_PERIOD_MS_MAX then
      return nil, malformed(key, 'per', EXACT_PERIOD_MS_MIN .. ' to ' .. EXACT_PERIOD_MS_MAX .. ' ms')
    end
    exact.rate, exact.per, exact.hold = rate, per, math.floor(per / 10)
  end
  if concurrency and concurrency ~= 0 then
    if concurrency < 0 or concurrency > EXACT_CONCURRENCY_MAX then
      return nil, malformed(key, 'concurrency', '0 to ' .. EXACT_CONCURRENCY_MAX)
    end
    exact.concurrency = concurrency
  end
  return exact
end
