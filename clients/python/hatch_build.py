"""The build hook: puts the protocol's loadable Lua scripts into the wheel.

The scripts have one source, ``crates/echomq/lua/`` in this repository. The
hook expands them exactly as PROTOCOL.md §11.1 says (``--@include`` lines,
then the limits a script names), with the limits read from §11.1's table and
the transitions (their scripts, native commands, keys in order and key
counts) from §7's table, which ``crates/echomq-core/tests/protocol_tables.rs``
writes from the core's descriptions. So ``pip install ./clients/python``
needs only Python: no Rust toolchain, no ``emq`` binary. The package's tests
check the installed scripts' SHA1s against ``emq scripts --out``, so the
document, the Rust expansion and this one cannot drift apart unseen.

Into the wheel, under ``echomq/scripts/``: one ``<transition>.lua``
per transition, ``SHA1SUMS``, ``manifest.json`` (as ``emq scripts`` writes
it), and ``protocol.json`` (the version, the limits, each transition's keys
and its effect: ``reads`` runs as EVALSHA_RO).

An sdist carries the generated files (``_generated/``), so a wheel built from
it, away from the repository, carries the same ones.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

GENERATED = "_generated"


def _repository(start: Path) -> Path | None:
    """The repository root above ``start``: the folder with PROTOCOL.md and the Lua sources."""
    for folder in [start, *start.parents]:
        if (folder / "PROTOCOL.md").is_file() and (folder / "crates/echomq/lua").is_dir():
            return folder
    return None


def _lines(text: str) -> list[str]:
    """§11.1 step 1: lines split at LF, a final LF ending the last line, a CR before an LF dropped."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [line[:-1] if line.endswith("\r") else line for line in parts]


_MARK = "--@limits\n"


def _expand_into(source: str, lua: Path, out: list[str], included: list[str]) -> None:
    for line in _lines(source):
        if not line.startswith("--@include "):
            out.append(line + "\n")
            continue
        wanted = line[len("--@include ") :].strip()
        if wanted in included:
            continue
        included.append(wanted)
        if wanted == "limits":
            out.append(_MARK)
        else:
            text = (lua / "includes" / f"{wanted}.lua").read_text(encoding="utf-8")
            _expand_into(text, lua, out, included)


def _named(rest: str, name: str) -> bool:
    """§11.1 step 2: whether the script names a limit, as a word or with _MIN/_MAX after it."""

    def word(char: str) -> bool:
        return char.isascii() and (char.isalnum() or char == "_")

    at = rest.find(name)
    while at >= 0:
        before = rest[at - 1] if at > 0 else ""
        after = rest[at + len(name) :]
        for suffix in ("_MIN", "_MAX"):
            if after.startswith(suffix):
                after = after[len(suffix) :]
                break
        if not (before and word(before)) and not (after and word(after[0])):
            return True
        at = rest.find(name, at + len(name))
    return False


def expand(source: str, lua: Path, limits: list[tuple[str, int, int | None]]) -> str:
    """A script as the server loads it (PROTOCOL.md §11.1)."""
    out: list[str] = []
    _expand_into(source, lua, out, [])
    text = "".join(out)
    at = text.find(_MARK)
    if at < 0:
        return text
    rest = text[:at] + text[at + len(_MARK) :]
    locals_ = []
    for name, low, high in limits:
        if not _named(rest, name):
            continue
        if high is None:
            locals_.append(f"local {name} = {low}\n")
        else:
            locals_.append(f"local {name}_MIN, {name}_MAX = {low}, {high}\n")
    return text.replace(_MARK, "".join(locals_), 1)


def read_limits(protocol: str) -> list[tuple[str, int, int | None]]:
    """§11.1's table of limits, in order: (name, value or low, high or None)."""
    start = protocol.index("The table, in order:")
    end = protocol.index("\n\n", start)  # the paragraph's end
    found = re.findall(r"`([A-Z][A-Z_]*)`\s+(-?\d+)(?:\.\.=(-?\d+))?", protocol[start:end])
    limits = [(name, int(low), int(high) if high else None) for name, low, high in found]
    if len(limits) < 40:
        raise RuntimeError(f"PROTOCOL.md §11.1's table of limits reads as {len(limits)} limits")
    return limits


def read_version(protocol: str) -> str:
    """§12's `This is **protocol M.N**`."""
    found = re.search(r"This is \*\*protocol (\d+)\.(\d+)\*\*", protocol)
    if not found:
        raise RuntimeError("PROTOCOL.md §12 does not say which protocol it is")
    return f"{found.group(1)}.{found.group(2)}"


def _cells(row: str) -> list[str]:
    """A markdown row's cells; `\\|` is a pipe inside a cell."""
    inner = row.strip().strip("|")
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def read_transitions(protocol: str) -> list[dict[str, Any]]:
    """§7's table of transitions (generated from the core's descriptions)."""
    start = protocol.index("<!-- The table of transitions")
    end = protocol.index("<!-- End of the table of transitions")
    transitions = []
    for row in protocol[start:end].splitlines():
        if not row.startswith("| ") or row.startswith("| transition") or row.startswith("|---"):
            continue
        cells = _cells(row)
        name, script, command, keys, counts = cells[0], cells[1], cells[2], cells[3], cells[4]
        effect = cells[7] if len(cells) > 7 else ""
        roles = re.findall(r"`([^`]+)`", keys)
        key_counts = [int(n) for n in re.findall(r"\d+", counts)]
        transitions.append(
            {
                "transition": name.lower(),
                "file": script.strip("`"),
                "command": command.strip("`"),
                "keys": roles,
                "key_counts": key_counts,
                "effect": effect,
            }
        )
    if len(transitions) < 20:
        raise RuntimeError(f"PROTOCOL.md §7's table of transitions reads as {len(transitions)} rows")
    # The effect column says which only read (EVALSHA_RO): INSPECT and STATS among them.
    reads: set[str] = {str(t["transition"]) for t in transitions if t["effect"] == "reads"}
    if not {"inspect", "stats"} <= reads:
        raise RuntimeError(f"PROTOCOL.md §7's table's effect column reads as {sorted(reads)} only reading")
    return transitions


def generate(repository: Path, out: Path) -> None:
    """Write every expanded script, SHA1SUMS, manifest.json and protocol.json into ``out``."""
    protocol = (repository / "PROTOCOL.md").read_text(encoding="utf-8")
    lua = repository / "crates/echomq/lua"
    limits = read_limits(protocol)
    version = read_version(protocol)
    declared = {name: (low, high) for name, low, high in limits}
    if declared.get("PROTOCOL_MAJOR", (None,))[0] is None or (
        f"{declared['PROTOCOL_MAJOR'][0]}.{declared['PROTOCOL_MINOR'][0]}" != version
    ):
        raise RuntimeError(
            f"PROTOCOL.md §11.1's PROTOCOL_MAJOR and PROTOCOL_MINOR are not §12's version {version}"
        )
    transitions = read_transitions(protocol)
    out.mkdir(parents=True, exist_ok=True)
    sums = []
    scripts = []
    for described in transitions:
        file = described["file"]
        source = (lua / file).read_text(encoding="utf-8")
        text = expand(source, lua, limits).encode("utf-8")
        (out / file).write_bytes(text)
        sha1 = hashlib.sha1(text).hexdigest()
        sums.append(f"{sha1}  {file}\n")
        scripts.append(
            {
                "transition": described["transition"],
                "file": file,
                "keys": len(described["keys"]),
                "key_counts": described["key_counts"],
                "sha1": sha1,
            }
        )
    missing = sorted(
        p.name for p in lua.glob("*.lua") if p.name not in {s["file"] for s in scripts}
    )
    if missing:
        raise RuntimeError(f"scripts under crates/echomq/lua/ that §7's table does not name: {missing}")
    (out / "SHA1SUMS").write_text("".join(sums), encoding="utf-8")
    manifest = {"protocol": version, "scripts": scripts}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    table = {
        "protocol": version,
        "limits": {name: [low, high] if high is not None else low for name, low, high in limits},
        "transitions": transitions,
    }
    (out / "protocol.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Generates the scripts and includes them in the wheel (and the sdist)."""

    PLUGIN_NAME = "custom"
    _temp: Path | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        repository = _repository(root.resolve())
        if repository is not None:
            self._temp = Path(tempfile.mkdtemp(prefix="echomq-scripts-"))
            out = self._temp
            generate(repository, out)
        elif (root / GENERATED / "manifest.json").is_file():
            self._temp = None
            out = root / GENERATED
        else:
            raise RuntimeError(
                "echomq's build needs the EchoMQ repository around it (PROTOCOL.md and crates/echomq/lua/), "
                "or an sdist that carries _generated/"
            )
        where = "echomq/scripts" if self.target_name == "wheel" else GENERATED
        for path in sorted(out.iterdir()):
            build_data["force_include"][str(path)] = f"{where}/{path.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
