"""Where a Lua ACKNEXT's server time goes, section by section: the script cut
short at each of a few lines (`do return 1 end` there), each run 5,000
times on an active job that stays active (nothing before the cut writes),
server µs per call from INFO commandstats, median of 7 rounds:

    emq scripts --out /tmp/scripts
    python3 bench/acknext_sections.py /tmp/scripts

The whole call's figure is bench/acknext_cost.py's.
"""
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import NEXT_KEYS, commandstats, pipelined  # noqa: E402
from resp import start_server  # noqa: E402

src = open(glob.glob(os.path.join(sys.argv[1], "acknext-*.lua"))[0]).read().split("\n")
cuts = {
  'A after fenced_call': 'local prefix = string.sub(KEYS[2], 1, #KEYS[2] - #\'active\')',
  'B after options': "err = fenced_keys_error({'zset', 'zset', 'hash'}, token)",
  'C after types': '-- The records the claim may take, read and checked once, here, before the',
  'D before ack_job': 'ack_job(id, result, keep)',
}
server, r = start_server()
p = "emq:{bis}:"
r.call("HSET", p + "job:JOB_0", "state", "active", "attempts", 1, "payload", "p")
r.call("ZADD", p + "active", 9999999999999, "JOB_0")
r.call("HSET", p + "job:JOB_1", "state", "pending", "attempts", 0, "payload", "p")
r.call("ZADD", p + "pending", 0, "JOB_1")
shas = {}
for name, line in cuts.items():
    i = src.index(line)
    shas[name] = r.call("SCRIPT", "LOAD", '\n'.join(src[:i] + ['do return 1 end'] + src[i:]))
shas['prologue'] = r.call("SCRIPT", "LOAD", '\n'.join(src[:src.index("local names = {'job', 'active', 'done', 'results', 'events', 'config', 'pending', 'rate', 'policy', 'headers',")] + ['do return 1 end']))
call = lambda sha: ["EVALSHA", sha, 11, p + "job:JOB_0", *[p + k for k in NEXT_KEYS], "JOB_0", 1, 60000, "COUNT", 1]
res = {k: [] for k in shas}
for rnd in range(7):
    for name, sha in shas.items():
        r.call("CONFIG", "RESETSTAT")
        pipelined(r, [call(sha)] * 5000)
        st = commandstats(r)
        res[name].append(st['evalsha'][1] / st['evalsha'][0])
for name in ['prologue'] + list(cuts):
    print(f"{name:<22} median {statistics.median(res[name]):6.2f} us")
server.terminate()
