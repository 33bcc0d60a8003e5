--[[ The link of the one job ACK and ACKNEXT end, its keys checked as it is
read (includes/notice).
]]
--@include notice

-- notices_open_error, then parent_link, for a call that ends one job and
-- reads its link right after the check (ACK, ACKNEXT): the parents key's
-- type is checked by the link's read, which refuses a key of another type,
-- in the same order (parents, notices, then the link): one TYPE fewer on
-- every ack.
local function one_link(parents, notices, prefix, id)
  if not parents then return parent_link(nil, prefix, id) end
  local link = redis.pcall('HGET', parents, id)
  local err = read_error(link, parents, 'hash') or type_error(notices, 'stream')
  if err then return nil, err end
  if link and not read_link(link) then return nil, malformed(parents, id, 'a link') end
  return link
end
