"""Hand-worked top-k cases (docs/top-k.md), shared by the reference tests and the Spark tests: each
a query, its input, its settings and the released events worked out by hand.

- Trill's snapshot top-3 style: meter readings valid for some minutes overlap; in every snapshot
  interval the three largest readings, ranked;
- ties: SQL ``RANK`` over 9, 7, 7, 5, 3 — ties share a rank, the rank after a tie skips, ties at
  ``k`` are all kept; ``descending=False`` ranks the least first;
- nulls rank after every value in both directions (and tie among themselves);
- the top 3 meters per hour, per region, in hopping windows of an hour every half hour;
- a CTI that reaches only the first window releases only that window's top events.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import attrs

import streamql as sq

HOUR, MINUTE = timedelta(hours=1), timedelta(minutes=1)
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


def m(minute: int) -> datetime:
    """12:mm on 2024-05-01 (UTC); minute 60 and more roll over into 13:00 and later; negative before 12:00."""
    return datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc) + timedelta(minutes=minute)


def point(minute: int, payload: Any) -> sq.Insert[Any]:
    return sq.Insert(m(minute), m(minute) + sq.TICK, payload)


@dataclass(frozen=True)
class Reading:
    region: str
    meter: str
    kwh: Optional[float]


@dataclass(frozen=True)
class Top:
    meter: str
    kwh: Optional[float]
    rank: int


@dataclass(frozen=True)
class RegionTop:
    region: str
    meter: str
    rank: int


READINGS = sq.input("readings", Reading, shape=sq.Shape.INTERVAL)
POINTS = sq.input("points", Reading, shape=sq.Shape.POINT)


def top(e: Reading, rank: int) -> Top:
    return Top(e.meter, e.kwh, rank)


@attrs.frozen
class Case:
    name: str
    query: sq.Stream[Any]
    input: str
    items: list[Any]
    settings: Optional[sq.AdvanceTimeSettings]
    #: (start minute, end minute, payload) of every released INTERVAL event
    expected: list[tuple[datetime, datetime, Any]]
    final_cti: Optional[datetime] = None

    def events(self) -> list[sq.Event[Any]]:
        return [sq.Event(s, e, p) for s, e, p in self.expected]


def _snapshot_top_3() -> Case:
    a, b, c = Reading("n", "A", 5.0), Reading("n", "B", 9.0), Reading("n", "C", 7.0)
    d, e = Reading("n", "D", 6.0), Reading("n", "E", 8.0)
    items = [sq.Insert(m(0), m(10), a), sq.Insert(m(2), m(6), b), sq.Insert(m(3), m(8), c),
             sq.Insert(m(4), m(12), d), sq.Insert(m(5), m(9), e)]
    by_interval = {  # each snapshot interval: its events ranked, the fourth and later not kept
        (0, 2): [(a, 1)],
        (2, 3): [(b, 1), (a, 2)],
        (3, 4): [(b, 1), (c, 2), (a, 3)],
        (4, 5): [(b, 1), (c, 2), (d, 3)],          # A (5.0) ranks 4th
        (5, 6): [(b, 1), (e, 2), (c, 3)],          # D and A rank 4th and 5th
        (6, 8): [(e, 1), (c, 2), (d, 3)],          # B ended; A ranks 4th
        (8, 9): [(e, 1), (d, 2), (a, 3)],
        (9, 10): [(d, 1), (a, 2)],
        (10, 12): [(d, 1)],
    }
    expected = [(m(s), m(t), top(r, rank)) for (s, t), ranked in by_interval.items() for r, rank in ranked]
    query = READINGS.snapshot_window().top_k(3, lambda e: e.kwh, top)
    return Case("snapshot top 3", query, "readings", items, FLUSH, expected, sq.INFINITY)


_TIED = [("p", 5.0), ("q", 9.0), ("r", 7.0), ("s", 7.0), ("t", 3.0)]


def _tied(k: int, descending: bool, ranked: list[tuple[str, int]]) -> Case:
    items = [point(i, Reading("n", name, kwh)) for i, (name, kwh) in enumerate(_TIED)]
    kwh = dict(_TIED)
    query = POINTS.tumbling_window(HOUR).top_k(k, lambda e: e.kwh, top, descending=descending)
    expected = [(m(0), m(60), Top(name, kwh[name], rank)) for name, rank in ranked]
    order = "descending" if descending else "ascending"
    return Case(f"ties, k={k}, {order}", query, "points", items, FLUSH, expected, sq.INFINITY)


def _nulls(k: int, descending: bool, ranked: list[tuple[str, Optional[float], int]]) -> Case:
    items = [point(0, Reading("n", "u", 4.0)), point(1, Reading("n", "v", None)), point(2, Reading("n", "w", None)),
             point(3, Reading("n", "x", 2.0))]
    query = POINTS.tumbling_window(HOUR).top_k(k, lambda e: e.kwh, top, descending=descending)
    expected = [(m(0), m(60), Top(name, kwh, rank)) for name, kwh, rank in ranked]
    return Case(f"nulls last, k={k}, {'descending' if descending else 'ascending'}", query, "points", items, FLUSH,
                expected, sq.INFINITY)


def meter_readings() -> list[Any]:
    return [point(10, Reading("north", "n1", 5.0)), point(15, Reading("south", "s1", 3.0)),
            point(20, Reading("north", "n2", 8.0)), point(40, Reading("north", "n3", 6.0)),
            point(45, Reading("north", "n4", 8.0)), point(50, Reading("south", "s2", 4.0)),
            point(70, Reading("north", "n5", 9.0))]


def top_3_meters_per_hour() -> sq.Stream[RegionTop]:
    return (POINTS.group_by(lambda e: e.region)
            .hopping_window(HOUR, timedelta(minutes=30))
            .top_k(3, lambda e: e.kwh, lambda e, rank: RegionTop(e.region, e.meter, rank)))


def _top_3_meters() -> Case:
    windows = {  # (window start minute, region): the region's readings in the window, ranked
        (-30, "north"): [("n2", 1), ("n1", 2)],
        (0, "north"): [("n2", 1), ("n4", 1), ("n3", 3)],  # n2 and n4 tie; n1 ranks 4th
        (30, "north"): [("n5", 1), ("n4", 2), ("n3", 3)],
        (60, "north"): [("n5", 1)],
        (-30, "south"): [("s1", 1)],
        (0, "south"): [("s2", 1), ("s1", 2)],
        (30, "south"): [("s2", 1)],
    }
    expected = [(m(s), m(s + 60), RegionTop(region, meter, rank))
                for (s, region), ranked in windows.items() for meter, rank in ranked]
    return Case("top 3 meters per hour", top_3_meters_per_hour(), "points", meter_readings(), FLUSH, expected,
                sq.INFINITY)


def _partly_released() -> Case:
    # CTI rows only: 13:00 reaches the end of [12:00, 13:00) alone; the windows after it wait
    items = meter_readings()[:6] + [sq.Cti(m(60))] + meter_readings()[6:] + [sq.Cti(m(75))]
    query = POINTS.tumbling_window(HOUR).top_k(2, lambda e: e.kwh, lambda e, rank: RegionTop(e.region, e.meter, rank))
    expected = [(m(0), m(60), RegionTop("north", "n2", 1)), (m(0), m(60), RegionTop("north", "n4", 1))]
    return Case("a CTI releases the windows it reaches", query, "points", items, None, expected, m(60))


CASES = [
    _snapshot_top_3(),
    _tied(2, True, [("q", 1), ("r", 2), ("s", 2)]),                      # both 7s tie at k = 2
    _tied(4, True, [("q", 1), ("r", 2), ("s", 2), ("p", 4)]),            # the rank after the tie skips 3
    _tied(3, True, [("q", 1), ("r", 2), ("s", 2)]),                      # p ranks 4th: no rank 3
    _tied(2, False, [("t", 1), ("p", 2)]),
    _tied(3, False, [("t", 1), ("p", 2), ("r", 3), ("s", 3)]),
    _nulls(3, True, [("u", 4.0, 1), ("x", 2.0, 2), ("v", None, 3), ("w", None, 3)]),
    _nulls(2, False, [("x", 2.0, 1), ("u", 4.0, 2)]),                     # the nulls rank 3rd: not kept
    _nulls(1, False, [("x", 2.0, 1)]),
    _top_3_meters(),
    _partly_released(),
]
