"""Hand-worked cases of ``followed_by`` and ``not_followed_by`` (docs/patterns.md;
docs/decisions.md, "Patterns (issue 26)"), shared by the reference and the Spark tests.

Times are integer microseconds. Every input carries the payload ``Event``; ``followed_by`` builds
``Match(key, a, b)`` from the two events' numbers. Each case gives its query, its inputs (items in
arrival order, settings) and the POINT output it must release, worked out by hand in the comments.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Mapping, Optional, Sequence

import streamql as sq

#: no CTI until the end of the input, then one at INFINITY: everything is released
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))
#: CTIs from the input's own CTI rows only
ROWS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000))


@dataclass(frozen=True)
class Event:
    tag: str
    n: int
    key: Optional[str]


@dataclass(frozen=True)
class Match:
    key: Optional[str]
    a: int
    b: int


def us(n: int) -> timedelta:
    return timedelta(microseconds=n)


def point(t: int, tag: str, n: int, key: Optional[str] = None) -> sq.Insert[Event]:
    return sq.Insert(t, t + 1, Event(tag, n, key))


@dataclass(frozen=True)
class Side:
    shape: sq.Shape
    items: Sequence[Any]
    settings: Optional[sq.AdvanceTimeSettings] = FLUSH


@dataclass(frozen=True)
class Case:
    name: str
    query: Callable[[Mapping[str, sq.Stream[Event]]], sq.Stream[Any]]
    sides: Mapping[str, Side]
    #: the POINT output: (start, payload), in any order
    points: Sequence[tuple[int, Any]]
    #: the output CTI (None: none), in microseconds
    final_cti: Optional[int]


def _pair(a: Event, b: Event) -> Match:
    return Match(a.key, a.n, b.n)


def _kind(s: sq.Stream[Event], tag: str) -> sq.Stream[Event]:
    return s.where(lambda e: e.tag == tag)


#: EsperTech's Esper reference, "Patterns", the ``every`` operator: the events
#: A1 B1 C1 B2 A2 D1 A3 B3 E1 A4 F1 B4, one per microsecond from 1
ESPER = [point(t, tag, n) for t, (tag, n) in enumerate(
    [("A", 1), ("B", 1), ("C", 1), ("B", 2), ("A", 2), ("D", 1), ("A", 3), ("B", 3), ("E", 1), ("A", 4), ("F", 1),
     ("B", 4)], start=1)]
ESPER_CTI_8 = [*ESPER[:8], sq.Cti(8)]


def _every_a_b(within: Optional[int] = None, all_matches: bool = False
               ) -> Callable[[Mapping[str, sq.Stream[Event]]], sq.Stream[Any]]:
    return lambda s: _kind(s["in"], "A").followed_by(_kind(s["in"], "B"), lambda a, b: True, _pair,
                                                     None if within is None else us(within), all_matches)


#: Flink CEP's "not followed by within": orders (n: the order number; key: the order id) and their
#: payments, 15 µs standing for 15 minutes
ORDERS = [point(0, "order", 1, "x"), point(5, "order", 2, "y"), point(10, "order", 3, "z")]
PAYMENTS = [point(10, "payment", 1, "x"), point(20, "payment", 2, "y")]


def _unpaid(s: Mapping[str, sq.Stream[Event]]) -> sq.Stream[Any]:
    return s["orders"].not_followed_by(s["payments"], lambda o, p: o.key == p.key, us(15))


CASES = [
    # every A -> B: each A with the first B after it: A1-B1 at 2, A2-B3 and A3-B3 at 8, A4-B4 at 12
    Case("every a -> b", _every_a_b(), {"in": Side(sq.Shape.POINT, ESPER)},
         [(2, Match(None, 1, 1)), (8, Match(None, 2, 3)), (8, Match(None, 3, 3)), (12, Match(None, 4, 4))],
         sq.time.INFINITY_MICROS),
    # every A -> every B: each A with every B after it (Esper lists these nine)
    Case("every a -> every b", _every_a_b(all_matches=True), {"in": Side(sq.Shape.POINT, ESPER)},
         [(2, Match(None, 1, 1)), (4, Match(None, 1, 2)), (8, Match(None, 1, 3)), (8, Match(None, 2, 3)),
          (8, Match(None, 3, 3)), (12, Match(None, 1, 4)), (12, Match(None, 2, 4)), (12, Match(None, 3, 4)),
          (12, Match(None, 4, 4))], sq.time.INFINITY_MICROS),
    # within 3: A2 (at 5) and B3 (at 8) are exactly 3 apart — no match; the others are closer
    Case("every a -> b within", _every_a_b(within=3), {"in": Side(sq.Shape.POINT, ESPER)},
         [(2, Match(None, 1, 1)), (8, Match(None, 3, 3)), (12, Match(None, 4, 4))], sq.time.INFINITY_MICROS),
    # the events up to B3 and a CTI at 8: A1-B1 at 2 is released; A2-B3 and A3-B3 at 8 are final
    # (a B still to come starts at 8 or later: it could tie with B3, never come before it), but the
    # output CTI is 8: a match still to come may start there (the release rule holds them back)
    Case("every a -> b at a CTI", _every_a_b(), {"in": Side(sq.Shape.POINT, ESPER_CTI_8, ROWS)},
         [(2, Match(None, 1, 1))], 8),
    # every A -> every B at the same CTI: the matches before it
    Case("every a -> every b at a CTI", _every_a_b(all_matches=True), {"in": Side(sq.Shape.POINT, ESPER_CTI_8, ROWS)},
         [(2, Match(None, 1, 1)), (4, Match(None, 1, 2))], 8),
    # order 2 is paid exactly 15 after it (half-open: too late) and order 3 never: absent at 20 and 25
    Case("not followed by within", _unpaid,
         {"orders": Side(sq.Shape.POINT, ORDERS), "payments": Side(sq.Shape.POINT, PAYMENTS)},
         [(20, Event("order", 2, "y")), (25, Event("order", 3, "z"))], sq.time.INFINITY_MICROS),
    # CTIs at 22: order 2's absence (at 20) is final, order 3's (at 25) is not; the output CTI is
    # the lesser of 22 + 15 and 22
    Case("not followed by within at a CTI", _unpaid,
         {"orders": Side(sq.Shape.POINT, [*ORDERS, sq.Cti(22)], ROWS),
          "payments": Side(sq.Shape.POINT, [*PAYMENTS, sq.Cti(22)], ROWS)},
         [(20, Event("order", 2, "y"))], 22),
    # ties: two identical A at 1 each start their own match; two Bs share the earliest start 3
    Case("ties", lambda s: _kind(s["in"], "A").followed_by(_kind(s["in"], "B"), lambda a, b: True, _pair),
         {"in": Side(sq.Shape.POINT, [point(1, "A", 1), point(1, "A", 1), point(3, "B", 1), point(3, "B", 2),
                                      point(5, "B", 3), point(1, "B", 9)])},
         [(3, Match(None, 1, 1)), (3, Match(None, 1, 1)), (3, Match(None, 1, 2)), (3, Match(None, 1, 2))],
         sq.time.INFINITY_MICROS),
    # a chain: A then B (at 3) then C after that (C at 2 is too early): one match at 4
    Case("chain", lambda s: _kind(s["in"], "A").followed_by(_kind(s["in"], "B"), lambda a, b: True, _pair)
         .followed_by(_kind(s["in"], "C"), lambda m, c: True, lambda m, c: Match(m.key, m.a * 10 + m.b, c.n)),
         {"in": Side(sq.Shape.POINT, [point(1, "A", 1), point(3, "B", 2), point(2, "C", 3), point(4, "C", 4)])},
         [(4, Match(None, 12, 4))], sq.time.INFINITY_MICROS),
    # a stream followed by itself: a withdrawal followed by another of its account within 10
    Case("withdrawals twice", lambda s: s["in"].followed_by(s["in"], lambda a, b: a.key == b.key, _pair, us(10)),
         {"in": Side(sq.Shape.POINT, [point(0, "w", 1, "x"), point(4, "w", 2, "x"), point(5, "w", 3, "y"),
                                      point(20, "w", 4, "x"), point(25, "w", 5, "x")])},
         [(4, Match("x", 1, 2)), (25, Match("x", 4, 5))], sq.time.INFINITY_MICROS),
    # intervals: only starts matter — A's long lifetime does not make B1 (which starts inside it) any
    # different from B2
    Case("intervals", lambda s: _kind(s["in"], "A").followed_by(_kind(s["in"], "B"), lambda a, b: True, _pair,
                                                                all_matches=True),
         {"in": Side(sq.Shape.INTERVAL, [sq.Insert(1, 50, Event("A", 1, None)), sq.Insert(0, 30, Event("B", 1, None)),
                                         sq.Insert(60, 61, Event("B", 2, None))])},
         [(60, Match(None, 1, 2))], sq.time.INFINITY_MICROS),
]
