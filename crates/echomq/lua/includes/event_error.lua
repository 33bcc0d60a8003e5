--[[ The error text of an event (FAIL's and RESOLVE's), cut to its limit.
]]
--@include events

-- An error text as an event carries it: at most its first MAX_EVENT_ERROR
-- bytes, cut back before a UTF-8 character the cut would split (PROTOCOL.md
-- §7.5): while the first byte left out continues a character (10xxxxxx),
-- the cut moves back one byte, at most three times.
local function event_error(text)
  local cut = MAX_EVENT_ERROR
  if #text <= cut then return text end
  while cut > MAX_EVENT_ERROR - 3 do
    local after = string.byte(text, cut + 1)
    if after < 0x80 or after >= 0xC0 then break end
    cut = cut - 1
  end
  return string.sub(text, 1, cut)
end
