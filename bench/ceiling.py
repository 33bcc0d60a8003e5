"""Redis protocol for the raw ceiling, written to stdout for redis-cli --pipe:
N jobs as HSET+ZADD (the record and the pending set, nothing checked), or as
EVALSHA of the seed's enqueue script.
Usage: ceiling.py hset-zadd|seed-lua N PAYLOAD_BYTES SHA"""
import sys

kind, count, size, sha = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
payload = b"x" * size
out = sys.stdout.buffer


def command(*words):
    out.write(b"*%d\r\n" % len(words))
    for word in words:
        word = word if isinstance(word, bytes) else str(word).encode()
        out.write(b"$%d\r\n%s\r\n" % (len(word), word))


for n in range(count):
    job_id = b"JOB_%026d" % n
    key, pending = b"emq:{raw}:job:" + job_id, b"emq:{raw}:pending"
    if kind == "hset-zadd":
        command(b"HSET", key, b"state", b"pending", b"attempts", b"0", b"payload", payload)
        command(b"ZADD", pending, b"0", job_id)
    else:
        command(b"EVALSHA", sha, b"2", key, pending, job_id, payload)
