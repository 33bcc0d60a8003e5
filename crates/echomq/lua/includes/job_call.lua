--[[ The first steps of CANCEL, CHILDREN, INSPECT and RETRY: one job named
in ARGV[1], nothing after it.
]]
--@include options

-- The first steps of a transition that names one job in ARGV[1] and takes
-- nothing after it (CANCEL, INSPECT, RETRY): the id's kind, the keys as
-- queue_prefix checks them, no option. The id and the queue's prefix.
local function job_call(names, forms)
  local id = ARGV[1]
  local err = kind_error(id)
  if err then return nil, nil, err end
  local prefix
  prefix, err = queue_prefix(names, id, forms)
  if err then return nil, nil, err end
  return id, prefix, no_options_error(2)
end
