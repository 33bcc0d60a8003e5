"""Executors: how a transition reaches the server (PROTOCOL.md §8, §11.1).

- :class:`Lua` runs each transition's expanded script with ``EVALSHA``
  (``EVALSHA_RO`` for the reads), loading it again on ``NOSCRIPT``;
- :class:`Native` sends the module's ``EMQ.<NAME> numkeys key… arg…``.

Both come in an asyncio form (over ``redis.asyncio.Redis``) and a
synchronous one (over ``redis.Redis``), picked by :func:`detect` /
:func:`detect_sync` as the Rust host picks its own: the module is used when
``EMQ.VERSION`` answers this package's major version, refused (naming both)
at another major, and Lua is used when the command is unknown or not allowed.
A refusal comes back as the :class:`~echomq.errors.Refused` of its code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import redis
import redis.asyncio
from redis.exceptions import NoPermissionError, NoScriptError, ResponseError

from . import _protocol
from .errors import EchoMQError, OlderMinor, OtherMajor, Refused, refusal

Kind = Literal["lua", "native"]


@dataclass(frozen=True)
class Call:
    """One transition's call: its name (``claim``), KEYS and ARGV, as §7 lists them."""

    name: str
    keys: Sequence[bytes]
    args: Sequence[bytes] = field(default_factory=tuple)


def convert(value: Any) -> Any:
    """A reply with every error reply in it (ACKMANY's) as its :class:`Refused`."""
    if isinstance(value, ResponseError):
        return refusal(str(value)) or value
    if isinstance(value, list):
        return [convert(item) for item in value]
    return value


def _raise(err: ResponseError) -> EchoMQError | ResponseError:
    return refusal(str(err)) or err


def command(kind: Kind, call: Call) -> list[Any]:
    """The words sent for ``call``: EVALSHA's or the module's."""
    described = _protocol.transition(call.name)
    if kind == "lua":
        verb = "EVALSHA_RO" if described.read_only else "EVALSHA"
        return [verb, described.sha1, len(call.keys), *call.keys, *call.args]
    return [described.command, len(call.keys), *call.keys, *call.args]


_VERSION = re.compile(r"^(\d{1,9})\.(\d{1,9})$")


def parse_version(text: str) -> tuple[int, int] | None:
    """``major.minor``, decimal, or None."""
    found = _VERSION.match(text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _module_speaks(answer: Any) -> bool:
    """Whether to use the module, from its ``EMQ.VERSION`` answer (None: no such command)."""
    if answer is None:
        return False
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else str(answer)
    found = parse_version(text)
    if found is None:
        raise EchoMQError(f"EMQ.VERSION answered {text!r}, not a version")
    own = _protocol.version()
    if found[0] != own[0]:
        raise OtherMajor(_protocol.version_text(), text, "the echomq module")
    if found[1] < _protocol.size("MODULE_MINOR"):  # the last minor that added a call it sends (§11.1)
        raise OlderMinor(_protocol.version_text(), text, "the echomq module")
    return True


def _unknown(err: Exception) -> bool:
    return isinstance(err, NoPermissionError) or (
        isinstance(err, ResponseError) and "unknown command" in str(err).lower()
    )


def _check_loaded(shas: list[Any]) -> None:
    for described, sha in zip(_protocol.transitions().values(), shas):
        got = sha.decode() if isinstance(sha, bytes) else str(sha)
        if got != described.sha1:
            raise EchoMQError(
                f"the server loaded {described.file} as {got}, not the manifest's {described.sha1}"
            )


class AsyncExecutor:
    """Runs transitions over a ``redis.asyncio.Redis`` (bytes replies: ``decode_responses=False``)."""

    kind: Kind

    def __init__(self, client: redis.asyncio.Redis, kind: Kind) -> None:
        # redis-py's stubs type replies loosely; the protocol says what they are.
        self.redis: Any = client
        self.kind = kind

    async def load(self) -> None:
        """Lua: load every script once (``SCRIPT LOAD``) and check the server's SHA1s."""
        if self.kind != "lua":
            return
        pipe = self.redis.pipeline(transaction=False)
        for described in _protocol.transitions().values():
            pipe.execute_command("SCRIPT", "LOAD", described.source)
        _check_loaded(await pipe.execute())

    async def run(self, call: Call) -> Any:
        """One call; a refusal raises its :class:`Refused`."""
        words = command(self.kind, call)
        try:
            return convert(await self.redis.execute_command(*words))
        except NoScriptError:
            await self.redis.execute_command("SCRIPT", "LOAD", _protocol.transition(call.name).source)
            try:
                return convert(await self.redis.execute_command(*words))
            except ResponseError as err:
                raise _raise(err) from None
        except ResponseError as err:
            raise _raise(err) from None

    async def run_many(self, calls: Sequence[Call]) -> list[Any]:
        """Many calls in one round trip (a pipeline, not a transaction): each
        element its reply or its :class:`Refused` (returned, not raised)."""
        if not calls:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for call in calls:
            pipe.execute_command(*command(self.kind, call))
        replies = list(await pipe.execute(raise_on_error=False))
        again = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if again:
            await self.load()
            pipe = self.redis.pipeline(transaction=False)
            for i in again:
                pipe.execute_command(*command(self.kind, calls[i]))
            for i, reply in zip(again, await pipe.execute(raise_on_error=False)):
                replies[i] = reply
        return [convert(reply) for reply in replies]


class SyncExecutor:
    """Runs transitions over a synchronous ``redis.Redis``: for producers and scripts."""

    kind: Kind

    def __init__(self, client: redis.Redis, kind: Kind) -> None:
        self.redis: Any = client
        self.kind = kind

    def load(self) -> None:
        if self.kind != "lua":
            return
        pipe = self.redis.pipeline(transaction=False)
        for described in _protocol.transitions().values():
            pipe.execute_command("SCRIPT", "LOAD", described.source)
        _check_loaded(pipe.execute())

    def run(self, call: Call) -> Any:
        words = command(self.kind, call)
        try:
            return convert(self.redis.execute_command(*words))
        except NoScriptError:
            self.redis.execute_command("SCRIPT", "LOAD", _protocol.transition(call.name).source)
            try:
                return convert(self.redis.execute_command(*words))
            except ResponseError as err:
                raise _raise(err) from None
        except ResponseError as err:
            raise _raise(err) from None

    def run_many(self, calls: Sequence[Call]) -> list[Any]:
        if not calls:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for call in calls:
            pipe.execute_command(*command(self.kind, call))
        replies = list(pipe.execute(raise_on_error=False))
        again = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if again:
            self.load()
            pipe = self.redis.pipeline(transaction=False)
            for i in again:
                pipe.execute_command(*command(self.kind, calls[i]))
            for i, reply in zip(again, pipe.execute(raise_on_error=False)):
                replies[i] = reply
        return [convert(reply) for reply in replies]


async def detect(client: redis.asyncio.Redis, kind: Kind | None = None) -> AsyncExecutor:
    """The best executor the server supports (or ``kind`` when given), its
    version checked before anything is written."""
    answer: Any = None
    raw: Any = client
    try:
        answer = await raw.execute_command("EMQ.VERSION")
    except ResponseError as err:
        if not _unknown(err):
            raise
    found: Kind = "native" if _module_speaks(answer) else "lua"
    if kind == "native" and found != "native":
        raise EchoMQError("the echomq module is not loaded on this server (EMQ.VERSION is unknown)")
    executor = AsyncExecutor(client, kind or found)
    await executor.load()
    return executor


def detect_sync(client: redis.Redis, kind: Kind | None = None) -> SyncExecutor:
    """:func:`detect`, synchronous."""
    answer: Any = None
    raw: Any = client
    try:
        answer = raw.execute_command("EMQ.VERSION")
    except ResponseError as err:
        if not _unknown(err):
            raise
    found: Kind = "native" if _module_speaks(answer) else "lua"
    if kind == "native" and found != "native":
        raise EchoMQError("the echomq module is not loaded on this server (EMQ.VERSION is unknown)")
    executor = SyncExecutor(client, kind or found)
    executor.load()
    return executor


__all__ = ["AsyncExecutor", "Call", "Kind", "Refused", "SyncExecutor", "detect", "detect_sync"]
