--[[ The link ENQUEUE's, ENQUEUEMANY's and FLOW's PARENT option gives
(protocol 1.6, PROTOCOL.md §7.8).
]]
--@include link

-- PARENT's value, an option's check (includes/options): a link.
local function parent_option(value)
  if value == nil then return nil, emq_error('EMQARG', 'PARENT is missing its link') end
  if not read_link(value) then
    return nil, emq_error('EMQARG', 'PARENT must be <incarnation> {<queue>}<id>, not ' .. value)
  end
  return value
end
