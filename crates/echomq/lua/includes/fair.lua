--[[ A claim's fair choice among a queue's groups (protocol 1.7, PROTOCOL.md
§7.9; the core's twin is crates/echomq-core/src/transition/fair.rs):
start-time fair queueing over the groups a claim may take from and the
default group (the ungrouped jobs), planned on reads alone, then written
once the claim's every check has passed.
fair_lib().plan(prefix, pending, room, now, ending) returns the plan
(plan.ids: the ids in the order taken) or nil and an error reply;
fair_lib().write(prefix, plan, deadline, logged) writes it after the
claim's own writes, `logged` being each claim's {`<id>:<token>`, event ms
or nil} in the plan's order. Both made on a claim's first use, as
group_lib's functions are.
]]
--@include forget

-- Made on a claim's first use, as group_lib's functions are.
local fair_lib_made = nil
local function fair_lib()
  if fair_lib_made then return fair_lib_made end
  local G = group_lib()
  local group_tag, group_settings, group_load, standing = G.tag, G.settings, G.load, G.standing
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

  -- The looked-at group's next pending id, reading its set on first use; an
  -- id no longer in <q>pending is passed over (and removed when written).
  local function next_id(prefix, pending, looked, room)
    if not looked.read then
      looked.read = true
      local ids = redis.call('ZRANGE', prefix .. 'gpending:' .. looked.group, 0, room - 1)
      local queue, stale = {}, {}
      for _, id in ipairs(ids) do
        if redis.call('ZSCORE', pending, id) then queue[#queue + 1] = id else stale[#stale + 1] = id end
      end
      looked.stale = stale
      looked.load.pending = math.max(looked.load.pending - #stale, 0)
      looked.queue, looked.next = queue, 1
    end
    local id = looked.queue[looked.next]
    if id then looked.next = looked.next + 1 end
    return id
  end

  local function fair_plan(prefix, pending, room, now, ending)
    local plan = {ids = {}, of = {}, looked = {}, now = now}
    local vtime, err = group_tag(prefix, 'vtime')
    if err then return nil, err end
    local heap = {}
    local default = {}
    if room > 0 then
      default = redis.call('ZRANGE', pending, '-inf', UNGROUPED_MAX, 'BYSCORE', 'LIMIT', 0, room)
    end
    local default_tag
    default_tag, err = group_tag(prefix, 'tag:')
    if err then return nil, err end
    default_tag = math.max(default_tag, vtime)
    local next_default = 1
    if #default > 0 then heap_push(heap, {default_tag, 0, '', 0}) end
    local ready, wait = prefix .. 'ready', prefix .. 'gwait'
    local names, listed = {}, {}
    if room > 0 then
      local head = redis.call('ZRANGE', ready, 0, room - 1, 'WITHSCORES')
      for i = 1, #head, 2 do
        names[#names + 1] = {head[i], math.max(tonumber(head[i + 1]), 0)}
        listed[head[i]] = true
      end
      for _, group in ipairs(redis.call('ZRANGE', wait, '-inf', now, 'BYSCORE', 'LIMIT', 0, WAKE_LIMIT)) do
        if not listed[group] then
          names[#names + 1] = {group, false}
          listed[group] = true
        end
      end
    end
    if ending and not listed[ending] then
      local score = redis.call('ZSCORE', ready, ending)
      names[#names + 1] = {ending, score and math.max(tonumber(score), 0) or false}
    end
    for _, named in ipairs(names) do
      local group, in_ready = named[1], named[2]
      local s
      s, err = group_settings(prefix, group)
      if err then return nil, err end
      local load = group_load(prefix, group, s, now)
      if group == ending then load.running = math.max(load.running - 1, 0) end
      -- A group in the index starts at its score there; one entering it at
      -- its own next tag or the virtual time, whichever is later.
      local tag = in_ready
      if not tag then
        tag, err = group_tag(prefix, 'tag:' .. group)
        if err then return nil, err end
        tag = math.max(tag, vtime)
      end
      local looked = {group = group, s = s, load = load, taken = {}, stale = {}, tag = tag,
        was_ready = in_ready ~= false, was_waiting = not in_ready and redis.call('ZSCORE', wait, group) ~= false}
      plan.looked[#plan.looked + 1] = looked
      if standing(s, load) == 'ready' then heap_push(heap, {looked.tag, 1, group, #plan.looked}) end
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
        local id = next_id(prefix, pending, looked, room)
        if not id then
          looked.load.pending = 0
        else
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

  local function fair_write(prefix, plan, deadline, logged)
    local groups = prefix .. 'groups'
    -- Each job claimed by its id (`<id>:<token>`: the token has no `:`); an
    -- id whose record was missing was not claimed, and holds no lease.
    local claimed = {}
    for _, claim in ipairs(logged) do
      local id = string.match(claim[1], '^(.*):[^:]*$')
      if id then claimed[id] = claim end
    end
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
            local claim = claimed[id]
            log_claim(log, edge, claim[1], math.max(claim[2] or plan.now, plan.now))
          end
        end
        redis.call('HSET', groups, 'tag:' .. group, string.format('%d', looked.tag))
      end
      fair_place(prefix, plan, looked)
    end
    if plan.default_tag then redis.call('HSET', groups, 'tag:', string.format('%d', plan.default_tag)) end
    if plan.vtime then redis.call('HSET', groups, 'vtime', string.format('%d', plan.vtime)) end
  end

  fair_lib_made = {plan = fair_plan, write = fair_write}
  return fair_lib_made
end
