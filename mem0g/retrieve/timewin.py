"""Time in the query: a soft window that boosts facts and edges said or valid then.

"in May 2023", "on 7 May 2023", "2023-05-07", "in 2023", "last year", "this month", "three
weeks ago", "yesterday", "before June 2023", "after 2022", "between 2020 and 2022", "from May
2021 to June 2022" become a `TimeWindow` [start, end) relative to a reference time (the
question's "now"; default the present), calendar days, months and years being those of the
reference time's zone (UTC when it has none), so "yesterday" is the asker's yesterday; the
window is returned in UTC. Expressions are
found by a small pattern list and resolved with `dateparser` (absolute dates) or calendar
arithmetic (relative ones), so a word like "may" alone is never a date. "When ..." questions
(and "what year/month/date", "how long ago") set `asks_when`: facts whose text names a time
are preferred. The window only boosts (`time` ranking in retrieve/fusion.py); `as_of` is the
hard filter (retrieve/timeline.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone, tzinfo

import dateparser
from pydantic import BaseModel

from mem0g.config import FusionConfig
from mem0g.retrieve.fusion import fuse, ranked

UTC = timezone.utc
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple": 2}  # fmt: skip
_UNIT = r"(day|week|month|year)s?"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PREP = r"(?:in|during|since|until|before|after|by|prior\s+to)"
_NO_YEAR = r"(?!\.?,?\s*(?:of\s+)?\d)"  # "May 7" but not "May 7, 2023" (the "day" kind's)
_PATTERNS = [  # (kind, pattern), tried in this order; spans never overlap
    ("iso", r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"),
    ("day", rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTHS})\.?,?\s+(\d{{4}})\b"),
    ("day", rf"\b({_MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"),
    ("month", rf"\b({_MONTHS})\.?,?\s+(?:of\s+)?(\d{{4}})\b"),
    ("day_only", rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTHS})\b{_NO_YEAR}"),
    ("day_only", rf"\b({_MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b{_NO_YEAR}"),
    ("ago", rf"\b(\d+|{'|'.join(_NUMBERS)})\s+(?:of\s+)?{_UNIT}\s+ago\b"),
    ("weekend", r"\b(last|this|next|past|the)\s+weekend\b"),
    ("relative", rf"\b(last|this|next|past)\s+{_UNIT}\b"),
    ("weekday", rf"\b(last|this|next|on)\s+({'|'.join(_WEEKDAYS)})\b(?!s)"),
    ("named", r"\b(the\s+day\s+before\s+yesterday|yesterday|today|tonight|last\s+night)\b"),
    ("month_only", rf"\b{_PREP}\s+({_MONTHS})\b"),
    ("year", rf"\b(?:{_PREP}|of)\s+((?:19|20)\d{{2}})\b"),
    ("year", r"\b((?:19|20)\d{2})\b"),
]
_COMPILED = [(kind, re.compile(p, re.IGNORECASE)) for kind, p in _PATTERNS]
_LEAD = re.compile(r"(before|until|by|prior\s+to|after|since)\b", re.IGNORECASE)
_BEFORE = re.compile(r"\b(before|until|by|prior\s+to)\s*$", re.IGNORECASE)
_AFTER = re.compile(r"\b(after|since)\s*$", re.IGNORECASE)
_FROM = re.compile(r"\b(between|from)\s*$", re.IGNORECASE)  # a range's opening word
_TO = re.compile(r"\s*(and|to|until|till|through|-|–)?\s*", re.IGNORECASE)  # the gap between
_WHEN = re.compile(
    r"^\s*(when\b|what (year|month|date|day|time)\b|how long ago\b|since when\b"
    r"|which (year|month|day)\b)",
    re.IGNORECASE,
)
# a fact "names a time" when its text holds a date-like expression (for "when" questions)
DATED = re.compile(
    rf"\b((19|20)\d{{2}}|{_MONTHS}|yesterday|today|tomorrow|last (week|month|year|weekend)|"
    rf"\d+\s+{_UNIT}\s+ago|(mon|tues|wednes|thurs|fri|satur|sun)day)\b",
    re.IGNORECASE,
)


class TimeWindow(BaseModel):
    """[start, end): either end may be open ("before June 2023": no start)."""

    start: datetime | None = None
    end: datetime | None = None
    expression: str = ""

    def contains(self, when: datetime | None) -> bool:
        if when is None:
            return False
        return (self.start is None or self.start <= when) and (self.end is None or when < self.end)

    def overlaps(self, start: datetime | None, end: datetime | None) -> bool:
        """Whether [start, end) (open ends allowed) meets the window."""
        return (self.end is None or start is None or start < self.end) and (
            self.start is None or end is None or end > self.start
        )


class QueryTime(BaseModel):
    window: TimeWindow | None = None
    asks_when: bool = False

    def window_only(self) -> QueryTime:
        """The window alone (edges all carry a time: "when" prefers nothing among them)."""
        return QueryTime(window=self.window)


def _month_start(year: int, month: int, zone: tzinfo | None) -> datetime:
    return datetime(year, month, 1, tzinfo=zone)


def _add_months(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    return _month_start(index // 12, index % 12 + 1, when.tzinfo)


def _parse(text: str, ref: datetime) -> datetime | None:
    found = dateparser.parse(
        text,
        languages=["en"],
        settings={
            "RELATIVE_BASE": ref.replace(tzinfo=None),
            "PREFER_DATES_FROM": "past",
            "TIMEZONE": "UTC",
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    return None if found is None else found.replace(tzinfo=ref.tzinfo)


def _unit_span(unit: str, anchor: datetime) -> tuple[datetime, datetime]:
    """The calendar day/week/month/year holding `anchor` (in its zone)."""
    zone = anchor.tzinfo
    day = datetime(anchor.year, anchor.month, anchor.day, tzinfo=zone)
    if unit == "day":
        return day, day + timedelta(days=1)
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if unit == "month":
        start = _month_start(anchor.year, anchor.month, zone)
        return start, _add_months(start, 1)
    return datetime(anchor.year, 1, 1, tzinfo=zone), datetime(anchor.year + 1, 1, 1, tzinfo=zone)


def _shift(unit: str, anchor: datetime, n: int) -> datetime:
    """`anchor` moved n units, the day clamped to the target month's last day: a month
    before 31 March is 29 February, not 2 March (a whole month off)."""
    if unit == "day":
        return anchor + timedelta(days=n)
    if unit == "week":
        return anchor + timedelta(weeks=n)
    first = _add_months(anchor, n if unit == "month" else 12 * n)
    last = (_add_months(first, 1) - timedelta(days=1)).day
    return anchor.replace(year=first.year, month=first.month, day=min(anchor.day, last))


def _weekday(which: str, target: int, ref: datetime) -> tuple[datetime, datetime]:
    """ "last Monday": the latest Monday before today; "on Monday": the latest up to today;
    "this Monday": this week's (weeks start on Monday); "next Monday": the first after
    today."""
    today = _unit_span("day", ref)[0]
    back = (today.weekday() - target) % 7
    if which == "last":
        back = back or 7
    elif which == "this":
        back = today.weekday() - target
    elif which == "next":
        back = -((target - today.weekday()) % 7 or 7)
    return _unit_span("day", today - timedelta(days=back))


def _weekend(which: str, ref: datetime) -> tuple[datetime, datetime]:
    """Saturday and Sunday: "this weekend" is this week's, "last weekend" the one before this
    week began (on a Monday, the one just gone), "the weekend" the latest that has begun."""
    week = _unit_span("week", ref)[0]
    saturday = week + timedelta(days=5)
    if which in ("last", "past") or (which == "the" and ref < saturday):
        saturday -= timedelta(days=7)
    elif which == "next":
        saturday += timedelta(days=7)
    return saturday, saturday + timedelta(days=2)


def _resolve(kind: str, m: re.Match[str], ref: datetime) -> tuple[datetime, datetime] | None:
    text = m.group(0)
    if kind == "iso":  # year-month-day only (dateparser read 2023-13-01 as 13 January)
        year, month, day = (int(g) for g in m.groups())
        return _unit_span("day", datetime(year, month, day, tzinfo=ref.tzinfo))
    if kind == "day":
        found = _parse(text, ref)
        return None if found is None else _unit_span("day", found)
    if kind == "month":
        found = _parse(f"1 {m.group(1)} {m.group(2)}", ref)
        return None if found is None else _unit_span("month", found)
    if kind == "day_only":  # "on May 7": the latest such day up to the reference time
        number, name = m.groups() if m.group(1).isdigit() else m.groups()[::-1]
        if name in ("may", "march"):  # lower case: "you may 2...", "we march 5 miles"
            return None
        found = _parse(f"{number} {name} {ref.year}", ref)
        if found is None:  # no such day ("31 June"), or 29 February of a common year
            return None
        if found > ref:
            found = found.replace(year=found.year - 1)
        return _unit_span("day", found)
    if kind == "weekday":
        return _weekday(m.group(1).lower(), _WEEKDAYS.index(m.group(2).lower()), ref)
    if kind == "weekend":
        return _weekend(m.group(1).lower(), ref)
    if kind == "month_only":  # the latest such month up to the reference time
        found = _parse(f"1 {m.group(1)} {ref.year}", ref)
        if found is None:
            return None
        if found > ref:
            found = found.replace(year=found.year - 1)
        return _unit_span("month", found)
    if kind == "year":
        return _unit_span("year", datetime(int(m.group(1)), 1, 1, tzinfo=ref.tzinfo))
    if kind == "named":
        word = " ".join(m.group(1).lower().split())
        if word == "last night":  # said last evening or this morning
            return _unit_span("day", ref - timedelta(days=1))[0], _unit_span("day", ref)[1]
        back = {"yesterday": 1, "the day before yesterday": 2}.get(word, 0)
        return _unit_span("day", ref - timedelta(days=back))
    if kind == "ago":
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        return _unit_span(m.group(2).lower(), _shift(m.group(2).lower(), ref, -n))
    if kind == "relative":
        which, unit = m.group(1).lower(), m.group(2).lower()
        if which == "past":  # "the past month": the stretch up to now
            return _shift(unit, ref, -1), ref + timedelta(seconds=1)
        offset = {"last": -1, "this": 0, "next": 1}[which]
        return _unit_span(unit, _shift(unit, ref, offset))
    return None


def _resolved(kind: str, m: re.Match[str], ref: datetime) -> tuple[datetime, datetime] | None:
    """`_resolve` in UTC; None for a time outside years 1..9999 ("9999 years ago")."""
    try:
        span = _resolve(kind, m, ref)
        return None if span is None else (span[0].astimezone(UTC), span[1].astimezone(UTC))
    except (OverflowError, ValueError):
        return None


def _ranged(
    query: str,
    found: list[tuple[str, re.Match[str]]],
    m: re.Match[str],
    span: tuple[datetime, datetime],
    ref: datetime,
) -> TimeWindow | None:
    """ "between 2020 and 2022", "from May 2021 to June 2022": the window from the first's
    start to the second's end, when `m` is one of the two."""
    by_place = sorted(found, key=lambda f: f[1].start())
    i = next(j for j, (_, other) in enumerate(by_place) if other is m)
    for a, b in ((i - 1, i), (i, i + 1)):
        if a < 0 or b >= len(by_place):
            continue
        (kind_a, ma), (kind_b, mb) = by_place[a], by_place[b]
        if not (_FROM.search(query[: ma.start()]) and _TO.fullmatch(query[ma.end() : mb.start()])):
            continue
        first = span if ma is m else _resolved(kind_a, ma, ref)
        last = span if mb is m else _resolved(kind_b, mb, ref)
        if first is not None and last is not None and first[0] < last[1]:
            return TimeWindow(start=first[0], end=last[1], expression=query[ma.start() : mb.end()])
    return None


def query_time(query: str, reference_time: datetime | None = None) -> QueryTime:
    """The query's time window (the first expression that resolves, or the range it opens or
    closes) and whether it asks when something happened. `reference_time`'s zone (UTC when
    naive) sets the calendar."""
    ref = reference_time or datetime.now(UTC)
    ref = ref if ref.tzinfo is not None else ref.replace(tzinfo=UTC)
    asks_when = bool(_WHEN.search(query))
    found: list[tuple[str, re.Match[str]]] = []  # in the patterns' order; spans never overlap
    for kind, pattern in _COMPILED:
        for m in pattern.finditer(query):
            if not any(m.start() < o.end() and o.start() < m.end() for _, o in found):
                found.append((kind, m))
    for kind, m in found:
        span = _resolved(kind, m, ref)
        if span is None:
            continue
        ranged = _ranged(query, found, m, span, ref)
        if ranged is not None:
            return QueryTime(window=ranged, asks_when=asks_when)
        start: datetime | None = span[0]  # either end may open below
        end: datetime | None = span[1]
        # the word before the expression, or its own first words ("since 2022")
        lead = _LEAD.match(m.group(0))
        before = lead.group(0) if lead else query[: m.start()]
        if _BEFORE.search(before):
            start, end = None, start
        elif _AFTER.search(before):
            start, end = (start if before.rstrip().lower().endswith("since") else end), None
        window = TimeWindow(start=start, end=end, expression=m.group(0))
        return QueryTime(window=window, asks_when=asks_when)
    return QueryTime(asks_when=asks_when)


def names_a_time(text: str) -> bool:
    return bool(DATED.search(text))


def time_ranking(
    order: list[tuple[str, float]],
    spans: Mapping[str, tuple[datetime | None, datetime | None]],
    texts: dict[str, str],
    qt: QueryTime,
) -> list[tuple[str, float]]:
    """The `time` ranking: among candidates in their fused order, those said or valid in the
    window ([start, end) of each, open ends allowed), then, for a "when" question, those
    whose text names a time. Empty when the query has neither."""
    out: list[tuple[str, float]] = []
    if qt.window is not None:
        w = qt.window
        out = [(i, s) for i, s in order if i in spans and w.overlaps(*spans[i])]
    if qt.asks_when:
        seen = {i for i, _ in out}
        out += [(i, s) for i, s in order if i not in seen and names_a_time(texts.get(i, ""))]
    return out


def with_time(
    rankings: Mapping[str, list[tuple[str, float]]],
    spans: Mapping[str, tuple[datetime | None, datetime | None]],
    texts: dict[str, str],
    qt: QueryTime,
    recipe: FusionConfig,
) -> dict[str, list[tuple[str, float]]]:
    """`rankings` plus the `time` ranking over their candidates (in their fused order)."""
    out = dict(rankings)
    if qt.window is None and not qt.asks_when:
        return out
    out["time"] = time_ranking(ranked(*fuse(out, recipe), out), spans, texts, qt)
    return out
