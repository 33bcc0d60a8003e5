--[[ Reading a flow's link, `<incarnation> {<queue>}<parent id>`, and a job
named across queues, `{<queue>}<id>` (protocol 1.6, PROTOCOL.md §7.8;
includes/notice says more).
]]
--@include common

-- The queue and the id of `text`, a job named across queues, or nil when it
-- is none; the id not yet through the kind gate (the core's JobRef::split).
local function split_job_ref(text)
  if string.sub(text, 1, 1) ~= '{' then return nil end
  local close = string.find(text, '}', 2, true)
  if not close then return nil end
  local queue = string.sub(text, 2, close - 1)
  if #queue < 1 or #queue > 255 or string.find(queue, '{', 1, true) or string.find(queue, '\0', 1, true) then
    return nil
  end
  return queue, string.sub(text, close + 1)
end

-- The incarnation and the parent of link `text`, or nil when it does not
-- read as one: 1 to MAX_DIGITS digits, one space, then a job named across
-- queues whose id passes the kind gate (the core's Link::parse).
local function read_link(text)
  local space = string.find(text, ' ', 1, true)
  if not space then return nil end
  local incarnation, parent = string.sub(text, 1, space - 1), string.sub(text, space + 1)
  if #incarnation == 0 or #incarnation > MAX_DIGITS or string.find(incarnation, '%D') then return nil end
  local _, id = split_job_ref(parent)
  if not id or string.sub(id, 1, 3) ~= 'JOB' then return nil end
  return incarnation, parent
end
