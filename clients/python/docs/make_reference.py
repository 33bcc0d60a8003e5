"""Write ``reference.md`` from the package's docstrings: every public class
and function a user meets, its signature and its doc, in the order a reader
needs them. ``tests/test_docs.py`` fails when the page is stale.

    python clients/python/docs/make_reference.py      # rewrites docs/reference.md
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import echomq
from echomq import calls, cron, errors, flows, metrics, tasks, testing

PAGE = Path(__file__).with_name("reference.md")

SECTIONS: list[tuple[str, list[Any]]] = [
    ("Tasks", [echomq.App, tasks.TaskHandler, echomq.Task, echomq.TaskOptions, echomq.current_job,
               echomq.TaskFailed]),
    ("Testing", [testing.TestMode, testing.TestJob]),
    ("Working", [echomq.Worker, echomq.Job, echomq.RetryAfter, flows.children_results_sync]),
    ("Producing and operating", [echomq.connect, echomq.Connection, echomq.Queue, echomq.SyncQueue,
                                 calls.EnqueueOptions, echomq.Enqueued, echomq.JobInfo, echomq.Stats]),
    ("Flows", [echomq.Flow]),
    ("Groups", [echomq.GroupInfo, echomq.GroupPage]),
    ("Partitioned queues", [echomq.Partitioned]),
    ("Schedules", [cron.Cron, cron.CronError]),
    ("Metrics", [metrics.Metrics]),
    ("Errors", [errors.EchoMQError, errors.InvalidInput, errors.Refused, errors.FenceError, errors.NoJobError,
                errors.StateError, errors.GroupFull, errors.OtherMajor]),
]


def _doc(item: Any) -> str:
    return inspect.cleandoc(item.__doc__) if item.__doc__ else ""


class _Raw(str):
    """An annotation's text, shown as written (the package's annotations are strings)."""

    def __repr__(self) -> str:
        return str(self)


def _signature(item: Any) -> str:
    try:
        found = inspect.signature(item)
    except (TypeError, ValueError):
        return ""

    def raw(annotation: Any) -> Any:
        return _Raw(annotation) if isinstance(annotation, str) else annotation

    parameters = [p.replace(annotation=raw(p.annotation)) for p in found.parameters.values()
                  if not p.name.startswith("_")]
    return str(found.replace(parameters=parameters, return_annotation=raw(found.return_annotation)))


def _members(cls: type) -> list[tuple[str, Any]]:
    """The class's own public methods and properties, in source order."""
    found = []
    for name, value in vars(cls).items():
        if name.startswith("_") or not (inspect.isfunction(value) or isinstance(value, (property, staticmethod))):
            continue
        found.append((name, value.__func__ if isinstance(value, staticmethod) else value))
    return found


def _qualified(item: Any) -> str:
    return f"{item.__module__}.{item.__qualname__}"


def render() -> str:
    lines = ["# echomq reference", "",
             f"Generated from the docstrings of echomq {echomq.__version__} (protocol {echomq.PROTOCOL}) by "
             "`docs/make_reference.py`; the guides are beside it ([README](README.md)).", ""]
    for title, items in SECTIONS:
        lines += [f"## {title}", ""]
        for item in items:
            kind = "class" if inspect.isclass(item) else "def"
            signature = "" if inspect.isclass(item) and issubclass(item, BaseException) else _signature(item)
            lines += [f"### `{item.__qualname__}`", "", "```python",
                      f"{kind} {_qualified(item)}{signature}", "```", ""]
            if _doc(item):
                lines += [_doc(item), ""]
            if inspect.isclass(item) and hasattr(item, "__optional_keys__"):  # a TypedDict: its keys
                for name, annotation in item.__annotations__.items():
                    lines.append(f"- **`{name}`**: `{getattr(annotation, '__forward_arg__', annotation)}`")
                lines.append("")
            elif inspect.isclass(item) and not issubclass(item, BaseException):
                for name, member in _members(item):
                    if isinstance(member, property):
                        lines += [f"- **`{name}`** (property): " + _doc(member).replace("\n", " ")]
                    else:
                        lines += [f"- **`{name}{_signature(member)}`**: " + _doc(member).replace("\n", " ")]
                if _members(item):
                    lines.append("")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    PAGE.write_text(render())
    sys.stdout.write(f"wrote {PAGE}\n")
