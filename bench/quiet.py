"""Waiting for a quiet machine before a measurement (bench/driver.py,
bench/versus.py): the machine is shared, and a figure taken while it is busy
measures the neighbours. Settings: QUIET_BUSY (0.3: at most 30% busy),
QUIET_WAIT (10: seconds to wait at most)."""
import os
import time

QUIET_BUSY = float(os.environ.get("QUIET_BUSY", "0.3"))
QUIET_WAIT = float(os.environ.get("QUIET_WAIT", "10"))


def busy():
    """The machine's busy fraction over half a second (all cores)."""
    def sample():
        fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return fields[3] + fields[4], sum(fields)
    idle0, total0 = sample()
    time.sleep(0.5)
    idle1, total1 = sample()
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


def quiet():
    """Wait until the machine is quiet (at most QUIET_WAIT s); how busy it was."""
    deadline = time.time() + QUIET_WAIT
    while True:
        now = busy()
        if now <= QUIET_BUSY or time.time() >= deadline:
            return now
