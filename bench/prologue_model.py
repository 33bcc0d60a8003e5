"""What a script's definitions cost a call, estimated from its bytecode
alone, without a server: quicker than prologue_instructions.py for trying
one arrangement of the includes after another, and it says where the cost
comes from.

    python3 bench/prologue_model.py DIR [transition ...]

Every EVALSHA runs its script whole, so each top-level closure is made
anew, and each local a closure captures is an open upvalue, made, closed
and collected on every call; Lua 5.1's luaF_findupval finds a captured
local by walking the open upvalues from the newest down, so a capture of
an early local walks past every captured local declared after it (issue
53). From `luac5.1 -l` of the script's definitions (as
prologue_instructions.py cuts them), this counts closures, open upvalues,
captures and steps of those walks, and weighs them as callgrind measured
them on made-up scripts: about 390 instructions a closure, 450 an open
upvalue, 92 a capture and 6 a step. It reads 2 to 7% below
prologue_instructions.py's count (it leaves out the tables a script's top
level builds, among others): for comparing arrangements, not for quoting.
Needs luac5.1 (Debian's lua5.1).
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from prologue_instructions import HOT, definitions  # noqa: E402

CLOSURE, OPEN, CAPTURE, STEP = 390, 450, 92, 6


def counts(path):
    """(closures, open upvalues, captures, walk steps) of the script's definitions."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(definitions(path))
        lua.flush()
        listing = subprocess.run(["luac5.1", "-l", "-p", lua.name], capture_output=True, text=True,
                                 check=True).stdout
    main = listing.split("\nfunction <")[0]
    closures = captures = steps = 0
    opened = set()
    after_closure = False
    for line in main.split("\n"):
        op = re.match(r"\s*\d+\s+\[\d+\]\s+(\w+)\s+(-?\d+)\s*(-?\d+)?", line)
        if not op:
            continue
        if op.group(1) == "CLOSURE":
            closures, after_closure = closures + 1, True
        elif after_closure and op.group(1) == "MOVE" and op.group(2) == "0":
            # The pseudo-instruction after CLOSURE that captures local `register`.
            register = int(op.group(3))
            captures += 1
            steps += sum(1 for other in opened if other > register)
            opened.add(register)
        else:
            after_closure = False
    return closures, len(opened), captures, steps


def main():
    build = sys.argv[1]
    names = sys.argv[2:] or HOT
    print(f"{'transition':<12}{'closures':>9}{'open':>6}{'captures':>9}{'steps':>7}{'estimate':>10}")
    for name in names:
        closures, opened, captures, steps = counts(os.path.join(build, name + ".lua"))
        estimate = CLOSURE * closures + OPEN * opened + CAPTURE * captures + STEP * steps
        print(f"{name:<12}{closures:>9}{opened:>6}{captures:>9}{steps:>7}{estimate:>10,}")


if __name__ == "__main__":
    main()
