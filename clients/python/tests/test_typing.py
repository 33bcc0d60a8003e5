"""The package and its build hook pass ``mypy --strict`` (issue 51): it is
typed (``py.typed``), so its users' type checkers read what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_the_package_passes_mypy_strict(tmp_path: Path) -> None:
    package = REPO / "clients" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy"),
         "src/echomq", "hatch_build.py"],
        cwd=package, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


TYPED = '''
import echomq

async def produce(queue: echomq.Queue, app: echomq.App) -> None:
    await queue.enqueue(b"x", priorty=1)
    await queue.enqueue(b"x", delay="soon")
    await queue.enqueue(b"x", attempts=3, delay=1.5, headers={"tenant": "acme"}, group="acme")

app = echomq.App()

@app.task(attempts=3)
def send(to: str, *, subject: str) -> None: ...

send.enqueue("a@example.com", subject="hi")
send.enqueue(1, subject="hi")

@app.task
async def total(n: int) -> int:
    return n

count: int = total.result(total.enqueue(1))
word: str = total.result(total.enqueue(2))
'''


def test_enqueue_options_and_task_arguments_are_typed(tmp_path: Path) -> None:
    """No ``**options: Any``: a misspelt option, a wrong type, a task's
    wrong argument are mypy errors, the right ones are not (issue 51)."""
    (tmp_path / "produce.py").write_text(TYPED)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy"), "produce.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["5", "6", "15", "22"], done.stdout
    assert 'Unexpected keyword argument "priorty"' in errors[0] and '"delay"' in errors[1]
    assert 'Argument 1 to "enqueue" of "Task" has incompatible type "int"; expected "str"' in errors[2]
    # An async task's result is typed by what its coroutine returns.
    assert 'expression has type "int", variable has type "str"' in errors[3], errors[3]
