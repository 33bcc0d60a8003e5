"""Every golden vector of ``protocol/vectors/`` replayed through this
package's executor layer (``echomq.SyncExecutor.run``), on Lua and on
Native, one test per case: the keyspace before loaded into an empty
database, the call sent, then the reply and the whole keyspace after
compared with the file's (times within the call's skew; the Lua executor's
records without the native stamps). protocol/vectors/README.md is the format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis

import echomq
from echomq.executor import Call

from conftest import REPO, Servers

VECTORS = REPO / "protocol" / "vectors"
STAMPS = ("enqueued_at", "updated_at")

DUMP = """
local out = {}
for _, key in ipairs(redis.call('KEYS', '*')) do
  local kind = redis.call('TYPE', key)['ok']
  local body = {}
  if kind == 'hash' then body = redis.call('HGETALL', key)
  elseif kind == 'zset' then body = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif kind == 'string' then body = {redis.call('GET', key)}
  elseif kind == 'list' then body = redis.call('LRANGE', key, 0, -1)
  elseif kind == 'set' then
    body = redis.call('SMEMBERS', key)
    table.sort(body)
  elseif kind == 'stream' then
    for _, entry in ipairs(redis.call('XRANGE', key, '-', '+')) do
      body[#body + 1] = entry[1]
      body[#body + 1] = entry[2]
    end
  end
  out[#out + 1] = {key, kind, body}
end
return out
"""


def _cases() -> Iterator[Any]:
    for path in sorted(VECTORS.glob("*.json")):
        file = json.loads(path.read_text())
        for case in file["cases"]:
            yield pytest.param(file["transition"], case, id=f"{path.stem}: {case['name']}")


CASES = list(_cases())


def test_the_vectors_hold_every_transition() -> None:
    names = {p.values[0] for p in CASES}
    assert names == set(echomq._protocol.transitions()), "a transition without vectors, or vectors of none"
    assert len(CASES) >= 150


class Clock:
    def __init__(self, now: int, skew: int) -> None:
        self.now = now
        self.skew = skew


def to_bytes(value: Any, now: int) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if "now" in value:
        return str(now + value["now"]).encode()
    if "hex" in value:
        return bytes.fromhex(value["hex"])
    if "repeat" in value:
        return to_bytes(value["repeat"], now) * value["count"]
    raise AssertionError(f"not bytes: {value}")


def to_number(value: Any, now: int) -> float:
    if isinstance(value, dict) and "now" in value:
        return float(now + value["now"])
    return float(value)


def same_number(want: Any, got: float, clock: Clock) -> bool:
    if isinstance(want, dict) and "now" in want:
        return abs(to_number(want, clock.now) - got) <= clock.skew
    if isinstance(want, dict) and "left" in want:
        return want["left"] - clock.skew <= got <= want["left"]
    return float(want) == got


def same_bytes(want: Any, got: bytes, clock: Clock) -> bool:
    if isinstance(want, dict) and "now" in want:
        try:
            return same_number(want, float(got.decode()), clock)
        except ValueError:
            return False
    return to_bytes(want, clock.now) == got


def same_reply(want: Any, got: Any, clock: Clock, inspect: bool = False) -> bool:
    if want is None:
        return got is None
    if isinstance(want, dict) and "int" in want:
        return isinstance(got, int) and same_number(want["int"], float(got), clock)
    if isinstance(want, dict) and "bulk" in want:
        return isinstance(got, bytes) and same_bytes(want["bulk"], got, clock)
    if isinstance(want, dict) and "error" in want:
        return (isinstance(got, echomq.Refused) and got.code == want["error"]["code"]
                and got.message == want["error"]["text"])
    if isinstance(want, list):
        if not isinstance(got, list) or len(want) != len(got):
            return False
        if inspect and want and isinstance(want[0], list) and isinstance(got[0], list):
            fields, values = want[0], got[0]
            if len(fields) != len(values):
                return False
            wanted = [(fields[i], fields[i + 1]) for i in range(0, len(fields), 2)]
            found = [(values[i], values[i + 1]) for i in range(0, len(values), 2)]
            if not all(any(same_reply(f, g, clock) and same_reply(v, h, clock) for g, h in found)
                       for f, v in wanted):
                return False
            return all(same_reply(w, g, clock) for w, g in zip(want[1:], got[1:]))
        return all(same_reply(w, g, clock) for w, g in zip(want, got))
    raise AssertionError(f"not a reply: {want}")


def load(client: redis.Redis, before: dict[str, Any], now: int) -> None:
    if not before:
        return
    pipe = client.pipeline(transaction=False)
    for key, entry in before.items():
        content = entry["value"]
        kind = entry["type"]
        if kind == "hash":
            pipe.hset(key, mapping={f: to_bytes(v, now) for f, v in content.items()})
        elif kind == "zset":
            for member, score in content:
                pipe.zadd(key, {to_bytes(member, now): to_number(score, now)})
        elif kind == "stream":
            for item in content:
                entry_id = f"{int(to_number(item['id']['ms'], now))}-{item['id']['seq']}"
                words: list[Any] = ["XADD", key, entry_id]
                for field, value in item["fields"]:
                    words += [to_bytes(field, now), to_bytes(value, now)]
                pipe.execute_command(*words)
        elif kind == "string":
            pipe.set(key, to_bytes(content, now))
        elif kind == "list":
            pipe.rpush(key, *[to_bytes(item, now) for item in content])
        elif kind == "set":
            pipe.sadd(key, *[to_bytes(member, now) for member in content])
        else:
            raise AssertionError(f"{key} is a {kind}")
    pipe.execute()


def slotted(field: str) -> bool:
    """A field of ``<q>counts`` that names a minute or hour of the clock (the
    stamps and the slots): on a server, whose clock is not the file's, only
    the totals are compared (protocol/vectors/README.md)."""
    return field in ("minute", "hour") or ":" in field


def slots_counted(want: Any, got: Any) -> tuple[Any, Any]:
    """COUNTS' reply on a clock that is not the file's: its slots compared by
    their number only, the time and the totals as they are."""
    if isinstance(want, list) and len(want) == 3 and isinstance(got, list) and len(got) == 3:
        return [want[0], want[1], {"int": len(want[2])}], [got[0], got[1], len(got[2])]
    return want, got


def compare(want: dict[str, Any], client: redis.Redis, clock: Clock, lua: bool) -> list[str]:
    found = {key.decode(): (kind.decode(), body) for key, kind, body in client.eval(DUMP, 0)}
    if sorted(want) != sorted(found):
        return [f"keys {sorted(want)}, found {sorted(found)}"]
    wrong = []
    for key, entry in want.items():
        kind, body = found[key]
        content = entry["value"]
        same = entry["type"] == kind
        if same and kind == "hash":
            def skip(field: str) -> bool:
                return (lua and ":job:" in key and field in STAMPS) or (
                    key.endswith(":counts") and slotted(field))
            wanted = {f: v for f, v in content.items() if not skip(f)}
            got = {body[i].decode(): body[i + 1] for i in range(0, len(body), 2) if not skip(body[i].decode())}
            same = sorted(wanted) == sorted(got) and all(same_bytes(v, got[f], clock) for f, v in wanted.items())
        elif same and kind == "zset":
            got = {body[i]: float(body[i + 1]) for i in range(0, len(body), 2)}
            same = len(content) == len(got) and all(
                to_bytes(m, clock.now) in got and same_number(s, got[to_bytes(m, clock.now)], clock)
                for m, s in content)
        elif same and kind == "stream":
            entries = [(body[i], body[i + 1]) for i in range(0, len(body), 2)]
            same = len(entries) == len(content) and all(
                same_number(item["id"]["ms"], float(entry_id.split(b"-")[0]), clock)
                and [to_bytes(x, clock.now) for pair in item["fields"] for x in pair] == list(fields)
                for item, (entry_id, fields) in zip(content, entries))
        elif same and kind == "string":
            same = not body or same_bytes(content, body[0], clock)
        elif same and kind in ("list", "set"):  # only keys of the wrong type, which no transition writes
            same = len(content) == len(body) and all(same_bytes(w, g, clock) for w, g in zip(content, body))
        if not same:
            wrong.append(f"{key}: want {entry}, found {kind} {body!r}")
    return wrong


def server_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


class Executors:
    def __init__(self, servers: Servers) -> None:
        self.servers = servers
        self.found: dict[str, tuple[redis.Redis, echomq.SyncExecutor]] = {}

    def __getitem__(self, kind: str) -> tuple[redis.Redis, echomq.SyncExecutor]:
        if kind not in self.found:
            client = self.servers[kind].client()
            self.found[kind] = (client, echomq.detect_sync(client))
            assert self.found[kind][1].kind == kind
        return self.found[kind]


@pytest.fixture(scope="module")
def executors(servers: Servers) -> Iterator[Executors]:
    found = Executors(servers)
    yield found
    for client, _ in found.found.values():
        client.flushdb()
        client.close()


@pytest.mark.parametrize("transition,case", CASES)
def test_vector(executors: Executors, kind: str,
                transition: str, case: dict[str, Any]) -> None:
    client, executor = executors[kind]
    client.flushdb()
    now = server_ms(client)
    load(client, case["before"], now)
    call = case["call"]
    keys = [to_bytes(k, now) for k in call["keys"]]
    args = [to_bytes(a, now) for a in call["args"]]
    try:
        got: Any = executor.run(Call(transition, keys, args))
    except echomq.Refused as refused:
        got = refused
    clock = Clock(now, server_ms(client) - now + 1)
    wrong = []
    want = case["reply"]
    if "value" in want:
        value = want["value"]
        if transition == "counts" and not isinstance(got, echomq.Refused):
            value, got = slots_counted(value, got)
        if isinstance(got, echomq.Refused) or not same_reply(value, got, clock, transition == "inspect"):
            wrong.append(f"reply: want {want['value']}, got {got!r}")
    elif not (isinstance(got, echomq.Refused) and got.code == want["error"]["code"]
              and got.message == want["error"]["text"]):
        wrong.append(f"refusal: want {want['error']}, got {got!r}")
    wrong += [f"after: {w}" for w in compare(case["after"], client, clock, kind == "lua")]
    assert not wrong, "\n".join(wrong)
