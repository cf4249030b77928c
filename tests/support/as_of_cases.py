"""Hand-worked cases of ``as_of_join`` and ``to_signal`` (docs/as-of-joins.md;
docs/decisions.md), shared by the reference and the Spark tests.

Times are integer microseconds; both inputs carry the payload ``Tick`` and an as-of join builds
``Pair(sym, left px, right px)``. Each case gives its query, its inputs (items in arrival order,
settings) and what it must release, worked out by hand in the comments: INTERVAL output always,
POINT and EDGE output where they differ in an instructive way.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Mapping, Optional, Sequence

import streamql as sq
from streamql.time import INFINITY_MICROS

INF = sq.INFINITY
#: the final CTI of flushed inputs
FINAL = INFINITY_MICROS
START, END = sq.EdgeKind.START, sq.EdgeKind.END
#: no CTI until the end of the input, then one at INFINITY: everything is released
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))
#: CTIs from the input's own CTI rows only, late events moved (ADJUST)
ADJUST = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000),
                                policy=sq.AdvanceTimePolicy.ADJUST)


@dataclass(frozen=True)
class Tick:
    sym: Optional[str]
    px: int


@dataclass(frozen=True)
class Pair:
    sym: Optional[str]
    left: int
    right: int


def us(n: int) -> timedelta:
    return timedelta(microseconds=n)


def point(t: int, sym: Optional[str], px: int) -> sq.Insert[Tick]:
    return sq.Insert(t, t + 1, Tick(sym, px))


def interval(start: int, end: Any, sym: Optional[str], px: int) -> sq.Insert[Tick]:
    return sq.Insert(start, end, Tick(sym, px))


@dataclass(frozen=True)
class Side:
    shape: sq.Shape
    items: Sequence[Any]
    settings: Optional[sq.AdvanceTimeSettings] = FLUSH


@dataclass(frozen=True)
class Case:
    name: str
    query: Callable[[Mapping[str, sq.Stream[Tick]]], sq.Stream[Any]]
    sides: Mapping[str, Side]
    #: INTERVAL output: (start, end (None: INFINITY), payload)
    interval: Sequence[tuple[int, Optional[int], Any]]
    final_cti: Optional[int]
    #: POINT output: (start, payload); None: not worked out for this case
    points: Optional[list[tuple[int, Any]]] = None
    #: EDGE output: (kind, time, start, payload); None: not worked out for this case
    edges: Optional[list[tuple[sq.EdgeKind, int, int, Any]]] = None


def on_sym(within: Optional[int] = None) -> Callable[[Mapping[str, sq.Stream[Tick]]], sq.Stream[Any]]:
    """``left.as_of_join(right, l.sym == r.sym, Pair(...), within)``."""
    return lambda s: s["left"].as_of_join(s["right"], lambda l, r: l.sym == r.sym,
                                          lambda l, r: Pair(l.sym, l.px, r.px), None if within is None else us(within))


# trades (points) and quotes (intervals of any length: an as-of join looks at starts only)
TRADES = Side(sq.Shape.POINT, [point(5, "a", 1), point(10, "a", 2), point(10, "b", 3), point(1, "b", 4),
                               point(12, None, 5)])
QUOTES = Side(sq.Shape.INTERVAL, [interval(3, 4, "a", 100), interval(8, 9, "a", 200), interval(8, 50, "a", 201),
                                  interval(10, 11, "b", 300), interval(2, 3, None, 400), interval(0, 1, "c", 500)])
LATEST: list[tuple[int, Optional[int], Any]] = [(5, 6, Pair("a", 1, 100)), (10, 11, Pair("a", 2, 200)), (10, 11, Pair("a", 2, 201)),
          (10, 11, Pair("b", 3, 300))]

# a signal per symbol: a at 1, 4 (twice: a tie) and 9, b at 2, null at 3 and 6
SIGNAL_ITEMS = [point(1, "a", 100), point(4, "a", 110), point(2, "b", 200), point(4, "a", 111), point(3, None, 300),
                point(9, "a", 120), point(6, None, 301)]


def signal(s: Mapping[str, sq.Stream[Tick]]) -> sq.Stream[Any]:
    return s["quotes"].to_signal(lambda q: q.sym)


CASES: list[Case] = [
    Case(
        # trade a@5: the quotes of a at or before 5 start at 3 -> 100 (that quote ended at 4: only
        # its start counts); a@10: two quotes of a start at 8, the latest -> both; b@10: the quote of
        # b at 10 itself; b@1: no quote of b before it -> nothing; the null symbol matches nothing
        "latest_at_or_before_ties_and_no_partner", on_sym(), {"left": TRADES, "right": QUOTES},
        LATEST, FINAL,
        points=[(s, p) for s, _, p in LATEST],
        edges=[(START, 5, 5, Pair("a", 1, 100)), (END, 6, 5, Pair("a", 1, 100)),
               (START, 10, 10, Pair("a", 2, 200)), (START, 10, 10, Pair("a", 2, 201)),
               (START, 10, 10, Pair("b", 3, 300)),
               (END, 11, 10, Pair("a", 2, 200)), (END, 11, 10, Pair("a", 2, 201)), (END, 11, 10, Pair("b", 3, 300))]),
    Case(
        # within 1: a@5's quote is 2 before it, a@10's are 2 before it: only b@10 (0 before) is left
        "within_one_tick", on_sym(1), {"left": TRADES, "right": QUOTES},
        [(10, 11, Pair("b", 3, 300))], FINAL),
    Case(
        # within 2 reaches both: as without it
        "within_two_ticks", on_sym(2), {"left": TRADES, "right": QUOTES}, LATEST, FINAL),
    Case(
        # on filters before the latest is taken: a@10 (px 2) needs a quote above 200 -> 201 (its
        # tie 200 fails); a@5 (px 1) needs one above 100 -> none at or before 5; b@10 needs one above
        # 300 -> none
        "on_with_a_condition_of_both_sides",
        lambda s: s["left"].as_of_join(s["right"], lambda l, r: (l.sym == r.sym) & (r.px > l.px * 100),
                                       lambda l, r: Pair(l.sym, l.px, r.px)),
        {"left": TRADES, "right": QUOTES}, [(10, 11, Pair("a", 2, 201))], FINAL),
    Case(
        # a condition of the right side alone: the quote 200 is never a partner, a@10 keeps 201
        "on_with_a_condition_of_the_right_side",
        lambda s: s["left"].as_of_join(s["right"], lambda l, r: (r.px != 200) & (r.sym == l.sym),
                                       lambda l, r: Pair(l.sym, l.px, r.px)),
        {"left": TRADES, "right": QUOTES},
        [(5, 6, Pair("a", 1, 100)), (10, 11, Pair("a", 2, 201)), (10, 11, Pair("b", 3, 300))], FINAL),
    Case(
        # the output has the left event's lifetime, an open one included: [10, 30) meets the quote at
        # 5, [20, INFINITY) the one at its own start 20
        "left_lifetimes_are_kept",
        on_sym(),
        {"left": Side(sq.Shape.INTERVAL, [interval(10, 30, "a", 1), interval(20, INF, "a", 2)]),
         "right": Side(sq.Shape.POINT, [point(5, "a", 100), point(20, "a", 200), point(25, "a", 300)])},
        [(10, 30, Pair("a", 1, 100)), (20, None, Pair("a", 2, 200))], FINAL,
        edges=[(START, 10, 10, Pair("a", 1, 100)), (START, 20, 20, Pair("a", 2, 200)),
               (END, 30, 10, Pair("a", 1, 100))]),
    Case(
        # the quotes' CTI is at the trade's start 10: a quote at 10 may still come and would be the
        # partner instead; the output CTI is min(100, 10) and nothing is released
        "right_cti_at_the_left_start_holds_it", on_sym(),
        {"left": Side(sq.Shape.POINT, [point(10, "a", 1), sq.Cti(100)], None),
         "right": Side(sq.Shape.POINT, [point(8, "a", 100), sq.Cti(10)], None)},
        [], 10, points=[], edges=[]),
    Case(
        # the quotes' CTI passes 10: the quote at 8 is final
        "right_cti_past_the_left_start_releases_it", on_sym(),
        {"left": Side(sq.Shape.POINT, [point(10, "a", 1), sq.Cti(100)], None),
         "right": Side(sq.Shape.POINT, [point(8, "a", 100), sq.Cti(11)], None)},
        [(10, 11, Pair("a", 1, 100))], 11),
    Case(
        # ... and the quote at 10 that the CTI at 10 still allowed does come: it is the partner
        "a_quote_at_the_cti_replaces_the_earlier_one", on_sym(),
        {"left": Side(sq.Shape.POINT, [point(10, "a", 1), sq.Cti(100)], None),
         "right": Side(sq.Shape.POINT, [point(8, "a", 100), sq.Cti(10), point(10, "a", 101), sq.Cti(11)], None)},
        [(10, 11, Pair("a", 1, 101))], 11),
    Case(
        # the trades' CTI holds the output too (the least of the inputs')
        "left_cti_holds_it", on_sym(),
        {"left": Side(sq.Shape.POINT, [point(10, "a", 1), sq.Cti(10)], None),
         "right": Side(sq.Shape.POINT, [point(8, "a", 100)])},
        [], 10),
    Case(
        # to_signal by symbol: a@1 lasts until a@4, both a@4 until a@9, a@9 for ever; b@2 for ever;
        # the null symbol is one key: null@3 until null@6
        "signal_per_key_with_a_tie", signal, {"quotes": Side(sq.Shape.POINT, SIGNAL_ITEMS)},
        [(1, 4, Tick("a", 100)), (2, None, Tick("b", 200)), (3, 6, Tick(None, 300)), (4, 9, Tick("a", 110)),
         (4, 9, Tick("a", 111)), (6, None, Tick(None, 301)), (9, None, Tick("a", 120))], FINAL),
    Case(
        # CTI 9 (no flush): [1,4) and [3,6) end before it; both [4,9) end at it, made by the accepted
        # event a@9: final. b@2 and null@6 may still be ended by a later event: as intervals they
        # wait, as points and START edges they are released; a@9 starts at the CTI: nothing of it
        "signal_at_a_finite_cti", signal, {"quotes": Side(sq.Shape.POINT, [*SIGNAL_ITEMS, sq.Cti(9)], None)},
        [(1, 4, Tick("a", 100)), (3, 6, Tick(None, 300)), (4, 9, Tick("a", 110)), (4, 9, Tick("a", 111))], 9,
        points=[(1, Tick("a", 100)), (2, Tick("b", 200)), (3, Tick(None, 300)), (4, Tick("a", 110)),
                (4, Tick("a", 111)), (6, Tick(None, 301))],
        edges=[(START, 1, 1, Tick("a", 100)), (START, 2, 2, Tick("b", 200)), (START, 3, 3, Tick(None, 300)),
               (END, 4, 1, Tick("a", 100)), (START, 4, 4, Tick("a", 110)), (START, 4, 4, Tick("a", 111)),
               (END, 6, 3, Tick(None, 300)), (START, 6, 6, Tick(None, 301)),
               (END, 9, 4, Tick("a", 110)), (END, 9, 4, Tick("a", 111))]),
    Case(
        # CTI 8: the ends at 9 are past it and a quote of a at 8 could still cut [4, 9): they wait
        "signal_end_past_the_cti_waits", signal,
        {"quotes": Side(sq.Shape.POINT, [*SIGNAL_ITEMS[:5], SIGNAL_ITEMS[6], sq.Cti(8), SIGNAL_ITEMS[5]], None)},
        [(1, 4, Tick("a", 100)), (3, 6, Tick(None, 300))], 8),
    Case(
        # an end at the CTI made by an event whose start is not stable: the start edge of a@3 comes
        # after the CTI 5 and ADJUST moves it to 5, where an end edge at 5 could still remove it. So
        # a@1's end 5 is not final: the interval waits, its start is released
        "signal_end_at_the_cti_made_by_an_unstable_start", signal,
        {"quotes": Side(sq.Shape.EDGE, [sq.StartEdge(1, Tick("a", 100)), sq.Cti(5), sq.StartEdge(3, Tick("a", 110))],
                        ADJUST)},
        [], 5, points=[(1, Tick("a", 100))], edges=[(START, 1, 1, Tick("a", 100))]),
    Case(
        # the same with a start edge that arrives at 5 unmoved: a@1's end 5 is final
        "signal_end_at_the_cti_made_by_a_stable_start", signal,
        {"quotes": Side(sq.Shape.EDGE, [sq.StartEdge(1, Tick("a", 100)), sq.Cti(5), sq.StartEdge(5, Tick("a", 110))],
                        ADJUST)},
        [(1, 5, Tick("a", 100))], 5),
]
