--[[ The claim itself, shared by CLAIM and ACKNEXT: take the head of pending,
up to `count` jobs as the gate lets through, each under a new lease. The
order of checks and writes is the core's `Claim::apply`
(crates/echomq-core/src/transition/claim.rs).
pending_head(pending, count, prefix) reads the head of pending where the
call checks pending's type, before any other key's: its first `count` ids
(head.ids; on a queue with groups, those of the default group), whether
more wait behind them (head.more) and `<q>group`'s type (head.group_type),
or nil and an error reply.
claim_jobs(k, prefix, lease, count, head) takes the keys by name, k.pending,
k.active, k.config, k.rate, k.policy, and the optional k.events,
k.headers and k.wake (false: not passed), and the head, which may carry
head.records, each record's attempts and payload already read and checked
(ACKNEXT's, before its ack), not read again. It returns CLAIM's reply, or
an error reply before its first write.
]]
--@include records
--@include gate
--@include events
--@include wake
--@include fair
--@include last_first

-- Only a queue with jobs of their own policy (or headers) has the key: one
-- lookup each, its type as the call first found it (nothing before a claim
-- creates it; an ACKNEXT's ack may empty it, and HGET then finds nothing).
local function side_hash(key)
  if not key then return false end
  local err = type_error(key, 'hash')
  if err then return nil, err end
  return typed[key] == 'hash'
end

-- One id more than asked for tells whether more wait. ZRANGE is also the
-- type check (read_error); its numbers go as digits (see claim_jobs). On a
-- queue with groups (`<q>group` a hash: its type asked here, checked where
-- the claim checks it), the head below the grouped jobs: the default
-- group's (PROTOCOL.md §7.9), all a fair claim takes from pending's head,
-- so that its plan does not read it again.
local function pending_head(pending, count, prefix)
  local group = prefix .. 'group'
  typed[group] = typed[group] or redis.call('TYPE', group)['ok']
  local ids
  if typed[group] == 'hash' then
    ids = redis.pcall('ZRANGE', pending, '-inf', string.format('%d', UNGROUPED_MAX), 'BYSCORE', 'LIMIT', '0',
      string.format('%d', count + 1))
  else
    ids = redis.pcall('ZRANGE', pending, '0', string.format('%d', count))
  end
  local err = read_error(ids, pending, 'zset')
  if err then return nil, err end
  local more = #ids > count
  if more then ids[count + 1] = nil end
  return {ids = ids, more = more, group_type = typed[group]}
end

-- Each record's attempts must be an integer (EMQDATA), checked before
-- the claim's first write.
local function claimed_records_error(prefix, ids, records)
  for i, id in ipairs(ids) do
    local _, err = attempts_of(prefix .. 'job:' .. id, records[i][2])
    if err then return err end
  end
end

local function claim_jobs(k, prefix, lease, count, head)
  -- Types first, then the gate's settings.
  local policies, headers, err
  policies, err = side_hash(k.policy)
  if err then return err end
  headers, err = side_hash(k.headers)
  if err then return err end
  local room, held, log
  room, held, log, err = gate(k.config, k.active, k.rate, count)
  if err then return err end
  local keep
  keep, err = events_keep(k.events, k.config, events_setting)
  if err then return err end
  if k.wake then
    err = type_error(k.wake, 'zset')
    if err then return err end
  end
  local claimed, logged = {}, {}
  local ids, records = {}, {}
  local grouped
  grouped, err = grouping(prefix, true)
  if err then return err end
  local plan = head.plan
  if grouped and not plan then
    plan, err = fair_lib().plan(prefix, k.pending, room, log and log.now or now_ms(), false, head)
    if err then return err end
  end
  if plan then
    for i, id in ipairs(plan.ids) do
      ids[i] = id
      if head.records then records[i] = head.records[i] end
    end
  else
    for i = 1, math.min(room, #head.ids) do
      ids[i] = head.ids[i]
      if head.records then records[i] = head.records[i] end
    end
  end
  if #ids == 0 and not plan then
    spend(k.rate, log, logged)
    -- The trailer says a limit held back jobs pending holds (or a pause).
    if held and (held == -1 or #head.ids > 0) then claimed[1] = held end
    return claimed
  end
  if #ids > 0 and not head.records then
    records, err = read_records(prefix, ids, 'state', 'attempts', 'payload')
    err = err or claimed_records_error(prefix, ids, records)
    if err then return err end
  end
  if #ids > 0 then redis.call('ZREM', k.pending, unpack(ids)) end
  local left = head.more or #head.ids > #ids

  -- One moment for the whole claim: the gate's, when it read the clock.
  -- Every job taken goes into active in one ZADD, after the loop, the
  -- last first (scored_last_first).
  -- Numbers go to Redis as the strings of their digits: a Lua number
  -- would be printed with '%.17g', each its own float formatting.
  local deadline = string.format('%d', (log and log.now or now_ms()) + lease)
  local taken = {}
  for i, id in ipairs(ids) do
    local attempts, payload = records[i][2], records[i][3]
    if attempts then
      local token = tonumber(attempts) + 1
      local digits = string.format('%d', token)
      redis.call('HSET', prefix .. 'job:' .. id, 'state', 'active', 'attempts', digits)
      taken[#taken + 1] = id
      local job = {id, token, payload}
      local policy = policies and redis.call('HGET', k.policy, id)
      local held_headers = headers and redis.call('HGET', k.headers, id)
      if held_headers then
        -- false stands for a nil policy: a Lua array ends at its first nil.
        job[4], job[5] = policy or false, held_headers
      elseif policy then
        job[4] = policy
      end
      claimed[#claimed + 1] = job
      local event = emit(k.events, keep, 'active', id, 'attempt', digits)
      -- The rate log names the claim at its event's time, so that the two
      -- logs agree on when it happened (PROTOCOL.md §7.1; includes/gate).
      if log then
        logged[#logged + 1] = {id .. ':' .. digits, event and tonumber(string.match(event, '^%d+'))}
      end
      -- A group's claims, by id: its lease, and its rate log's entry (made
      -- only for a group with a rate: a claim's strings cost every job).
      if plan then
        plan.tokens[id] = digits
        if plan.events then plan.events[id] = event or false end
      end
    end
  end
  if #taken > 0 then redis.call('ZADD', k.active, unpack(scored_last_first(deadline, taken))) end
  spend(k.rate, log, logged)
  if plan then
    fair_lib().write(prefix, plan, deadline)
    -- What a claim could take now, as the plan found: the default group's
    -- head, or a group ready.
    left = plan.more
  end
  -- Jobs left that the gate would let through: the next waiting claim
  -- takes them (a chain, one claimer woken at a time).
  if #claimed > 0 and not held and left then
    wake(k.wake)
  end
  if plan then
    -- A group's rate that held back jobs says when it frees, as the queue's does.
    if not held and #claimed < room then
      local wait = redis.call('ZRANGE', prefix .. 'gwait', '0', '0', 'WITHSCORES')
      if wait[1] then held = math.max(tonumber(wait[2]) - plan.now, 1) end
    end
    if held then left = held == -1 or redis.call('ZCARD', k.pending) > 0 end
  end
  if held and left then claimed[#claimed + 1] = held end
  return claimed
end
