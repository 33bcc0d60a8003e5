--[[ A claim's fair choice among a queue's groups (protocol 1.7, PROTOCOL.md
§7.9; the core's twin is crates/echomq-core/src/transition/fair.rs):
start-time fair queueing over the groups a claim may take from and the
default group (the ungrouped jobs), planned on reads alone, then written
once the claim's every check has passed.
fair_lib().plan(prefix, pending, room, now, ending, head) returns the plan
(plan.ids: the ids in the order taken) or nil and an error reply;
fair_lib().write(prefix, plan, deadline) writes it after the claim's own
writes, which put in plan.tokens each job claimed, by id, its token's
digits, and in plan.events (there when a group looked at has a rate) its
`active` event's id (false: none). Both made on a claim's first use, as
group_lib's functions are.
On a grouped queue a claim of one job spends as much on its tables,
strings and closures as on its Redis calls (bench/claim_sections.py: a
table costs about half a call, a closure a fifth), so the plan keeps one
table for each group it looks at, which is also the group's load
(group_core's load_counted), and names its candidates by number.
]]
--@include forget
--@include last_first

-- Made on a claim's first use, as group_lib's functions are.
local fair_lib_made = nil
local function fair_lib()
  if fair_lib_made then return fair_lib_made end
  local G = group_core()
  local group_load_counted, standing, parse_settings = G.load_counted, G.standing, G.parse
  local SETTINGS_DEFAULT = G.defaults
  local WAKE_LIMIT = GROUP_WAKE

  -- Candidates are numbers: 0 the default group (at plan.default_at, its
  -- tag), i the i-th group looked at (plan.looked[i], at its .tag). Least
  -- tag first, then the default group, then the group whose name sorts
  -- first in bytes (Lua's `<` on strings follows the server's locale).
  local function before(plan, a, b)
    local looked = plan.looked
    local x = a == 0 and plan.default_at or looked[a].tag
    local y = b == 0 and plan.default_at or looked[b].tag
    if x ~= y then return x < y end
    if a == 0 or b == 0 then return a == 0 end
    x, y = looked[a].group, looked[b].group
    for at = 1, math.min(#x, #y) do
      local p, q = string.byte(x, at), string.byte(y, at)
      if p ~= q then return p < q end
    end
    if #x ~= #y then return #x < #y end
    return a < b
  end

  -- A binary heap of candidates, each in it at most once.
  local function heap_push(plan, heap, item)
    heap[#heap + 1] = item
    local i = #heap
    while i > 1 do
      local parent = math.floor(i / 2)
      if not before(plan, heap[i], heap[parent]) then break end
      heap[i], heap[parent] = heap[parent], heap[i]
      i = parent
    end
  end

  local function heap_pop(plan, heap)
    local n = #heap
    if n == 0 then return nil end
    local top = heap[1]
    heap[1] = heap[n]
    heap[n] = nil
    n = n - 1
    local i = 1
    while true do
      local l, r, least = 2 * i, 2 * i + 1, i
      if l <= n and before(plan, heap[l], heap[least]) then least = l end
      if r <= n and before(plan, heap[r], heap[least]) then least = r end
      if least == i then break end
      heap[i], heap[least] = heap[least], heap[i]
      i = least
    end
    return top
  end

  -- A key a claim reads with redis.pcall when it reads it (read_error), or
  -- checks the type of when it does not.
  local function checked_read(key, want, ...)
    if select('#', ...) == 0 then return nil, type_error(key, want) end
    local reply = redis.pcall(...)
    local err = read_error(reply, key, want)
    if err then return nil, err end
    return reply
  end

  -- The groups a claim looks at, into plan.looked, each {group = its name,
  -- tag = its score in <q>ready or false, was_ready, was_waiting}: the
  -- first `room` of the index, those of <q>gwait whose window freed (at
  -- most GROUP_WAKE), and the group `ending` (ACKNEXT's acked job's); with
  -- no room, only the ending group. Sets plan.more when the index holds
  -- groups past those. An error reply when a key's type is wrong.
  local function candidates(plan, room, now, ending)
    local looked, ready, wait = plan.looked, plan.ready, plan.wait
    local listed = nil
    if room > 0 then
      local head, due, err
      head, err = checked_read(ready, 'zset', 'ZRANGE', ready, '0', string.format('%d', room), 'WITHSCORES')
      if err then return err end
      due, err = checked_read(wait, 'zset', 'ZRANGE', wait, '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT',
        '0', string.format('%d', WAKE_LIMIT))
      if err then return err end
      plan.more = #head > 2 * room
      for i = 1, math.min(#head, 2 * room), 2 do
        looked[#looked + 1] = {group = head[i], tag = math.max(tonumber(head[i + 1]), 0), was_ready = true}
      end
      if #due > 0 or ending then
        listed = {}
        for _, named in ipairs(looked) do listed[named.group] = true end
      end
      for _, group in ipairs(due) do
        if not listed[group] then
          looked[#looked + 1] = {group = group, tag = false, was_ready = false, was_waiting = true}
          listed[group] = true
        end
      end
    else
      local err = type_error(ready, 'zset') or type_error(wait, 'zset')
      if err then return err end
    end
    if ending and not (listed and listed[ending]) then
      local score = redis.call('ZSCORE', ready, ending)
      local tag = score and math.max(tonumber(score), 0) or false
      looked[#looked + 1] = {group = ending, tag = tag, was_ready = tag ~= false,
        was_waiting = not tag and redis.call('ZSCORE', wait, ending) ~= false}
    end
  end

  -- What a claim reads of a group looked at, after its settings and own
  -- next tag (`text`, `tag_text`, the fields of <q>groups the plan read,
  -- `vtime` the queue's virtual time):
  -- the types of the keys the claim touches (its pending set, read: its
  -- first `window` ids unless it is paused; its leases, counted when it
  -- has a cap; its rate log with a rate), then the tag checked. Fills in
  -- the group's settings (s), its keys, its ids (queue) and its load; an
  -- error reply when one does not read.
  local function claim_fields(prefix, plan, looked, window, now, ending, vtime, text, tag_text)
    local group = looked.group
    local s = SETTINGS_DEFAULT
    if text then
      s = parse_settings(text)
      if not s then return malformed(prefix .. 'groups', 'set:' .. group, "a group's settings") end
    end
    local gpending, gactive = prefix .. 'gpending:' .. group, prefix .. 'gactive:' .. group
    local ids, running, err = {}, 0, nil
    if s.paused then
      err = type_error(gpending, 'zset')
    else
      ids, err = checked_read(gpending, 'zset', 'ZRANGE', gpending, '0', string.format('%d', window - 1))
    end
    if err then return err end
    if s.cap then
      running, err = checked_read(gactive, 'zset', 'ZCARD', gactive)
    else
      err = type_error(gactive, 'zset')
    end
    err = err or (s.rate and type_error(prefix .. 'grate:' .. group, 'zset'))
    if err then return err end
    local own
    own, err = stored(tag_text, prefix .. 'groups', 'tag:' .. group)
    if err then return err end
    if group == ending then running = math.max(running - 1, 0) end
    looked.s, looked.gpending, looked.gactive, looked.queue, looked.next = s, gpending, gactive, ids, 1
    looked.taken = {}
    -- A rate's log names each claim at its event's time (group_write).
    if s.rate and not plan.events then plan.events = {} end
    -- A group in the index starts at its score there; one entering it at
    -- its own next tag or the virtual time, whichever is later.
    looked.tag = looked.tag or math.max(own or 0, 0, vtime)
    group_load_counted(prefix, group, s, now, #ids, running, looked)
  end

  -- The looked-at group's next pending id; an id no longer in <q>pending is
  -- passed over (and removed when written), and the group's pending jobs
  -- are counted anew. (One ZMSCORE for a group's ids measured no cheaper,
  -- and SECURITY.md's worker ACL has no +zmscore.)
  local function next_id(pending, looked)
    while looked.next <= #looked.queue do
      local id = looked.queue[looked.next]
      looked.next = looked.next + 1
      if redis.call('ZSCORE', pending, id) then return id end
      looked.stale = looked.stale or {}
      looked.stale[#looked.stale + 1] = id
      local held = redis.call('ZCARD', looked.gpending)
      looked.pending = math.max(held - #looked.stale - #looked.taken, 0)
    end
    return nil
  end

  -- `head`: the head of pending below the grouped jobs (pending_head's,
  -- includes/claim), the default group's ids.
  local function fair_plan(prefix, pending, room, now, ending, head)
    local groups = prefix .. 'groups'
    local plan = {ids = {}, looked = {}, now = now, tokens = {}, groups = groups, ready = prefix .. 'ready',
      wait = prefix .. 'gwait', more = false}
    local looked = plan.looked
    -- The groups looked at first, so that one HMGET of <q>groups reads the
    -- clock and their fields; the errors told in the order §7.9 gives.
    local named_err = candidates(plan, room, now, ending)
    local fields = {'vtime', 'tag:'}
    for i, one in ipairs(looked) do
      fields[2 * i + 1], fields[2 * i + 2] = 'set:' .. one.group, 'tag:' .. one.group
    end
    local clock, err = checked_read(groups, 'hash', 'HMGET', groups, unpack(fields))
    if err then return nil, err end
    local vtime, default_tag
    vtime, err = stored(clock[1], groups, 'vtime')
    if err then return nil, err end
    default_tag, err = stored(clock[2], groups, 'tag:')
    if err then return nil, err end
    if named_err then return nil, named_err end
    vtime = math.max(vtime or 0, 0)
    local heap = {}
    -- The default group: the head of pending below the grouped jobs.
    local default, next_default = head.ids, 1
    local defaults = room > 0 and math.min(#default, room) or 0
    plan.more = plan.more or (room > 0 and (#default > room or head.more))
    plan.default_at = math.max(default_tag or 0, 0, vtime)
    if defaults > 0 then heap_push(plan, heap, 0) end
    for i, one in ipairs(looked) do
      err = claim_fields(prefix, plan, one, room + 1, now, ending, vtime, clock[2 * i + 1], clock[2 * i + 2])
      if err then return nil, err end
      if standing(one.s, one) == 'ready' then heap_push(plan, heap, i) end
    end
    local ids = plan.ids
    while #ids < room do
      local at = heap_pop(plan, heap)
      if not at then break end
      if at == 0 then
        plan.vtime = plan.default_at
        plan.default_at = plan.default_at + UNIT
        plan.default_tag = plan.default_at
        ids[#ids + 1] = default[next_default]
        next_default = next_default + 1
        if next_default <= defaults then heap_push(plan, heap, 0) end
      else
        local one = looked[at]
        -- nil: what it read of its set was passed over, all of it.
        local id = next_id(pending, one)
        if id then
          plan.vtime = one.tag
          one.tag = one.tag + math.floor(UNIT / one.s.weight)
          one.pending = one.pending - 1
          one.running = one.running + 1
          one.logged = one.logged + 1
          one.taken[#one.taken + 1] = id
          ids[#ids + 1] = id
          if standing(one.s, one) == 'ready' then heap_push(plan, heap, at) end
        end
      end
    end
    -- What a claim could take once this one is written: the default
    -- group's jobs left, or a group standing in <q>ready.
    plan.more = plan.more or next_default <= defaults
    for _, one in ipairs(looked) do
      plan.more = plan.more or standing(one.s, one) == 'ready'
    end
    return plan
  end

  -- Log one claim in a rate log, as spend does (includes/gate).
  local function log_claim(log, edge, member, at)
    local logged, n = member, 1
    local score = redis.call('ZSCORE', log, logged)
    while score and tonumber(score) > edge do
      n = n + 1
      logged = member .. ':' .. n
      score = redis.call('ZSCORE', log, logged)
    end
    redis.call('ZADD', log, string.format('%d', at), logged)
  end

  -- A looked-at group's writes: its ids out of its pending set, its
  -- leases, its rate log.
  local function group_write(prefix, plan, one, deadline)
    local claimed, taken = plan.tokens, one.taken
    local gone = taken
    if one.stale then
      gone = {}
      for _, id in ipairs(one.stale) do gone[#gone + 1] = id end
      for _, id in ipairs(taken) do gone[#gone + 1] = id end
    end
    if #gone > 0 then redis.call('ZREM', one.gpending, unpack(gone)) end
    if #taken == 0 then return end
    -- plan.tokens: each job claimed, by id, its token's digits; an id
    -- whose record was missing was not claimed, and holds no lease.
    local leases = taken
    for i, id in ipairs(taken) do
      if not claimed[id] then
        leases = {unpack(taken, 1, i - 1)}
        for j = i + 1, #taken do
          if claimed[taken[j]] then leases[#leases + 1] = taken[j] end
        end
        break
      end
    end
    if #leases == 1 then
      redis.call('ZADD', one.gactive, deadline, leases[1])
    elseif #leases > 1 then
      redis.call('ZADD', one.gactive, unpack(scored_last_first(deadline, leases)))
    end
    if one.s.rate then
      local log = prefix .. 'grate:' .. one.group
      if #one.expired > 0 then redis.call('ZREM', log, unpack(one.expired)) end
      local edge = math.max(plan.now - one.s.per, 0)
      for _, id in ipairs(leases) do
        -- At its event's time, as CLAIM logs one in <q>rate (includes/claim).
        local event = plan.events[id]
        local at = event and tonumber(string.match(event, '^%d+'))
        log_claim(log, edge, id .. ':' .. claimed[id], math.max(at or plan.now, plan.now))
      end
    end
  end

  local function fair_write(prefix, plan, deadline)
    local ready, wait, tags = plan.ready, plan.wait, {}
    for _, one in ipairs(plan.looked) do
      local group = one.group
      group_write(prefix, plan, one, deadline)
      local moved = #one.taken > 0
      if moved then
        tags[#tags + 1] = 'tag:' .. group
        tags[#tags + 1] = string.format('%d', one.tag)
      end
      -- The group to where it stands after the claim.
      local where, frees = standing(one.s, one)
      if where == 'ready' then
        if one.was_waiting then redis.call('ZREM', wait, group) end
        if moved or not one.was_ready then redis.call('ZADD', ready, string.format('%d', one.tag), group) end
      elseif where == 'limited' then
        if moved then frees = math.max(frees, plan.now + 1) end
        if one.was_ready then redis.call('ZREM', ready, group) end
        redis.call('ZADD', wait, string.format('%d', frees), group)
      else
        if one.was_ready then redis.call('ZREM', ready, group) end
        if one.was_waiting then redis.call('ZREM', wait, group) end
      end
    end
    -- The tags moved on and the virtual time, in one write.
    if plan.default_tag then
      tags[#tags + 1] = 'tag:'
      tags[#tags + 1] = string.format('%d', plan.default_tag)
    end
    if plan.vtime then
      tags[#tags + 1] = 'vtime'
      tags[#tags + 1] = string.format('%d', plan.vtime)
    end
    if #tags > 0 then redis.call('HSET', plan.groups, unpack(tags)) end
  end

  fair_lib_made = {plan = fair_plan, write = fair_write}
  return fair_lib_made
end
