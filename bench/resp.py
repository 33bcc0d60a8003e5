"""A minimal Redis client for the benchmark's driver (RESP2 over a socket):
enough for FLUSHALL, SCAN and MEMORY USAGE without a Python dependency."""
import socket
from urllib.parse import urlparse


class Redis:
    def __init__(self, url):
        parts = urlparse(url)
        self.port = parts.port or 6379
        self.sock = socket.create_connection((parts.hostname, self.port))
        self.file = self.sock.makefile("rb")

    def call(self, *words):
        out = [b"*%d\r\n" % len(words)]
        for word in words:
            word = word if isinstance(word, bytes) else str(word).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(word), word))
        self.sock.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")


def free_port():
    """A free TCP port on the loopback address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*args, under=(), wait=5.0):
    """A throwaway redis-server on a free loopback port, nothing saved, and a
    client once it answers. `args`: more of the server's arguments
    (`--loadmodule`, say); `under`: a command to run it under (valgrind's,
    which wants a longer `wait`, in seconds). Stop it with `.terminate()`."""
    import subprocess
    import time
    port = free_port()
    server = subprocess.Popen(
        [*under, "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            client = Redis(f"redis://127.0.0.1:{port}")
            client.call("PING")
            return server, client
        except OSError:
            time.sleep(0.05)
    server.terminate()
    raise RuntimeError("redis-server did not answer")
