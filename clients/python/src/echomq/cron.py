"""Cron expressions, read as the Rust host's croner 4 reads them
(PROTOCOL.md §11.6: "as the OCPS / croner syntax reads them"), so that a
Python worker fires a ``cron`` schedule on the same ticks as ``emq work``.

What it reads: 5 fields (minute hour day month weekday), 6 (seconds
first) or 7 (a year last); ``*``, ``?`` (in the day fields), lists, ranges
``a-b``, steps ``*/n`` and ``a-b/n``; month and weekday names (``JAN``,
``MON``; weekday 7 is Sunday); in the day of the month ``L`` (its last
day), ``LW`` (its last weekday), ``nW`` (the weekday nearest day n); in
the weekday ``nL`` (the last such weekday of the month), ``n#k`` (the
k-th), a lone ``L`` (which croner reads, and which names no day) and a
leading ``+`` (day of month AND weekday, where both restricted mean
either, as Vixie cron has it); years 1 to 5000; ``@yearly``,
``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@hourly``.
Anything else is :class:`CronError`: a host that cannot read a
definition leaves the schedule alone (§11.6).

Time zones as croner resolves daylight saving: a wall-clock time that
falls twice (autumn) fires once, at its first instant, for a *fixed-time*
pattern (one second, one minute, one hour: ``0 30 1 * * *``) and at both
for any other; one that does not exist (spring) fires at the first
instant after the gap for a fixed-time pattern and not at all for others.
"""

from __future__ import annotations

import calendar
import itertools
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Callable, Iterator
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

YEARS = (1, 5000)
"""The years croner 4 reads (its ``YEAR_LOWER_LIMIT`` and ``YEAR_UPPER_LIMIT``): a year field outside is
refused, and a search ends at them (:data:`_REACH`)."""

_NICKNAMES = {"@YEARLY": "0 0 1 1 *", "@ANNUALLY": "0 0 1 1 *", "@MONTHLY": "0 0 1 * *",
              "@WEEKLY": "0 0 * * SUN", "@DAILY": "0 0 * * *", "@HOURLY": "0 * * * *"}
_WEEKDAYS = [("-SUN", "-7"), ("SUN", "0"), ("MON", "1"), ("TUE", "2"), ("WED", "3"), ("THU", "4"),
             ("FRI", "5"), ("SAT", "6")]
_MONTHS = [(name, str(i)) for i, name in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], start=1)]
_ALLOWED = "*/0123456789,-"
LAST = 0
"""The weekday field's "last of the month" mark (``5L``); 1 to 5 are ``#1`` to ``#5``; ``None``: any."""

_REACH = (datetime(YEARS[0], 12, 31, 23, 59, 59), datetime(YEARS[1], 1, 1))
"""The furthest wall-clock times a search reaches, back and forward, as croner's does: it says there is
no tick as soon as it would step on from a time in its first year (back) or its last (forward), so the
only time of those years it can answer is the first one it lands on (``0 0 0 1 1 * 5000`` has a tick,
``0 0 12 1 1 * 5000`` none)."""


class CronError(ValueError):
    """A cron expression this host does not read."""


@dataclass
class _Field:
    """One field's values; ``step`` and ``wildcard`` decide a fixed-time pattern as croner does."""

    values: set[int]
    step: int = 1
    wildcard: bool = False


def _number(text: str, low: int, high: int, what: str) -> int:
    if not text.isdigit():
        raise CronError(f"{what}: {text!r} is not a number")
    value = int(text)
    if not low <= value <= high:
        raise CronError(f"{what}: {value} is not in {low}..={high}")
    return value


def _field(text: str, low: int, high: int, what: str) -> _Field:
    """A plain field: ``*``, lists of numbers, ranges and steps."""
    found = _Field(set())
    if text == "*":
        return _Field(set(range(low, high + 1)), wildcard=True)
    for part in text.split(","):
        if not part:
            continue
        if "/" in part:
            span, _, step_text = part.partition("/")
            step = _number(step_text, 1, 10_000, what)
            found.step = step
            if span == "*":
                found.wildcard = True
                start, end = low, high
            elif "-" in span:
                a, _, b = span.partition("-")
                start, end = _number(a, low, high, what), _number(b, low, high, what)
            else:
                raise CronError(f"{what}: {part!r}: a step needs * or a range before it (*/{step_text})")
            if start > end:
                raise CronError(f"{what}: {part!r} is an empty range")
            found.values.update(range(start, end + 1, step))
        elif "-" in part:
            a, _, b = part.partition("-")
            start, end = _number(a, low, high, what), _number(b, low, high, what)
            if start > end:
                raise CronError(f"{what}: {part!r} is an empty range")
            found.values.update(range(start, end + 1))
        else:
            found.values.add(_number(part, low, high, what))
    return found


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression; :meth:`next_after` and :meth:`last_at_or_before` in a zone."""

    expression: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    last_day: bool
    last_weekday_of_month: bool
    nearest_weekday: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[tuple[int, int | None]]
    """(weekday 0-6 from Sunday, None for any, :data:`LAST` or the nth)."""
    years: frozenset[int] | None
    star_dom: bool
    star_dow: bool
    dom_and_dow: bool
    fixed_time: bool
    _month_days: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict, init=False, repr=False,
                                                                 compare=False)
    """The expression's days of a month, by (its 1st's weekday, Monday 0; its length): filled as needed."""

    @staticmethod
    def parse(expression: str) -> Cron:
        pattern = expression.upper().strip()
        if not pattern:
            raise CronError("the expression is empty")
        if "@" in pattern:
            pattern = _NICKNAMES.get(pattern, pattern)
        for name, number in _WEEKDAYS + _MONTHS:
            pattern = pattern.replace(name, number)
        parts = pattern.split()
        if not 5 <= len(parts) <= 7:
            raise CronError(f"{expression!r} has {len(parts)} fields, not 5 to 7")
        if len(parts) == 5:
            parts.insert(0, "0")
        if len(parts) == 6:
            parts.append("*")
        parts[3] = parts[3].replace("?", "*")
        parts[5] = parts[5].replace("?", "*")
        dom_and_dow = parts[5].startswith("+")
        if dom_and_dow:
            parts[5] = parts[5][1:]
        for i, part in enumerate(parts):
            extra = "LW" if i == 3 else "#L" if i == 5 else ""
            bad = [c for c in part if c not in _ALLOWED + extra]
            if bad:
                raise CronError(f"{expression!r}: {bad[0]!r} is not allowed in {part!r}")
        seconds = _field(parts[0], 0, 59, "seconds")
        minutes = _field(parts[1], 0, 59, "minutes")
        hours = _field(parts[2], 0, 23, "hours")
        days, last_day, last_weekday, nearest = _day_of_month(parts[3])
        months = _field(parts[4], 1, 12, "months")
        weekdays = _day_of_week(parts[5])
        years = None if parts[6] == "*" else frozenset(_field(parts[6], *YEARS, "years").values)

        def fixed(found: _Field) -> bool:
            return found.step == 1 and not found.wildcard and len(found.values) == 1

        return Cron(expression, frozenset(seconds.values), frozenset(minutes.values), frozenset(hours.values),
                    frozenset(days), last_day, last_weekday, frozenset(nearest), frozenset(months.values),
                    frozenset(weekdays), years, parts[3] == "*", parts[5] == "*", dom_and_dow,
                    fixed(seconds) and fixed(minutes) and fixed(hours))

    # -- days ---------------------------------------------------------------

    def day_matches(self, day: date) -> bool:
        """Whether ``day`` is one of the expression's days (its time aside)."""
        if day.month not in self.months or (self.years is not None and day.year not in self.years):
            return False
        return day.day in self._days_of(day.year, day.month)

    def _days_of(self, year: int, month: int) -> tuple[int, ...]:
        """The days of ``month`` of ``year`` the day fields name, in order (months and years aside):
        they depend on the month's length and its 1st's weekday only, so are worked out once for each."""
        first, length = calendar.monthrange(year, month)
        found = self._month_days.get((first, length))
        if found is None:
            found = self._month_days[(first, length)] = tuple(
                d for d in range(1, length + 1) if self._day_fits(d, length, first))
        return found

    def _day_fits(self, day: int, length: int, first: int) -> bool:
        """Whether day ``day`` of a month of ``length`` days whose 1st is weekday ``first`` (Monday 0)
        is one the day fields name."""
        def weekday(n: int) -> int:  # Monday 0
            return (first + n - 1) % 7

        dom = day in self.days
        if not dom and self.last_day and self.last_weekday_of_month:
            last = weekday(length)
            dom = day == (length - 1 if last == 5 else length - 2 if last == 6 else length)
        elif not dom and self.last_day and day == length:
            dom = True
        if not dom and self.nearest_weekday:
            dom = self._nearest(day, length, weekday)
        sunday_first = (weekday(day) + 1) % 7
        nth = (day - 1) // 7 + 1
        dow = ((sunday_first, nth) in self.weekdays or (sunday_first, None) in self.weekdays
               or ((sunday_first, LAST) in self.weekdays and day + 7 > length))
        if (dom and self.star_dow) or (dow and self.star_dom):
            return True
        if not self.star_dom and not self.star_dow:
            return (dom and dow) if self.dom_and_dow else (dom or dow)
        return False

    def _nearest(self, day: int, length: int, weekday_of: Callable[[int], int]) -> bool:
        for wanted in range(max(1, day - 2), min(length, day + 2) + 1):
            if wanted not in self.nearest_weekday:
                continue
            weekday = weekday_of(wanted)  # Monday 0
            if weekday < 5:
                target = wanted
            elif weekday == 5:
                target = wanted - 1 if wanted > 1 else wanted + 2
            else:
                target = wanted + 1 if wanted < length else wanted - 2
            if target == day:
                return True
        return False

    def _days(self, start: date, backward: bool) -> Iterator[date]:
        """The expression's days from ``start`` on (back, ``backward``), in order, up to croner's
        :data:`YEARS`: a year or a month it does not name is skipped whole, not day by day."""
        year, month = start.year, start.month
        while YEARS[0] <= year <= YEARS[1]:
            if self.years is not None and year not in self.years:
                year, month = (year - 1, 12) if backward else (year + 1, 1)
                continue
            if month in self.months:
                days = self._days_of(year, month)
                for d in reversed(days) if backward else days:
                    day = date(year, month, d)
                    if day > start if backward else day < start:
                        continue
                    yield day
            if backward:
                year, month = (year, month - 1) if month > 1 else (year - 1, 12)
            else:
                year, month = (year, month + 1) if month < 12 else (year + 1, 1)

    # -- instants -----------------------------------------------------------

    def _times(self, backward: bool, hours: range) -> Iterator[tuple[int, int, int]]:
        ordered = [sorted(found, reverse=backward) for found in (self.hours, self.minutes, self.seconds)]
        return itertools.product([h for h in ordered[0] if h in hours], ordered[1], ordered[2])

    def _instants(self, wall: datetime, zone: ZoneInfo) -> list[int]:
        """The instants (ms) wall-clock time ``wall`` fires at in ``zone``, as croner resolves DST."""
        earlier = _ms(wall.replace(tzinfo=zone, fold=0))
        later = _ms(wall.replace(tzinfo=zone, fold=1))
        first, second = min(earlier, later), max(earlier, later)
        if first == second:
            return [first]
        if _wall(first, zone) == wall and _wall(second, zone) == wall:  # it falls twice
            return [first] if self.fixed_time else [first, second]
        if not self.fixed_time:  # it does not exist
            return []
        after = wall.replace(second=0)
        for _ in range(24 * 60):
            after += timedelta(minutes=1)
            instant = _ms(after.replace(tzinfo=zone, fold=0))
            if _wall(instant, zone) == after:
                return [instant] if after.date() == wall.date() else []
        return []

    def _search(self, ms: int, zone: ZoneInfo, backward: bool) -> int | None:
        """The nearest tick after ``ms`` (before or at it, ``backward``): the
        days in order from ``ms``'s, each day's wall-clock times in order.
        On a day without a change of offset the instants keep the walls'
        order, so its first fit is the day's answer; on one with a change
        (DST), every wall within :data:`_SHIFT` of a fit is looked at too.
        It ends at croner's :data:`_REACH`: None, there is no tick."""
        edge = _wall(ms, zone) + (_SHIFT if backward else -_SHIFT)
        reach = _REACH[0] if backward else _REACH[1]
        best: int | None = None
        for day in self._days(edge.date(), backward):
            if best is not None and abs((day - _wall(best, zone).date()).days) > 1:
                return best
            hours = range(edge.hour + 1) if backward else range(edge.hour, 24)
            midnight = datetime(day.year, day.month, day.day)
            offset = _offset(midnight, zone)
            steady = offset == _offset(midnight + timedelta(days=1), zone)
            fit: datetime | None = None
            for hour, minute, second in self._times(backward, hours if day == edge.date() else range(24)):
                wall = midnight.replace(hour=hour, minute=minute, second=second)
                if fit is not None and abs(wall - fit) > _SHIFT:
                    break
                if wall < reach if backward else wall > reach:
                    continue
                if steady:
                    instants = [int((wall - _EPOCH).total_seconds() - offset) * 1000]
                else:
                    instants = self._instants(wall, zone)
                found = [t for t in instants if (t <= ms if backward else t > ms)]
                if not found:
                    continue
                pick = max(found) if backward else min(found)
                if best is None or (pick > best if backward else pick < best):
                    best = pick
                if steady:
                    break
                fit = fit or wall
        return best

    def next_after(self, ms: int, zone: ZoneInfo) -> int | None:
        """The first tick strictly after ``ms`` (ms since the epoch), or None."""
        return self._search(ms, zone, backward=False)

    def last_at_or_before(self, ms: int, zone: ZoneInfo) -> int | None:
        """The last tick at or before ``ms``, or None."""
        return self._search(ms, zone, backward=True)


def _day_of_month(text: str) -> tuple[set[int], bool, bool, set[int]]:
    """The day-of-month field: its days, ``L``, ``LW``, and the ``nW`` days."""
    if text == "*":
        return set(range(1, 32)), False, False, set()
    days: set[int] = set()
    last = last_weekday = False
    nearest: set[int] = set()
    for part in text.split(","):
        if part == "L":
            last = True
        elif part == "LW":
            last = last_weekday = True
        elif part.endswith("W") and "-" not in part and "/" not in part:
            nearest.add(_number(part[:-1], 1, 31, "day of month"))
        elif "L" in part or "W" in part:
            raise CronError(f"day of month: {part!r} is not read")
        else:
            days |= _field(part, 1, 31, "day of month").values
    return days, last, last_weekday, nearest


def _day_of_week(text: str) -> set[tuple[int, int | None]]:
    """The weekday field as (weekday from Sunday, nth: None any, :data:`LAST`, 1 to 5); 7 is Sunday."""
    found: set[tuple[int, int | None]] = set()
    if text == "*":
        return {(d, None) for d in range(7)}
    for part in text.split(","):
        if not part or part == "L":  # croner reads a lone L as a flag no weekday's match looks at
            continue
        nth: int | None = None
        if part.endswith("L"):
            nth, part = LAST, part[:-1].removesuffix("#")
            if "-" in part or "/" in part:
                raise CronError(f"weekday: {part}L: a last weekday is one day, not a range")
        elif "#" in part:
            part, _, which = part.partition("#")
            nth = _number(which, 1, 5, "weekday's nth")
        if not part or "L" in part or "#" in part:
            raise CronError(f"weekday: {part!r} is not read")
        for day in _field(part, 0, 7, "weekday").values:
            found.add((day % 7, nth))
    return found


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``: :class:`CronError` when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise CronError(f"unknown time zone {name!r}: {err}") from None


_SHIFT = timedelta(hours=3)
"""More than any change of a zone's offset (DST moves it by an hour, two at most)."""

_EPOCH = datetime(1970, 1, 1)


def _offset(wall: datetime, zone: ZoneInfo) -> float:
    """The zone's UTC offset at ``wall`` (its first instant), in seconds."""
    found = wall.replace(tzinfo=zone).utcoffset()
    return 0.0 if found is None else found.total_seconds()


def _ms(at: datetime) -> int:
    return int(at.timestamp()) * 1000


def _wall(ms: int, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(ms // 1000, timezone.utc).astimezone(zone).replace(tzinfo=None)


__all__ = ["Cron", "CronError", "zone"]
