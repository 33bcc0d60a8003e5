"""Where a grouped Lua CLAIM's server instructions go, section by section
(issue 50): the script cut short at each of a few lines, each cut run on the
same queue (nothing before a cut writes, so each call finds what the one
before it found), counted by callgrind inside EVALSHA, 200 calls a cut; the
queue one of bench/groups_instructions.py's (`groups`: 10,000 groups of one
job each, `999-capped`, or `ungrouped`, which stops at the grouped cuts'
first):

    emq scripts --out /tmp/scripts
    python3 bench/claim_sections.py <module.so> /tmp/scripts [groups|999-capped|ungrouped]

Then what a Lua script's parts cost, measured the same way on scripts of
nothing else: a Redis call, a number passed to one (Lua prints it with
'%.14g'), a reply's scores, a table, a closure, a string joined. Each line
is the script up to that cut and, after `+`, what the section before it
adds; the whole claim (its writes after the last cut) is
groups_instructions.py's. Needs valgrind (Debian's package).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import pipelined, script_path  # noqa: E402
from acknext_instructions import under_callgrind  # noqa: E402
import groups_cost  # noqa: E402
import groups_instructions  # noqa: E402

CALLS = 200

# Each section, named by what it ends with: the line it ends before (a line
# the script must hold once), and what the cut returns (inside the fair plan,
# an error that ends the call).
CUTS = [
    ("includes (their functions made)", "local pending_key = KEYS[1]", "do return 1 end"),
    ("options, pending's head", "local keys = {pending = pending_key, active = active_key", "do return 1 end"),
    ("gate, events, wake-up: types", "  local claimed, logged = {}, {}", "do return 1 end"),
    ("<q>group's type", "  local plan = head.plan", "do return 1 end"),
    ("the groups' functions made", "  local plan = head.plan", "do fair_lib() return 1 end"),
    ("the plan's table", "    local named_err = candidates(plan, room, now, ending)", "do return nil, 1 end"),
    ("<q>ready, <q>gwait", "    local fields = {'vtime', 'tag:'}", "do return nil, 1 end"),
    ("<q>groups: clock, fields", "    if named_err then return nil, named_err end", "do return nil, 1 end"),
    ("each group's keys", "    local ids = plan.ids", "do return nil, 1 end"),
    ("the jobs chosen", "    return plan\n  end\n\n  -- Log one claim", "do return nil, 1 end"),
    ("the records read", "  if #ids > 0 then redis.call('ZREM', k.pending, unpack(ids)) end", "do return 1 end"),
]

# A script's parts, each measured alone: (name, body, how many of the part).
PARTS = [
    ("return 1", "return 1", 1),
    ("a call (TYPE)", "for i = 1, 8 do redis.call('TYPE', KEYS[1]) end return 1", 8),
    ("a call (ZRANGE '0' '1')", "for i = 1, 8 do redis.call('ZRANGE', KEYS[1], '0', '1') end return 1", 8),
    ("a call (ZRANGE 0 1: numbers)", "for i = 1, 8 do redis.call('ZRANGE', KEYS[1], 0, 1) end return 1", 8),
    ("a call (ZRANGE WITHSCORES, 2)",
     "for i = 1, 8 do redis.call('ZRANGE', KEYS[1], '0', '1', 'WITHSCORES') end return 1", 8),
    ("a table of 3 fields", "local t = {} for i = 1, 8 do t[i] = {a = 1, b = 2, c = 3} end return 1", 8),
    ("a closure", "local t = {} for i = 1, 8 do t[i] = function() return i end end return 1", 8),
    ("a string joined", "local t = {} for i = 1, 8 do t[i] = KEYS[1] .. ':x:' .. ARGV[1] end return 1", 8),
]


def cut(source, line, text):
    """`source` with `text` put before `line`, which it must hold once."""
    assert source.count(line) == 1, f"the script holds {source.count(line)} of {line!r}"
    at = source.index(line)
    return source[:at] + text + "\n" + source[at:]


def sections(r, counted, source, queue):
    """Each cut's instructions per call, and what it adds."""
    last = 0
    for name, line, text in CUTS:
        if queue.endswith("ungrouped") and "fair_lib" in text:
            break
        sha = r.call("SCRIPT", "LOAD", cut(source, line, text)).decode()
        calls = [["EVALSHA", sha, 8, *groups_cost.keys(queue, groups_cost.CLAIM), 60000]] * CALLS
        found = counted(lambda: pipelined(r, calls)) / CALLS
        print(f"{name:34} {found:10,.0f}   + {found - last:8,.0f}")
        last = found


def parts(r, counted):
    """What each part of a script costs, beside a bare `return 1`."""
    r.call("ZADD", "z", 1, "a", 2, "b")
    bare = None
    for name, body, n in PARTS:
        sha = r.call("SCRIPT", "LOAD", body).decode()
        calls = [["EVALSHA", sha, 1, "z", f"g{i}"] for i in range(CALLS)]
        found = counted(lambda: pipelined(r, calls)) / CALLS
        bare = found if bare is None else bare
        each = (found - bare) / n if found != bare else found
        print(f"{name:34} {each:10,.0f}")


def main():
    module, build = os.path.abspath(sys.argv[1]), sys.argv[2]
    scenario = sys.argv[3] if len(sys.argv) > 3 else "groups"
    server, r, counted = under_callgrind("--loadmodule", module, collect="evalShaCommand")
    try:
        queue = f"lua-{scenario}"
        groups_instructions.arrange(r, queue, scenario, 10_000)
        print(f"instructions per CLAIM COUNT 1 cut short ({scenario}; callgrind, {CALLS} calls a cut)")
        sections(r, counted, open(script_path(build, "claim")).read(), queue)
        print("\ninstructions of a script's parts (each beside `return 1`)")
        parts(r, counted)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
