"""The installed package carries every script (the files pip installed, not
the source tree), byte for byte what ``emq scripts --out`` writes: the same
transitions, files, key counts and SHA1s."""

from __future__ import annotations

import hashlib
import json
import subprocess
from importlib import resources
from pathlib import Path

import echomq

from conftest import REPO, emq_path


def installed_scripts() -> Path:
    folder = Path(str(resources.files("echomq").joinpath("scripts")))
    assert folder.is_dir(), f"the installed package has no scripts folder: {folder}"
    # The installed files, not the repository's: the package was pip-installed.
    assert REPO / "clients" / "python" / "src" not in folder.parents, folder
    return folder


def test_the_installed_package_carries_every_script_of_emq_scripts(tmp_path: Path) -> None:
    subprocess.run([str(emq_path()), "scripts", "--out", str(tmp_path)], check=True, capture_output=True)
    theirs = json.loads((tmp_path / "manifest.json").read_text())
    folder = installed_scripts()
    ours = json.loads((folder / "manifest.json").read_text())
    assert ours["protocol"] == theirs["protocol"] == echomq.PROTOCOL
    assert {s["transition"] for s in ours["scripts"]} == {s["transition"] for s in theirs["scripts"]}
    by_name = {s["transition"]: s for s in ours["scripts"]}
    for script in theirs["scripts"]:
        mine = by_name[script["transition"]]
        assert mine == script, script["transition"]
        installed = (folder / script["file"]).read_bytes()
        assert hashlib.sha1(installed).hexdigest() == script["sha1"], script["file"]
        assert installed == (tmp_path / script["file"]).read_bytes(), script["file"]
    assert sorted((folder / "SHA1SUMS").read_text().splitlines()) == sorted(
        (tmp_path / "SHA1SUMS").read_text().splitlines())


def test_every_transition_the_package_knows_has_its_script() -> None:
    folder = installed_scripts()
    transitions = echomq._protocol.transitions()
    assert len(transitions) == len(list(folder.glob("*.lua"))) >= 28
    for transition in transitions.values():
        assert hashlib.sha1(transition.source).hexdigest() == transition.sha1
        assert transition.command == "EMQ." + transition.name.upper()
