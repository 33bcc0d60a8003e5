--[[ Fair groups (protocol 1.7, PROTOCOL.md §7.9; the core's twin is
crates/echomq-core/src/transition/grouping.rs): what every transition that
moves a grouped job into or out of pending or its lease shares. The groups'
keys are derived from the queue's prefix, as the records are:
<q>group (hash, id -> group), <q>groups (hash: set:<g> settings, tag:<g>
start tags, vtime), <q>gnames, <q>ready, <q>gwait (zsets), and per group
<q>gpending:<g>, <q>gactive:<g>, <q>grate:<g> (zsets).
A grouped job is in <q>pending at GROUPED + its priority, past every
ungrouped one (a priority is within +-2^31), and in its group's own set at
its priority.
]]
--@include common

local GROUPED, UNGROUPED_MAX, UNIT, MAX_WEIGHT = GROUPED_SCORE, PRIORITY_MAX, TAG_UNIT, GROUP_WEIGHT_MAX
-- Forgets a group that holds nothing and has no settings (includes/forget):
-- only a script that can empty a group includes it, so that a producer's
-- scripts hold no DEL (SECURITY.md's recipes).
local group_forget = false

-- The groups' functions, made on a call's first use of them: a call on a
-- queue without groups makes none of their closures (their cost is every
-- call's, PROTOCOL.md §7.9). First what a claim needs.
local group_core_made = nil
local function group_core()
  if group_core_made then return group_core_made end
  local SETTINGS_DEFAULT = {weight = 1}

  -- A group's settings text (`WEIGHT 2 CAP 3 RATE 10 PER 1000 MAX 500 PAUSED
  -- 1`), or nil when it does not read as some.
  local function parse_settings(text)
    if #text == 0 then return nil end
    local words = {}
    for word in string.gmatch(text .. ' ', '([^ ]*) ') do words[#words + 1] = word end
    if #words % 2 ~= 0 then return nil end
    local s = {weight = 1}
    for i = 1, #words, 2 do
      local name, digits = words[i], words[i + 1]
      if not string.match(digits, '^%d+$') or #digits > 15 then return nil end
      local n = tonumber(digits)
      if name == 'WEIGHT' and n >= 1 and n <= MAX_WEIGHT then s.weight = n
      elseif name == 'CAP' and n >= 1 then s.cap = n
      elseif name == 'RATE' and n >= 1 then s.rate = n
      elseif name == 'PER' and n >= 1 then s.per = n
      elseif name == 'MAX' and n >= 1 then s.max = n
      elseif name == 'PAUSED' and n == 1 then s.paused = true
      else return nil end
    end
    if (s.rate == nil) ~= (s.per == nil) then return nil end
    return s
  end

  -- What a group holds now: pending, running, and with a rate its claims in
  -- the window (logged), the oldest entries out of it (expired, at most
  -- SWEEP_LIMIT_MAX), and when its window frees; in `into` when given (a
  -- claim's table of the group), else in a new table.
  local function group_load_counted(prefix, group, s, now, pending, running, into)
    local load = into or {}
    load.pending, load.running, load.logged = pending, running, 0
    if s.rate then
      local log = prefix .. 'grate:' .. group
      local edge = math.max(now - s.per, 0)
      local above = string.format('(%d', edge)
      load.logged = redis.call('ZCOUNT', log, above, '+inf')
      load.expired = redis.call('ZRANGE', log, '-inf', string.format('%d', edge), 'BYSCORE', 'LIMIT', '0',
        string.format('%d', SWEEP_LIMIT_MAX))
      local oldest = redis.call('ZRANGE', log, above, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')[2]
      load.frees = math.max(oldest and tonumber(oldest) + s.per or now + s.per, now + 1)
    end
    return load
  end

  -- Where a group stands with `load`: 'paused', 'idle', 'capped', 'limited'
  -- (and when its rate frees) or 'ready'.
  local function standing(s, load)
    if s.paused then return 'paused' end
    if load.pending == 0 then return 'idle' end
    if s.cap and load.running >= s.cap then return 'capped' end
    if s.rate and load.logged >= s.rate then return 'limited', load.frees end
    return 'ready'
  end

  group_core_made = {parse = parse_settings, load_counted = group_load_counted, standing = standing,
    defaults = SETTINGS_DEFAULT}
  return group_core_made
end

-- The rest of them, for a call that moves a grouped job or reads a group's
-- row; a claim makes only group_core's (and includes/fair's).
local group_lib_made = nil
local function group_lib()
  if group_lib_made then return group_lib_made end
  local core = group_core()
  local parse_settings, group_load_counted, standing = core.parse, core.load_counted, core.standing
  local SETTINGS_DEFAULT = core.defaults
  -- The settings job_group read, by group, which placing the group uses:
  -- no transition that reads a job's group writes a group's settings.
  local read_settings = {}

  -- The text <q>groups keeps, defaults left out: '' for the defaults.
  local function settings_text(s)
    local words = {}
    if s.weight ~= 1 then words[#words + 1] = 'WEIGHT ' .. string.format('%d', s.weight) end
    if s.cap then words[#words + 1] = 'CAP ' .. string.format('%d', s.cap) end
    if s.rate then words[#words + 1] = string.format('RATE %d PER %d', s.rate, s.per) end
    if s.max then words[#words + 1] = 'MAX ' .. string.format('%d', s.max) end
    if s.paused then words[#words + 1] = 'PAUSED 1' end
    return table.concat(words, ' ')
  end

  -- The types of the fixed keys: two hashes, four sorted sets (the
  -- wake-up key among them, which placing a group may set).
  local function groups_check(prefix)
    return type_error(prefix .. 'group', 'hash') or type_error(prefix .. 'groups', 'hash')
      or type_error(prefix .. 'gnames', 'zset') or type_error(prefix .. 'ready', 'zset')
      or type_error(prefix .. 'gwait', 'zset') or type_error(prefix .. 'wake', 'zset')
  end


  -- A group's settings, its own keys' types checked, or nil and an error.
  local function group_settings(prefix, group)
    local err = type_error(prefix .. 'gpending:' .. group, 'zset')
      or type_error(prefix .. 'gactive:' .. group, 'zset') or type_error(prefix .. 'grate:' .. group, 'zset')
    if err then return nil, err end
    local field = 'set:' .. group
    local text = redis.call('HGET', prefix .. 'groups', field)
    if not text then return SETTINGS_DEFAULT end
    local s = parse_settings(text)
    if not s then return nil, malformed(prefix .. 'groups', field, "a group's settings") end
    return s
  end

  local function is_default(s)
    return s.weight == 1 and not s.cap and not s.rate and not s.max and not s.paused
  end

  local function group_load(prefix, group, s, now)
    return group_load_counted(prefix, group, s, now, redis.call('ZCARD', prefix .. 'gpending:' .. group),
      redis.call('ZCARD', prefix .. 'gactive:' .. group))
  end

  -- Put a group where it stands: in <q>ready at its start tag (its own next
  -- tag or the virtual time, whichever is later; one there keeps its place),
  -- in <q>gwait until its rate frees, or neither; an empty group with no
  -- settings is forgotten. Settings that do not read are left as they are.
  -- A group entering <q>ready sets the wake-up key (a claim waiting for
  -- work looks again), unless `quiet` (GROUP, which sets it itself). Whether
  -- it entered.
  local function group_reindex(prefix, group, quiet)
    local s = read_settings[group] or group_settings(prefix, group)
    if not s then return end
    local load = group_load(prefix, group, s, s.rate and now_ms() or 0)
    local where, frees = standing(s, load)
    local ready, wait = prefix .. 'ready', prefix .. 'gwait'
    local entered = false
    if where == 'ready' then
      redis.call('ZREM', wait, group)
      if not redis.call('ZSCORE', ready, group) then
        local tags = redis.call('HMGET', prefix .. 'groups', 'tag:' .. group, 'vtime')
        local own, vtime = tonumber(tags[1] or '0') or 0, tonumber(tags[2] or '0') or 0
        redis.call('ZADD', ready, string.format('%d', math.max(own, vtime, 0)), group)
        entered = true
      end
    elseif where == 'limited' then
      redis.call('ZREM', ready, group)
      redis.call('ZADD', wait, string.format('%d', frees), group)
    else
      redis.call('ZREM', ready, group)
      redis.call('ZREM', wait, group)
    end
    if group_forget and load.pending == 0 and load.running == 0 and is_default(s) then
      group_forget(prefix, group)
    end
    if entered and not quiet then redis.call('ZADD', prefix .. 'wake', '0', '1') end
    return entered
  end

  -- A grouped job into pending at `priority` (after its record's write),
  -- without the group's place, which the caller puts (group_reindex).
  local function group_join(prefix, pending, id, group, priority)
    redis.call('ZADD', pending, string.format('%d', GROUPED + priority), id)
    redis.call('ZADD', prefix .. 'gpending:' .. group, string.format('%d', priority), id)
    redis.call('ZADD', prefix .. 'gnames', '0', group)
  end






  -- The row GROUP and GROUPS answer: {group, pending, running, standing, settings}.
  local function group_row(prefix, group)
    local s, err = group_settings(prefix, group)
    if err then return nil, err end
    local load = group_load(prefix, group, s, s.rate and now_ms() or 0)
    return {group, load.pending, load.running, (standing(s, load)), settings_text(s)}
  end

  -- `EMQFULL`: a group at its most pending.
  local function full_error(group, max)
    return emq_error('EMQFULL', 'group ' .. group .. ' holds its MAX of ' .. string.format('%d', max) .. ' pending jobs')
  end

  -- A group's name: 1 to MAX_GROUP bytes.
  local function group_name(value)
    if value == nil or #value == 0 or #value > MAX_GROUP then
      return nil, emq_error('EMQARG', 'GROUP must be 1 to ' .. MAX_GROUP .. ' bytes')
    end
    return value
  end

  -- A job into pending at `priority`, in its group's sets.
  local function to_pending(prefix, pending, id, group, priority)
    group_join(prefix, pending, id, group, priority)
    group_reindex(prefix, group)
  end

  -- A grouped job leaves pending other than by a claim.
  local function off_pending(prefix, id, group)
    redis.call('ZREM', prefix .. 'gpending:' .. group, id)
    group_reindex(prefix, group)
  end

  -- A grouped job leaves its lease; with `claims`, a claim in the same call
  -- follows and puts the group where it stands (ACKNEXT's).
  local function off_active(prefix, id, group, claims)
    redis.call('ZREM', prefix .. 'gactive:' .. group, id)
    if not claims then group_reindex(prefix, group) end
  end

  -- The group of the job `id`, read before any write (its settings
  -- checked): false when it has none, or nil and an error reply.
  local function job_group(prefix, id)
    local group = redis.call('HGET', prefix .. 'group', id)
    if not group then return false end
    local s, err = group_settings(prefix, group)
    if err then return nil, err end
    read_settings[group] = s
    return group
  end

  -- The groups of many jobs (false for one without), each group's settings
  -- checked once, or nil and an error.
  local function jobs_groups(prefix, ids)
    local groups, checked = {}, {}
    for at, id in ipairs(ids) do
      local group = redis.call('HGET', prefix .. 'group', id)
      groups[at] = group or false
      if group and not checked[group] then
        local _, err = group_settings(prefix, group)
        if err then return nil, err end
        checked[group] = true
      end
    end
    return groups
  end

  group_lib_made = {check = groups_check, settings = group_settings, load = group_load,
    load_counted = group_load_counted, parse = parse_settings, defaults = SETTINGS_DEFAULT,
    standing = standing, reindex = group_reindex, join = group_join, row = group_row, full = full_error,
    text = settings_text, name = group_name, to_pending = to_pending, off_pending = off_pending,
    off_active = off_active, job_group = job_group, jobs_groups = jobs_groups}
  return group_lib_made
end

-- The queue's groups' functions when it has grouped jobs (<q>group
-- exists: its fixed keys' types then checked; for a claim, which checks
-- those it touches as it reads them, only group_core's), false when it has
-- none (one lookup), or nil and an error reply.
local function grouping(prefix, claims)
  local key = prefix .. 'group'
  local err = type_error(key, 'hash')
  if err then return nil, err end
  if typed[key] == 'none' then return false end
  if claims then return group_core() end
  local G = group_lib()
  err = G.check(prefix)
  if err then return nil, err end
  return G
end
