--[[ Shared by the schedule transitions, SCHEDULE, UNSCHEDULE, SCHEDULES and
FIRE: a schedule's name.
]]
--@include common

-- A schedule's name: 1 to MAX_SCHEDULE_NAME bytes.
local function schedule_name(name)
  if name == nil or #name == 0 or #name > MAX_SCHEDULE_NAME then
    return nil, emq_error('EMQARG', 'schedule name must be 1 to ' .. MAX_SCHEDULE_NAME .. ' bytes')
  end
  return name
end
