--[[ A claim's fair choice among a queue's groups (protocol 1.7, PROTOCOL.md
§7.9; the core's twin is crates/echomq-core/src/transition/fair.rs):
start-time fair queueing over the groups a claim may take from and the
default group (the ungrouped jobs), planned on reads alone, then written
once the claim's every check has passed.
fair_lib().plan(prefix, pending, room, now, ending, head) returns the plan
(plan.ids: the ids in the order taken) or nil and an error reply;
fair_lib().write(prefix, plan, deadline) writes it after the claim's own
writes, which put in plan.tokens and plan.events each job claimed, by id:
its token's digits and its `active` event's id (false: none). Both made
on a claim's first use, as group_lib's functions are.
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

  -- Byte order (Lua's `<` on strings follows the server's locale).
  local function bytes_less(a, b)
    for at = 1, math.min(#a, #b) do
      local x, y = string.byte(a, at), string.byte(b, at)
      if x ~= y then return x < y end
    end
    return #a < #b
  end

  -- A candidate {tag, grouped (0 or 1), name, at}: least tag, then the
  -- default group, then by name.
  local function before(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    if a[2] ~= b[2] then return a[2] < b[2] end
    if a[3] ~= b[3] then return bytes_less(a[3], b[3]) end
    return a[4] < b[4]
  end

  -- A binary heap of candidates.
  local function heap_push(heap, item)
    heap[#heap + 1] = item
    local i = #heap
    while i > 1 do
      local parent = math.floor(i / 2)
      if not before(heap[i], heap[parent]) then break end
      heap[i], heap[parent] = heap[parent], heap[i]
      i = parent
    end
  end

  local function heap_pop(heap)
    local n = #heap
    if n == 0 then return nil end
    local top = heap[1]
    heap[1] = heap[n]
    heap[n] = nil
    n = n - 1
    local i = 1
    while true do
      local l, r, least = 2 * i, 2 * i + 1, i
      if l <= n and before(heap[l], heap[least]) then least = l end
      if r <= n and before(heap[r], heap[least]) then least = r end
      if least == i then break end
      heap[i], heap[least] = heap[least], heap[i]
      i = least
    end
    return top
  end

  -- The looked-at group's next pending id; an id no longer in <q>pending is
  -- passed over (and removed when written), and the group's pending jobs
  -- are counted anew. (One ZMSCORE for a group's ids measured no cheaper,
  -- and SECURITY.md's worker ACL has no +zmscore.)
  local function next_id(prefix, pending, looked)
    while looked.next <= #looked.queue do
      local id = looked.queue[looked.next]
      looked.next = looked.next + 1
      if redis.call('ZSCORE', pending, id) then return id end
      looked.stale[#looked.stale + 1] = id
      local held = redis.call('ZCARD', prefix .. 'gpending:' .. looked.group)
      looked.load.pending = math.max(held - #looked.stale - #looked.taken, 0)
    end
    return nil
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

  -- What a claim reads of a group: its settings and its own next tag (the
  -- fields of <q>groups the plan read, `text` and `tag_text`), then the
  -- types of the keys the claim touches (its pending set, read: its first
  -- `window` ids unless it is paused; its leases, counted when it has a
  -- cap; its rate log with a rate), then the tag checked. Returns the
  -- settings, the tag, the ids and the running count, or nil and an error.
  local function claim_fields(prefix, group, window, text, tag_text)
    local groups = prefix .. 'groups'
    local s = SETTINGS_DEFAULT
    if text then
      s = parse_settings(text)
      if not s then return nil, malformed(groups, 'set:' .. group, "a group's settings") end
    end
    local gpending, gactive = prefix .. 'gpending:' .. group, prefix .. 'gactive:' .. group
    local ids, running, err = {}, 0, nil
    if s.paused then
      err = type_error(gpending, 'zset')
    else
      ids, err = checked_read(gpending, 'zset', 'ZRANGE', gpending, '0', string.format('%d', window - 1))
    end
    if err then return nil, err end
    if s.cap then
      running, err = checked_read(gactive, 'zset', 'ZCARD', gactive)
    else
      err = type_error(gactive, 'zset')
    end
    err = err or (s.rate and type_error(prefix .. 'grate:' .. group, 'zset'))
    if err then return nil, err end
    local own
    own, err = stored(tag_text, groups, 'tag:' .. group)
    if err then return nil, err end
    return {s = s, tag = math.max(own or 0, 0), ids = ids, running = running}
  end

  -- The groups a claim looks at, each {name, its score in <q>ready or
  -- false, whether it is in <q>gwait}: the first `room` of the index, those
  -- of <q>gwait whose window freed (at most GROUP_WAKE), and the group
  -- `ending` (ACKNEXT's acked job's); with no room, only the ending group.
  -- Also whether the index holds groups past those, or nil and an error.
  local function candidates(prefix, room, now, ending)
    local ready, wait = prefix .. 'ready', prefix .. 'gwait'
    local names, listed, more = {}, {}, false
    local head, due, err
    if room > 0 then
      head, err = checked_read(ready, 'zset', 'ZRANGE', ready, '0', string.format('%d', room), 'WITHSCORES')
      if err then return nil, nil, err end
      due, err = checked_read(wait, 'zset', 'ZRANGE', wait, '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', '0',
        string.format('%d', WAKE_LIMIT))
      if err then return nil, nil, err end
      more = #head > 2 * room
      for i = 1, math.min(#head, 2 * room), 2 do
        names[#names + 1] = {head[i], math.max(tonumber(head[i + 1]), 0), false}
        listed[head[i]] = true
      end
      for _, group in ipairs(due) do
        if not listed[group] then
          names[#names + 1] = {group, false, true}
          listed[group] = true
        end
      end
    else
      err = type_error(ready, 'zset') or type_error(wait, 'zset')
      if err then return nil, nil, err end
    end
    if ending and not listed[ending] then
      local score = redis.call('ZSCORE', ready, ending)
      local tag = score and math.max(tonumber(score), 0) or false
      names[#names + 1] = {ending, tag, not tag and redis.call('ZSCORE', wait, ending) ~= false}
    end
    return names, more
  end

  -- `head`: the head of pending below the grouped jobs (pending_head's,
  -- includes/claim), the default group's ids.
  local function fair_plan(prefix, pending, room, now, ending, head)
    local plan = {ids = {}, of = {}, looked = {}, now = now, tokens = {}, events = {}}
    local groups = prefix .. 'groups'
    -- The groups looked at first, so that one HMGET of <q>groups reads the
    -- clock and their fields; the errors told in the order §7.9 gives.
    local names, more, named_err = candidates(prefix, room, now, ending)
    local fields = {'vtime', 'tag:'}
    for _, named in ipairs(names or {}) do
      fields[#fields + 1] = 'set:' .. named[1]
      fields[#fields + 1] = 'tag:' .. named[1]
    end
    local clock, err = checked_read(groups, 'hash', 'HMGET', groups, unpack(fields))
    if err then return nil, err end
    local vtime, default_tag
    vtime, err = stored(clock[1], groups, 'vtime')
    if err then return nil, err end
    default_tag, err = stored(clock[2], groups, 'tag:')
    if err then return nil, err end
    if named_err then return nil, named_err end
    vtime, default_tag = math.max(vtime or 0, 0), math.max(default_tag or 0, 0)
    local heap = {}
    -- The default group: the head of pending below the grouped jobs.
    local default = {}
    if room > 0 then
      for i = 1, math.min(#head.ids, room) do default[i] = head.ids[i] end
    end
    plan.more = room > 0 and (#head.ids > room or head.more)
    default_tag = math.max(default_tag, vtime)
    local next_default = 1
    if #default > 0 then heap_push(heap, {default_tag, 0, '', 0}) end
    plan.more = plan.more or more
    for i, named in ipairs(names) do
      local group, in_ready = named[1], named[2]
      local f
      f, err = claim_fields(prefix, group, room + 1, clock[2 * i + 1], clock[2 * i + 2])
      if err then return nil, err end
      local running = f.running
      if group == ending then running = math.max(running - 1, 0) end
      local load = group_load_counted(prefix, group, f.s, now, #f.ids, running)
      -- A group in the index starts at its score there; one entering it at
      -- its own next tag or the virtual time, whichever is later.
      local looked = {group = group, s = f.s, load = load, taken = {}, stale = {},
        tag = in_ready or math.max(f.tag, vtime), queue = f.ids, next = 1,
        was_ready = in_ready ~= false, was_waiting = named[3]}
      plan.looked[#plan.looked + 1] = looked
      if standing(f.s, load) == 'ready' then heap_push(heap, {looked.tag, 1, group, #plan.looked}) end
    end
    while #plan.ids < room do
      local top = heap_pop(heap)
      if not top then break end
      local tag, at = top[1], top[4]
      if top[2] == 0 then
        local id = default[next_default]
        next_default = next_default + 1
        plan.vtime = tag
        default_tag = tag + UNIT
        plan.default_tag = default_tag
        local n = #plan.ids + 1
        plan.ids[n], plan.of[n] = id, false
        if default[next_default] then heap_push(heap, {default_tag, 0, '', 0}) end
      else
        local looked = plan.looked[at]
        -- nil: what it read of its set was passed over, all of it.
        local id = next_id(prefix, pending, looked)
        if id then
          plan.vtime = tag
          looked.tag = tag + math.floor(UNIT / looked.s.weight)
          looked.load.pending = looked.load.pending - 1
          looked.load.running = looked.load.running + 1
          looked.load.logged = looked.load.logged + 1
          looked.taken[#looked.taken + 1] = id
          local n = #plan.ids + 1
          plan.ids[n], plan.of[n] = id, at
          if standing(looked.s, looked.load) == 'ready' then
            heap_push(heap, {looked.tag, 1, looked.group, at})
          end
        end
      end
    end
    -- What a claim could take once this one is written: the default
    -- group's jobs left, or a group standing in <q>ready.
    plan.more = plan.more or default[next_default] ~= nil
    for _, looked in ipairs(plan.looked) do
      plan.more = plan.more or standing(looked.s, looked.load) == 'ready'
    end
    return plan
  end

  -- A looked-at group to where it stands after the claim.
  local function fair_place(prefix, plan, looked)
    local ready, wait = prefix .. 'ready', prefix .. 'gwait'
    local group = looked.group
    local moved = #looked.taken > 0
    local where, frees = standing(looked.s, looked.load)
    if where == 'ready' then
      if looked.was_waiting then redis.call('ZREM', wait, group) end
      if moved or not looked.was_ready then redis.call('ZADD', ready, string.format('%d', looked.tag), group) end
    elseif where == 'limited' then
      if moved then frees = math.max(frees, plan.now + 1) end
      if looked.was_ready then redis.call('ZREM', ready, group) end
      redis.call('ZADD', wait, string.format('%d', frees), group)
    else
      if looked.was_ready then redis.call('ZREM', ready, group) end
      if looked.was_waiting then redis.call('ZREM', wait, group) end
    end
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

  local function fair_write(prefix, plan, deadline)
    local groups = prefix .. 'groups'
    -- plan.tokens: each job claimed, by id, its token's digits; an id whose
    -- record was missing was not claimed, and holds no lease.
    local claimed = plan.tokens
    local tags = {}
    for _, looked in ipairs(plan.looked) do
      local group = looked.group
      local gone = {}
      for _, id in ipairs(looked.stale) do gone[#gone + 1] = id end
      for _, id in ipairs(looked.taken) do gone[#gone + 1] = id end
      if #gone > 0 then redis.call('ZREM', prefix .. 'gpending:' .. group, unpack(gone)) end
      if #looked.taken > 0 then
        local leases = {}
        for _, id in ipairs(looked.taken) do
          if claimed[id] then leases[#leases + 1] = id end
        end
        if #leases > 0 then
          redis.call('ZADD', prefix .. 'gactive:' .. group, unpack(scored_last_first(deadline, leases)))
        end
        if looked.s.rate then
          local log = prefix .. 'grate:' .. group
          if #looked.load.expired > 0 then redis.call('ZREM', log, unpack(looked.load.expired)) end
          local edge = math.max(plan.now - looked.s.per, 0)
          for _, id in ipairs(leases) do
            -- At its event's time, as CLAIM logs one in <q>rate (includes/claim).
            local event = plan.events[id]
            local at = event and tonumber(string.match(event, '^%d+'))
            log_claim(log, edge, id .. ':' .. claimed[id], math.max(at or plan.now, plan.now))
          end
        end
        tags[#tags + 1] = 'tag:' .. group
        tags[#tags + 1] = string.format('%d', looked.tag)
      end
      fair_place(prefix, plan, looked)
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
    if #tags > 0 then redis.call('HSET', groups, unpack(tags)) end
  end

  fair_lib_made = {plan = fair_plan, write = fair_write}
  return fair_lib_made
end
