--[[ The claim gate, the one place a transition that hands out jobs reads the
queue's settings (emq:{q}:config): paused? room under the concurrency limit?
gate(config, active, count) returns how many jobs the claim may take, and
why it may take fewer than count (-1 paused, 0 at the concurrency limit),
or nil when it held nothing back; or an error reply as its last value.
With no settings (no config key) it costs one TYPE.
]]
--@include common

local function gate(config, active, count)
  local found = redis.call('TYPE', config)['ok']
  if found == 'none' then return count end
  if found ~= 'hash' then
    return nil, nil, emq_error('EMQTYPE', config .. ' holds a ' .. found .. ', not a hash')
  end
  local settings = redis.call('HMGET', config, 'paused', 'concurrency')
  if tonumber(settings[1]) == 1 then return 0, -1 end
  local limit = tonumber(settings[2])
  if limit and limit >= 1 then
    local room = math.max(limit - redis.call('ZCARD', active), 0)
    if room < count then return room, 0 end
  end
  return count
end
