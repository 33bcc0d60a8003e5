"""Micro-benchmark: server µs per Lua ACKNEXT, two versions of the script
interleaved on one redis-server (INFO commandstats, evalsha usec_per_call)."""
import subprocess, sys, time, os, socket

PORT = int(sys.argv[1]); N = int(sys.argv[2]); ROUNDS = int(sys.argv[3])
variants = dict(a.split('=') for a in sys.argv[4:])  # name=path
enqueue = open('/tmp/mb/enqueue-11.lua').read()
claim = open('/tmp/mb/claim-8.lua').read()

def resp(*args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)

def cli(*args):
    return subprocess.run(['redis-cli', '-p', str(PORT)] + [str(a) for a in args], capture_output=True, text=True).stdout.strip()

def pipe(data):
    r = subprocess.run(['redis-cli', '-p', str(PORT), '--pipe'], input=data, capture_output=True)
    if b'errors: 0' not in r.stdout:
        print(r.stdout.decode()[-400:], file=sys.stderr); sys.exit(1)

sha = {name: cli('SCRIPT', 'LOAD', open(path).read()) for name, path in variants.items()}
sha_enq = cli('SCRIPT', 'LOAD', enqueue); sha_claim = cli('SCRIPT', 'LOAD', claim)
results = {name: [] for name in variants}
for r in range(ROUNDS):
    order = list(variants) if r % 2 == 0 else list(reversed(list(variants)))
    for name in order:
        p = 'emq:{mb-%s-%d}:' % (name, r)
        ids = ['JOB_%08d' % i for i in range(N)]
        pipe(b''.join(resp('EVALSHA', sha_enq, 2, p + 'job:' + i, p + 'pending', i, 'payload') for i in ids))
        keys8 = [p + k for k in ['pending', 'active', 'config', 'rate', 'policy', 'events', 'headers', 'wake']]
        cli('EVALSHA', sha_claim, 8, *keys8, 60000)
        cli('CONFIG', 'RESETSTAT')
        def acknext(i):
            keys = [p + 'job:' + ids[i]] + [p + k for k in ['active', 'done', 'results', 'events', 'config', 'pending', 'rate', 'policy', 'headers', 'wake']]
            return resp('EVALSHA', sha[name], 11, *keys, ids[i], 1, 60000, 'COUNT', 1)
        pipe(b''.join(acknext(i) for i in range(N - 1)))
        stats = cli('INFO', 'commandstats')
        line = [l for l in stats.splitlines() if l.startswith('cmdstat_evalsha:')][0]
        per = float(line.split('usec_per_call=')[1].split(',')[0])
        calls = sum(int(l.split('calls=')[1].split(',')[0]) for l in stats.splitlines() if l.startswith('cmdstat_') and 'evalsha' not in l and 'resetstat' not in l and 'info' not in l)
        done = cli('ZCARD', p + 'done')
        results[name].append(per)
        print(f'round {r} {name}: {per:.2f} us/ACKNEXT, {calls/(N-1):.1f} calls inside each, done {done}', flush=True)

        cli("FLUSHALL")
for name, v in results.items():
    v = sorted(v); print(f'{name}: median {v[len(v)//2]:.2f} us, min {v[0]:.2f}, max {v[-1]:.2f}')
