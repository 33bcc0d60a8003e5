--[[ Adding many ids to a sorted set at one score, the last first: shared by
ACKMANY, CLAIM (and ACKNEXT) and the fair claim (includes/fair).
]]
--@include common

-- ZADD's arguments for `ids` all at `score` (digits), the last id first.
-- A small sorted set (a listpack, up to 128 members) inserts a member
-- after every one of a lower score and of its own score that sorts before
-- it: ids taken in order, each would walk past all those added before it;
-- the last first, each stops at the one added just before
-- (bench/batch_instructions.py: 0.82x the instructions a job of a busy
-- worker on queues of 100 jobs). The set ends the same.
local function scored_last_first(score, ids)
  local args, n = {}, #ids
  for j = n, 1, -1 do
    local at = 2 * (n - j)
    args[at + 1], args[at + 2] = score, ids[j]
  end
  return args
end
