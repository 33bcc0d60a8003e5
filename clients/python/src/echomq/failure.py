"""What a failed job keeps of its failure (PROTOCOL.md §7, FAIL): the error
text FAIL stores in ``<q>errors``, which ``emq inspect``, the dashboard and
:meth:`echomq.Queue.inspect` show.

A handler's exception is kept as Python prints it, its last line first:

    KeyError: 'sku'

    Traceback (most recent call last):
      File "app.py", line 12, in handle
        return stock[job.json()["sku"]]
    ...

so the first line (which FAIL's ``failed`` and ``dead`` events carry, and
``emq dead`` lists) says what went wrong, and the traceback says where. The
whole is at most ``MAX_ERROR_TEXT`` bytes (§11.1, 65536): FAIL refuses a
longer text, so the traceback is cut (its start, keeping the frames nearest
the raise) and the type and message are kept.
"""

from __future__ import annotations

import traceback

from . import _protocol

MAX_ERROR_TEXT = _protocol.size("MAX_ERROR_TEXT")
"""The longest error text FAIL takes, in UTF-8 bytes (§11.1)."""


def describe(err: BaseException) -> str:
    """The exception's type and message, as the last line of its traceback
    says them: ``KeyError: 'sku'``, ``RuntimeError`` for one without a message."""
    return "".join(traceback.TracebackException.from_exception(err).format_exception_only()).rstrip("\n")


def error_text(err: BaseException, most: int = MAX_ERROR_TEXT) -> str:
    """The error text a job keeps for ``err``: its type and message, a blank
    line, then its traceback (chained exceptions too), at most ``most`` bytes."""
    described = traceback.TracebackException.from_exception(err)
    last = list(described.format_exception_only())
    lines = list(described.format())
    # The traceback ends with the type and message, which the text opens with.
    if last and lines[-len(last):] == last:
        lines = lines[: -len(last)]
    return bounded("".join(last).rstrip("\n"), "".join(lines).rstrip("\n"), most)


def bounded(head: str, trace: str, most: int = MAX_ERROR_TEXT) -> str:
    """``head``, a blank line and ``trace``, at most ``most`` UTF-8 bytes:
    ``trace`` is cut first, from its start and at a line's start; ``head``
    is cut (at a character's start) only when it alone is too long."""
    head_raw = _utf8(head)
    trace_raw = _utf8(trace)
    if not trace_raw:
        return _cut(head_raw, most)
    whole = head_raw + b"\n\n" + trace_raw
    if len(whole) <= most:
        return whole.decode("utf-8")
    # Its width is that of the most that can be cut, so the text fits whatever is.
    marker = "[the traceback's first {} bytes cut]\n"
    room = most - len(head_raw) - 2 - len(marker.format(len(trace_raw)).encode())
    if room <= 0:
        return _cut(head_raw, most)
    start = len(trace_raw) - room
    if trace_raw[start - 1] != ord("\n"):  # from the next line's start, or else the next character's
        newline = trace_raw.find(b"\n", start)
        if newline >= 0:
            start = newline + 1
        else:
            while start < len(trace_raw) and (trace_raw[start] & 0xC0) == 0x80:
                start += 1
    kept = trace_raw[start:]
    cut = len(trace_raw) - len(kept)
    return (head_raw + b"\n\n" + marker.format(cut).encode() + kept).decode("utf-8")


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def _cut(raw: bytes, most: int) -> str:
    """``raw`` cut to ``most`` bytes at a character's start."""
    # A character the cut splits is left out whole ("ignore" drops its first bytes).
    return raw[:most].decode("utf-8", "ignore")
