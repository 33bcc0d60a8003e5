--[[ RELEASE: the holder of the lease gives the job back, without blame.
The attempts counter stays where the claim put it: it is the fencing token and
never goes down, so the next claim mints the next token.

KEYS[1]  emq:{q}:job:<id>   the record (hash)
KEYS[2]  emq:{q}:active     (zset)
KEYS[3]  emq:{q}:pending    (zset)
KEYS[4]  emq:{q}:priority   (hash) id -> priority, for jobs whose priority is not 0
KEYS[5]  emq:{q}:events     (stream) the event log,
KEYS[6]  emq:{q}:config     (hash) a `released` event (includes/events)
KEYS[7]  emq:{q}:wake       (zset) the wake-up key
                            (includes/wake), told
ARGV[1]  id: the job id
ARGV[2]  token: the one the claim handed out
Reply    1
Errors   EMQKIND, EMQARG, EMQTYPE, EMQNOJOB, EMQFENCE, EMQVERSION, EMQDATA
]]
--@include fenced
--@include events
--@include wake

local id, token, err = fenced_call({'job', 'active', 'pending', 'priority', 'events', 'config', 'wake'})
if err then return err end
err = no_options_error(3)
if err then return err end
err = fenced_keys_error({'zset', 'zset', 'hash'}, token)
if err then return err end
local keep, wakes
keep, wakes, err = events_and_wake(7)
if err then return err end
local score
score, err = priority_of(KEYS[4], id)
if err then return err end

redis.call('ZREM', KEYS[2], id)
to_pending(KEYS[1], KEYS[3], score, id)
wake(wakes)
emit(KEYS[5], keep, 'released', id)
return 1
