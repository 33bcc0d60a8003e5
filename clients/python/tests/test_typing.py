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
