"""Cron schedules fired by Python workers (issue 51): expressions read as
the Rust host's croner reads them (its own daylight-saving cases, and the
next tick ``emq schedule add --cron`` stores for each of a table of
expressions), and a cron schedule on a queue only Python workers run fires,
on Lua and on Native."""

from __future__ import annotations

import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

import echomq
from echomq import calls
from echomq.cron import Cron, CronError, zone
from echomq.schedule import Cron as CronSchedule
from echomq.schedule import _NEVER as NEVER_TICK
from echomq.schedule import fires, read, tick_id

from conftest import RedisServer, eventually, working
from test_interop import emq


def _at(text: str, where: str) -> int:
    """``text``, an ISO time with its offset or a wall time in ``where``, as ms."""
    found = datetime.fromisoformat(text)
    if found.tzinfo is None:
        found = found.replace(tzinfo=ZoneInfo(where))
    return int(found.timestamp() * 1000)


STOCKHOLM = "Europe/Stockholm"


@pytest.mark.parametrize("expression, start, expected", [
    # croner's own DST cases (croner 4.0.3, src/lib.rs tests).
    ("0 30 2 * * *", "2025-03-30T01:59:59", "2025-03-30T03:00:00+02:00"),   # fixed time in the gap: after it
    ("0 */5 * * * *", "2025-03-30T01:59:59", "2025-03-30T03:00:00+02:00"),  # interval: the gap skipped
    ("* * * * * *", "2025-03-30T01:59:59", "2025-03-30T03:00:00+02:00"),
    ("0 30 2 * * *", "2025-10-26T01:59:59", "2025-10-26T02:30:00+02:00"),   # fixed time twice: the first
    ("0 30 2 * * *", "2025-10-26T03:00:00+01:00", "2025-10-27T02:30:00+01:00"),  # ... and not the second
    ("0 * * * * *", "2025-10-26T02:59:30+02:00", "2025-10-26T02:00:00+01:00"),  # interval: both hours
])
def test_daylight_saving_is_resolved_as_croner_resolves_it(expression: str, start: str, expected: str) -> None:
    found = Cron.parse(expression).next_after(_at(start, STOCKHOLM), zone(STOCKHOLM))
    assert found == _at(expected, STOCKHOLM)


@pytest.mark.parametrize("expression, days", [
    ("0 0 L * *", ["2026-01-31", "2026-02-28", "2026-03-31"]),
    ("0 0 LW * *", ["2026-01-30", "2026-02-27", "2026-03-31"]),
    ("0 0 15W * *", ["2026-01-15", "2026-02-16", "2026-03-16"]),
    ("0 0 * * 5L", ["2026-01-30", "2026-02-27", "2026-03-27"]),
    ("0 0 * * 1#2", ["2026-01-12", "2026-02-09", "2026-03-09"]),
    ("0 0 1 * +MON", ["2026-06-01", "2027-02-01", "2027-03-01"]),     # + : the 1st AND a Monday
    ("0 0 1,15 * MON", ["2026-01-05", "2026-01-12", "2026-01-15"]),   # both restricted: either
    ("@weekly", ["2026-01-04", "2026-01-11", "2026-01-18"]),
    ("0 0 29 FEB ?", ["2028-02-29", "2032-02-29", "2036-02-29"]),
])
def test_the_day_fields_read_as_croner_reads_them(expression: str, days: list[str]) -> None:
    cron, utc = Cron.parse(expression), zone("UTC")
    tick, found = _at("2026-01-01T00:00:00+00:00", "UTC"), []
    for _ in days:
        tick = cron.next_after(tick, utc) or 0
        found.append(datetime.fromtimestamp(tick / 1000).strftime("%Y-%m-%d"))
    assert found == days
    assert cron.last_at_or_before(tick, utc) == tick and cron.last_at_or_before(tick - 1, utc) != tick


@pytest.mark.parametrize("expression", ["", "* * * *", "61 * * * *", "*/0 * * * *", "5/10 * * * *",
                                        "0 0 5L * *", "0 0 1-5W * *", "0 0 * * 1-5L", "0 0 * * 1#6",
                                        "0 0 * * * * * *", "@every 5m", "0 9 * * MON-FRI%", "0 0 0 1 1 * 5001",
                                        "0 0 0 1 1 * 9999", "0 0 0 1 1 * 0"])
def test_an_expression_croner_refuses_is_refused(expression: str) -> None:
    with pytest.raises(CronError):
        Cron.parse(expression)


@pytest.mark.parametrize("expression, expected", [
    ("0 0 * * L", None),                                  # a lone L in the weekday: read, and no day is one
    ("0 0 0 30 2 *", None),                               # 30 February
    ("0 0 0 1 1 * 2035", "2035-01-01T00:00:00+00:00"),    # nine years on
    ("0 0 0 29 2 +MON", "2044-02-29T00:00:00+00:00"),     # 29 February AND a Monday: 18 years on
    # croner's last year: its first second, and nothing after (croner 4.0.3's
    # test_find_occurrence_at_max_year_limit)
    ("0 0 0 1 1 * 5000", "5000-01-01T00:00:00+00:00"),
    ("0 0 12 1 1 * 5000", None),
    ("0 0 0 31 12 * 4999", "4999-12-31T00:00:00+00:00"),
])
def test_a_search_goes_as_far_as_croner_s(expression: str, expected: str | None) -> None:
    started = time.perf_counter()
    found = Cron.parse(expression).next_after(_at("2026-12-06T00:00:00+00:00", "UTC"), zone("UTC"))
    assert found == (None if expected is None else _at(expected, "UTC"))
    assert time.perf_counter() - started < 0.5, "a search skips what cannot match, not minute by minute"


def test_an_unreadable_cron_definition_is_left_alone() -> None:
    for definition in (b"cron Mars/Olympus last 0 9 * * *\n", b"cron UTC sometimes 0 9 * * *\n",
                       b"cron UTC last not cron\n", b"cron UTC last\n"):
        assert read(definition) is None, definition
    cron = read(b"paused cron Europe/Paris all:3 0 9 * * MON-FRI\n{}")
    assert cron == CronSchedule("Europe/Paris", "all:3", "0 9 * * MON-FRI", b"{}", paused=True)
    assert cron.definition() == b"paused cron Europe/Paris all:3 0 9 * * MON-FRI\n{}"


def test_missed_cron_ticks_fire_as_the_rust_host_plans_them() -> None:
    ks, day = echomq.Keyspace("q"), 86_400_000
    nine = 1_767_600_000_000 + 3_600_000  # 2026-01-05 09:00 UTC
    daily = CronSchedule.of("UTC", "0 9 * * *", b"p", missed="all:2")
    plan = fires(ks, "d", daily, nine, nine + 3 * day + 1)
    assert [(c.args[0], c.args[3], c.args[4]) for c in plan] == [
        (tick_id("q", "d", nine + 2 * day).encode(), str(nine).encode(), str(nine + 3 * day).encode()),
        (tick_id("q", "d", nine + 3 * day).encode(), str(nine + 3 * day).encode(), str(nine + 4 * day).encode())]
    [skip] = fires(ks, "d", daily.with_paused(True), nine, nine + 3 * day + 1)
    assert skip.args[3:] == [str(nine).encode(), str(nine + 4 * day).encode(), b"SKIP", b"1"]


EXPRESSIONS = [("0 9 * * MON-FRI", "Europe/Paris"), ("*/7 * * * *", "UTC"), ("30 2 * * *", "America/New_York"),
               ("0 0 L * *", "Asia/Tokyo"), ("15 10 * * 5L", "Australia/Lord_Howe"), ("0 0 1,15 * MON", "UTC"),
               ("*/20 * * * * *", "UTC"), ("0 12 * JAN,JUL 1#1", "Europe/London"), ("@hourly", "Asia/Kolkata"),
               ("0 0 LW * *", "UTC"), ("0 0 0 1 1 * 2035", "Europe/Paris"), ("0 0 0 29 2 +MON", "UTC")]
NEVER = ["0 0 * * L", "0 0 12 1 1 * 5000", "0 0 0 1 1 * 3000"]
"""Expressions croner reads with no tick, or none in AT_MS's range: ``emq schedule add`` refuses them as
never ticking, and their first tick here is the "never" one."""


async def test_each_expression_s_next_tick_is_the_one_emq_stores(queue: echomq.Queue, server: RedisServer,
                                                                 kind: str) -> None:
    for i, (expression, where) in enumerate(EXPRESSIONS):
        before = int((await queue.executor.run(calls.schedules(queue.keyspace, limit=1)))[0])
        emq(server, kind, "schedule", "add", "--cron", expression, "--tz", where, queue.name, f"s{i}", "p")
        reply = await queue.executor.run(calls.schedules(queue.keyspace))
        stored = {name: (definition, int(following)) for name, definition, following in reply[1:]}
        definition, following = stored[f"s{i}".encode()]
        parsed = read(definition)
        assert isinstance(parsed, CronSchedule), definition
        after = int((await queue.executor.run(calls.schedules(queue.keyspace, limit=1)))[0])
        # emq computed its tick from the server's now at some instant between the two reads.
        assert following in {parsed.next_after(before), parsed.next_after(after)}, (expression, where)
    for expression in NEVER:
        assert CronSchedule.of("UTC", expression, b"p").first_after(before) == NEVER_TICK, expression
        never = emq(server, kind, "schedule", "add", "--cron", expression, queue.name, "never", "p", check=False)
        assert b"never ticks" in never.stderr, (expression, never.stderr)
    late = emq(server, kind, "schedule", "add", "--cron", "0 0 0 1 1 * 5001", queue.name, "late", "p", check=False)
    assert late.returncode != 0 and b"out of bounds" in late.stderr, "croner reads years up to 5000"


async def test_a_cron_schedule_emq_added_fires_on_a_queue_only_python_works(
        queue: echomq.Queue, server: RedisServer, kind: str) -> None:
    emq(server, kind, "schedule", "add", "--cron", "* * * * * *", queue.name, "every-second", "cron tick")
    fired: list[echomq.Job] = []

    async def handle(job: echomq.Job) -> None:
        fired.append(job)

    async with working(echomq.Worker(queue, handle, upkeep=0.05)):
        await eventually(lambda: _fired(fired), what="a tick of emq's cron schedule, fired by Python")
    job = fired[0]
    tick = echomq.ids.decode_ulid(job.id[4:]) >> 80
    assert job.payload == b"cron tick" and tick % 1000 == 0
    assert job.id == tick_id(queue.name, "every-second", tick)


async def _fired(fired: list[echomq.Job]) -> bool:
    return bool(fired)


async def test_schedule_cron_from_python_reads_back_in_emq(queue: echomq.Queue, server: RedisServer,
                                                           kind: str) -> None:
    first = await queue.schedule_cron("digest", "0 9 * * MON-FRI", b"{}", zone="Europe/Paris", missed="all:3")
    assert first > time.time() * 1000
    listed = emq(server, kind, "schedule", "list", queue.name).stdout.decode()
    assert "digest" in listed and "0 9 * * MON-FRI" in listed, listed
    before = (await queue.executor.run(calls.schedules(queue.keyspace)))[1:]
    for bad, says in [({"zone": "Mars/Olympus"}, "unknown time zone"), ({"missed": "often"}, "missed 'often'"),
                      ({"expression": "0 9 * *"}, "has 4 fields")]:
        arguments = {"expression": "0 9 * * *", **bad}
        expression = arguments.pop("expression")
        with pytest.raises(echomq.InvalidInput, match=says):
            await queue.schedule_cron("bad", expression, b"{}", **arguments)
    assert (await queue.executor.run(calls.schedules(queue.keyspace)))[1:] == before
