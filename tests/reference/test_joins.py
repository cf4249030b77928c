"""Hand-worked examples of the multi-stream operators — ``union``, ``join``, ``anti_join`` and
``clip`` — run through ``sq.reference.run``.

Every expected output is worked out by hand from docs/joins.md, docs/union.md and
docs/ctis-and-release.md and written out in full:

- seed 004 (SQLstream: rowtime bounds): the ordered merge (UNION ALL) of two streams P and Q,
  stuck without a rowtime bound on the slow input Q, and moving on with one (a CTI row);
- seed 001 (StreamInsight: advancing application time): the fast data stream joined with a slow
  reference stream, which releases nothing until the reference stream imports the data stream's
  CTIs (``AdvanceTimeImport``); an open (edge) reference event joined before it closes;
- joins with an equality and a non-equality predicate and with ``on=None`` (output lifetime = the
  intersection); an anti-join cutting one event into several pieces; ``clip`` with right events
  at the left event's start and at its end;
- stability and release at a finite CTI: an interval that ends exactly at the other input's CTI is
  released when what makes that boundary is stable and held when it is not
  (docs/ctis-and-release.md#stability-and-the-release-rule);
- the errors raised when such a query is built.
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any, Callable, Optional, cast

import pytest

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput

from support.stream_seeds import (DATA, DATA_ITEMS, IMPORT, JOINED, LOOKUP_ITEMS, MERGED, P_ROWS, Q_ROWS,
                                  ROWTIME_BOUNDS, MeterSite, Reading, Row, SiteReading, at, hm, point)

TICK = sq.TICK
INF = sq.INFINITY
#: no CTI until the end of the input, then one at INFINITY: everything is released
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


def given(items: list[InputItem[Any]], settings: Optional[sq.AdvanceTimeSettings] = None) -> ReferenceInput[Any]:
    """One input's items in arrival order, with its advance-time settings."""
    return ReferenceInput(items, settings)


def run(query: sq.Stream[Any], inputs: dict[str, ReferenceInput[Any]],
        output: sq.Shape = sq.Shape.INTERVAL) -> sq.Result[Any]:
    return sq.reference.run(query, inputs, output=output)


def lifetimes(result: sq.Result[Any]) -> list[tuple[datetime, datetime, Any]]:
    return [(e.start, e.end, e.payload) for e in result.events]


# --- seed 004: the ordered merge of two streams ---------------------------------------------------


def merge(q_rows: list[InputItem[Row]]) -> sq.Result[Row]:
    return run(MERGED, {"P": given(P_ROWS, ROWTIME_BOUNDS), "Q": given(q_rows, ROWTIME_BOUNDS)})


def test_seed_merge_stops_when_the_slow_input_has_no_rowtime_bound() -> None:
    result = merge(Q_ROWS)
    # CTIs: P 1:06 + t, Q 1:04 + t; the union's CTI is the lesser, 1:04 + t. "The merge algorithm
    # produces: 1:00 from P, 1:01 from Q, 1:02 from Q, 1:03 from P, 1:04 from Q. And now it stops":
    # 1:06 from P is not before the CTI (a Q row at 1:05 could still come)
    assert [(e.start, e.payload.stream) for e in result.events] == [
        (hm(1, 0), "P"), (hm(1, 1), "Q"), (hm(1, 2), "Q"), (hm(1, 3), "P"), (hm(1, 4), "Q")]
    assert all(e.end == e.start + TICK for e in result.events)
    assert result.final_cti == hm(1, 4) + TICK


def test_seed_merge_moves_on_with_a_rowtime_bound_on_the_slow_input() -> None:
    # "if we knew that the next Q row will have rowtime 1:10, we can output the last P row
    # immediately": Q's source punctuates with a CTI row at 1:10
    result = merge([*Q_ROWS, sq.Cti(hm(1, 10))])
    # Q's CTI is 1:10, P's 1:06 + t: the union's CTI is 1:06 + t, and 1:06 from P is released
    assert [(e.start, e.payload.stream) for e in result.events] == [
        (hm(1, 0), "P"), (hm(1, 1), "Q"), (hm(1, 2), "Q"), (hm(1, 3), "P"), (hm(1, 4), "Q"), (hm(1, 6), "P")]
    assert result.final_cti == hm(1, 6) + TICK


def test_seed_merge_waits_for_a_q_row_the_bound_allows_before_p() -> None:
    # "If we knew that the next Q row will arrive with rowtime 1:05, then we know we must wait for
    # it": a bound of 1:05 (non-strict: a row at 1:05 may still come) does not release 1:06 from P
    bounded = merge([*Q_ROWS, sq.Cti(hm(1, 5))])
    assert [e.start for e in bounded.events] == [hm(1, 0), hm(1, 1), hm(1, 2), hm(1, 3), hm(1, 4)]
    assert bounded.final_cti == hm(1, 5)
    # the Q row at 1:05 arrives (its own bound is 1:05 + t): it is released, and still not 1:06
    arrived = merge([*Q_ROWS, sq.Cti(hm(1, 5)), point(hm(1, 5), Row("Q"))])
    assert [(e.start, e.payload.stream) for e in arrived.events][-2:] == [(hm(1, 4), "Q"), (hm(1, 5), "Q")]
    assert arrived.final_cti == hm(1, 5) + TICK


def test_merge_with_ctis_at_the_rows_own_times_holds_the_last_row() -> None:
    # a CTI at a row's own rowtime (a non-strict bound, delay 0) commits only what lies before it:
    # the union's CTI is min(1:06, 1:04) = 1:04, and the row at 1:04 waits for a later CTI
    at_rows = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))
    result = run(MERGED, {"P": given(P_ROWS, at_rows), "Q": given(Q_ROWS, at_rows)})
    assert [(e.start, e.payload.stream) for e in result.events] == [
        (hm(1, 0), "P"), (hm(1, 1), "Q"), (hm(1, 2), "Q"), (hm(1, 3), "P")]
    assert result.final_cti == hm(1, 4)


def test_merge_flushed_releases_every_row_in_rowtime_order() -> None:
    result = run(MERGED, {"P": given(P_ROWS, FLUSH), "Q": given(Q_ROWS, FLUSH)})
    assert [(e.start, e.payload.stream) for e in result.events] == [
        (hm(1, 0), "P"), (hm(1, 1), "Q"), (hm(1, 2), "Q"), (hm(1, 3), "P"), (hm(1, 4), "Q"), (hm(1, 6), "P")]
    assert result.final_cti == INF


def test_union_of_three_takes_the_least_cti_and_keeps_duplicates() -> None:
    r = sq.input("R", Row, shape=sq.Shape.INTERVAL)
    s = sq.input("S", Row, shape=sq.Shape.INTERVAL)
    u = sq.input("U", Row, shape=sq.Shape.INTERVAL)
    same = sq.Insert(at(1), at(4), Row("x"))
    inputs: dict[str, ReferenceInput[Any]] = {
        "R": given([same, sq.Cti(at(9))]),
        "S": given([same, sq.Cti(at(3))]),
        "U": given([sq.Insert(at(2), at(3), Row("u")), sq.Insert(at(3), at(5), Row("v")), sq.Cti(at(7))]),
    }
    result = run(r.union(s, u), inputs)
    # CTIs 9, 3, 7: the union's is 3. Input events are stable: every event that starts before 3 is
    # released whole (the equal events of R and S twice), [3, 5) 'v' is not
    assert lifetimes(result) == [(at(1), at(4), Row("x")), (at(1), at(4), Row("x")), (at(2), at(3), Row("u"))]
    assert result.final_cti == at(3)
    # an input with no CTI holds the whole union back
    inputs["U"] = given([sq.Insert(at(2), at(3), Row("u"))])
    held = run(r.union(s, u), inputs)
    assert held.events == [] and held.final_cti is None
    # a union of one stream is that stream
    assert r.union() == r


@dataclasses.dataclass(frozen=True)
class Count:
    n: int


def test_horizon_of_never_ending_events_after_a_union_is_the_unions_greatest_finite_cti() -> None:
    a = sq.input("a", Row, shape=sq.Shape.EDGE)
    b = sq.input("b", Row, shape=sq.Shape.EDGE)
    query = a.union(b).tumbling_window(timedelta(seconds=1)).select(lambda w: Count(w.count()))
    result = run(query, {
        "a": given([sq.StartEdge(at(1), Row("x")), sq.Cti(at(3)), sq.Cti(INF)]),
        "b": given([sq.StartEdge(at(2), Row("y")), sq.Cti(at(5)), sq.Cti(at(9)), sq.Cti(INF)]),
    })
    # the union's CTIs, position by position: min(3, 5) = 3, min(INFINITY, 9) = 9, then INFINITY.
    # Neither event ever ends; with the final CTI INFINITY the one-second windows are produced up to
    # the last one that starts at or before the greatest finite time seen at the window's input: 9
    # (a single input with the CTIs 3, 9, INFINITY gives the same windows)
    assert [(e.start, e.end, e.payload.n) for e in result.events] == [
        (at(1), at(2), 1), *[(at(s), at(s + 1), 2) for s in range(2, 10)]]
    assert result.final_cti == INF


def test_streams_of_one_input_reach_infinity_in_one_step_streams_of_several_in_some_order() -> None:
    """``greatest_finite_cti`` at the flush: two inputs flushed at once may come in either order (the
    greater of their finite CTIs); two streams of one input get there in the same step (the lesser);
    where it is not known which inputs a stream is of, the greater, as before."""
    from streamql.query.joins import FLUSHED, greatest_finite_cti, reached_by
    ends, finite, flushed = (FLUSHED, FLUSHED), (5, 13), (FLUSHED, FLUSHED)
    one, two = (frozenset({"a"}), frozenset({"a"})), (frozenset({"a"}), frozenset({"b"}))
    unknown: tuple[frozenset[str], ...] = (frozenset(), frozenset())
    assert greatest_finite_cti(ends, finite, flushed) == (13, FLUSHED)
    assert greatest_finite_cti(ends, finite, flushed, two) == (13, FLUSHED)
    assert greatest_finite_cti(ends, finite, flushed, unknown) == (13, FLUSHED)
    assert greatest_finite_cti(ends, finite, flushed, one) == (5, FLUSHED)
    assert greatest_finite_cti(ends, (None, 13), flushed, one) == (None, FLUSHED)
    # the stream that reached INFINITY earlier was there already: the other one came last
    assert greatest_finite_cti(ends, finite, (3, FLUSHED), one) == (13, FLUSHED)
    assert reached_by(flushed, one) == frozenset({"a"}) and reached_by(flushed, two) == frozenset({"a", "b"})
    assert reached_by((3, FLUSHED), two) == frozenset({"b"})
    assert reached_by((None, FLUSHED), one) == frozenset() and reached_by(flushed, unknown) == frozenset()


# --- seed 001: a fast data stream joined with a slow reference stream -------------------------


def test_seed_fast_slow_join_without_import_releases_nothing() -> None:
    # the lookup stream has no CTI: the join's CTI, the least of its inputs', does not exist
    result = run(JOINED, {"dataStream": given(DATA_ITEMS), "lookupStream": given(LOOKUP_ITEMS)})
    assert result.events == []
    assert result.final_cti is None


def test_seed_fast_slow_join_with_import_releases_as_fast_as_the_data() -> None:
    # "the slow input stream is synchronized to the fast stream by importing its CTIs"
    inputs = {"dataStream": given(DATA_ITEMS), "lookupStream": given(LOOKUP_ITEMS, IMPORT)}
    result = run(JOINED, inputs)
    # each reading lies inside its meter's site interval: the intersection is the reading's point.
    # Both CTIs end at 12:00:30 + t, so all three are released; the reading at 12:00:30 finds m1
    # in the east
    assert lifetimes(result) == [
        (at(10), at(10) + TICK, SiteReading("m1", "north", 100)),
        (at(20), at(20) + TICK, SiteReading("m2", "south", 250)),
        (at(30), at(30) + TICK, SiteReading("m1", "east", 200)),
    ]
    assert result.final_cti == at(30) + TICK
    assert (result.dropped, result.adjusted) == (0, 0)
    # liveliness: after the first two readings (and their CTIs) the first two results are out
    early = run(JOINED, {"dataStream": given(DATA_ITEMS[:4]),
                         "lookupStream": given(LOOKUP_ITEMS, IMPORT)})
    assert [e.payload.site for e in early.events] == ["north", "south"]
    assert early.final_cti == at(20) + TICK


def test_late_reference_data_is_adjusted_to_the_imported_cti() -> None:
    # a reference interval that arrives after the imported CTI 12:00:10 + t but starts before it:
    # ADJUST moves its start to the CTI (seed 001), so it still meets the reading at 12:00:30
    late = [*LOOKUP_ITEMS[:2], sq.Insert(at(0), at(3600), MeterSite("m1", "west"))]
    items: list[InputItem[Reading]] = [*DATA_ITEMS]
    result = run(JOINED, {"dataStream": given(items), "lookupStream": given(late, IMPORT)})
    # position 2 of the lookup stream arrives after the data stream's CTI row at position 1
    assert lifetimes(result) == [
        (at(10), at(10) + TICK, SiteReading("m1", "north", 100)),
        (at(20), at(20) + TICK, SiteReading("m2", "south", 250)),
        (at(30), at(30) + TICK, SiteReading("m1", "west", 200)),
    ]
    assert result.adjusted == 1


def test_open_reference_event_joins_points_before_it_closes() -> None:
    # the reference stream as edges: m1's site is known from 12:00:00 with no end yet
    edges = sq.input("lookupStream", MeterSite, shape=sq.Shape.EDGE)
    query = DATA.join(edges, lambda r, m: r.meter == m.meter, lambda r, m: SiteReading(r.meter, m.site, r.watts))
    data: list[InputItem[Reading]] = [point(at(10), Reading("m1", 100)), sq.Cti(at(10) + TICK)]
    open_site: list[InputItem[MeterSite]] = [sq.StartEdge(at(0), MeterSite("m1", "north"))]
    result = run(query, {"dataStream": given(data), "lookupStream": given(open_site, IMPORT)})
    # the pair lives [10, 10 + t): the reading's point, and 'north' (imported CTI 10 + t) is surely
    # alive there, since its end edge can only end at or after the CTI: stable and released
    assert lifetimes(result) == [(at(10), at(10) + TICK, SiteReading("m1", "north", 100))]
    assert result.final_cti == at(10) + TICK
    # later the end edge closes 'north' at 12:00:15 and 'east' opens; the reading at 12:00:20 finds east
    data_later: list[InputItem[Reading]] = [*data, point(at(20), Reading("m1", 250)), sq.Cti(at(20) + TICK)]
    moves: list[InputItem[MeterSite]] = [
        *open_site, sq.EndEdge(at(0), at(15), MeterSite("m1", "north")), sq.StartEdge(at(15), MeterSite("m1", "east"))]
    later = run(query, {"dataStream": given(data_later), "lookupStream": given(moves, IMPORT)})
    assert lifetimes(later) == [
        (at(10), at(10) + TICK, SiteReading("m1", "north", 100)),
        (at(20), at(20) + TICK, SiteReading("m1", "east", 250)),
    ]
    assert (later.dropped, later.adjusted) == (0, 0)


# --- join: predicates and intersections --------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Item:
    name: str
    key: str
    value: int


@dataclasses.dataclass(frozen=True)
class Pair:
    left: str
    right: str


LEFT = sq.input("left", Item, shape=sq.Shape.INTERVAL)
RIGHT = sq.input("right", Item, shape=sq.Shape.INTERVAL)
A1 = sq.Insert(at(1), at(6), Item("a1", "x", 1))
A2 = sq.Insert(at(4), at(9), Item("a2", "y", 5))
B1 = sq.Insert(at(2), at(5), Item("b1", "x", 3))
B2 = sq.Insert(at(5), at(12), Item("b2", "y", 2))
B3 = sq.Insert(at(0), at(3), Item("b3", "y", 9))
B4 = sq.Insert(at(9), at(10), Item("b4", "y", 0))  # starts where a2 ends: no overlap


def pairs(on: Optional[Callable[[Item, Item], bool]]) -> list[tuple[datetime, datetime, Pair]]:
    query = LEFT.join(RIGHT, on, lambda a, b: Pair(a.name, b.name))
    return lifetimes(run(query, {"left": given([A1, A2], FLUSH),
                                 "right": given([B1, B2, B3, B4], FLUSH)}))


def test_join_on_equal_keys_lives_over_the_intersection() -> None:
    #   a1 x [1, 6)   b1 x [2, 5)  -> [2, 5)
    #   a2 y [4, 9)   b2 y [5, 12) -> [5, 9);  b3 y [0, 3) and b4 y [9, 10) do not overlap a2
    assert pairs(lambda a, b: a.key == b.key) == [
        (at(2), at(5), Pair("a1", "b1")),
        (at(5), at(9), Pair("a2", "b2")),
    ]


def test_join_on_a_non_equality_predicate() -> None:
    # a.value > b.value among the overlapping pairs: a2 (5) > b1 (3) over [4, 5), a2 (5) > b2 (2)
    # over [5, 9); a1 (1) exceeds none of b1 (3), b2 (2), b3 (9)
    assert pairs(lambda a, b: a.value > b.value) == [
        (at(4), at(5), Pair("a2", "b1")),
        (at(5), at(9), Pair("a2", "b2")),
    ]


def test_join_without_a_predicate_pairs_every_overlapping_pair() -> None:
    # on=None: a1 with b3 [1, 3), b1 [2, 5), b2 [5, 6); a2 with b1 [4, 5), b2 [5, 9).
    # Sorted by (start, end, payload)
    assert pairs(None) == [
        (at(1), at(3), Pair("a1", "b3")),
        (at(2), at(5), Pair("a1", "b1")),
        (at(4), at(5), Pair("a2", "b1")),
        (at(5), at(6), Pair("a1", "b2")),
        (at(5), at(9), Pair("a2", "b2")),
    ]


def test_join_of_point_events_at_one_instant() -> None:
    left_points = sq.input("left", Item, shape=sq.Shape.POINT)
    right_points = sq.input("right", Item, shape=sq.Shape.POINT)
    query = left_points.join(right_points, lambda a, b: a.key == b.key, lambda a, b: Pair(a.name, b.name))
    inputs = {"left": given([point(at(1), Item("p", "x", 0)), point(at(2), Item("q", "x", 0))], FLUSH),
              "right": given([point(at(1), Item("r", "x", 0)), point(at(1) + TICK, Item("s", "x", 0))],
                                      FLUSH)}
    # points meet only at the same instant: p and r at 12:00:01; s one tick later meets nothing
    assert lifetimes(run(query, inputs)) == [(at(1), at(1) + TICK, Pair("p", "r"))]


def test_join_release_at_finite_ctis() -> None:
    query = LEFT.join(RIGHT, lambda a, b: a.key == b.key, lambda a, b: Pair(a.name, b.name))
    # both partners are accepted intervals, so every pair is stable: what is released is decided by
    # the join's CTI, the lesser of the inputs' (here 5)
    inputs = {"left": given([A1, A2, sq.Cti(at(20))]), "right": given([B1, B2, sq.Cti(at(5))])}
    result = run(query, inputs)
    # [2, 5) starts before 5: released; [5, 9) starts at the CTI: not yet
    assert lifetimes(result) == [(at(2), at(5), Pair("a1", "b1"))]
    assert result.final_cti == at(5)


EDGE_RIGHT = sq.input("right", Item, shape=sq.Shape.EDGE)


def test_join_with_an_open_partner_ending_exactly_at_its_cti() -> None:
    # a1 [1, 6) joined with an open right event e from 2: the pair ends at a1's end, 6, provided e
    # is still alive there. e's end edge can only end at or after the right CTI.
    query = LEFT.join(EDGE_RIGHT, None, lambda a, b: Pair(a.name, b.name))
    e = sq.StartEdge(at(2), Item("e", "x", 0))

    def with_right_cti(cti: datetime) -> sq.Result[Pair]:
        return run(query, {"left": given([A1, sq.Cti(at(20))]), "right": given([e, sq.Cti(cti)])})

    # right CTI 6: e lives at least until 6, so [2, 6) is final: released
    assert lifetimes(with_right_cti(at(6))) == [(at(2), at(6), Pair("a1", "e"))]
    # right CTI 5: e may still end at 5 and cut the pair: held as an interval...
    held = with_right_cti(at(5))
    assert held.events == [] and held.final_cti == at(5)
    # ...but its start and payload are final: POINT and EDGE output release them
    assert run(query, {"left": given([A1, sq.Cti(at(20))]), "right": given([e, sq.Cti(at(5))])},
               output=sq.Shape.POINT).events == [sq.Event(at(2), at(2) + TICK, Pair("a1", "e"))]
    edges = run(query, {"left": given([A1, sq.Cti(at(20))]), "right": given([e, sq.Cti(at(5))])},
                output=sq.Shape.EDGE).edges
    assert edges == [sq.Edge(sq.EdgeKind.START, at(2), at(2), Pair("a1", "e"))]


def test_join_of_two_open_events_never_ends_until_one_does() -> None:
    edges_left = sq.input("left", Item, shape=sq.Shape.EDGE)
    query = edges_left.join(EDGE_RIGHT, None, lambda a, b: Pair(a.name, b.name))
    inputs = {"left": given([sq.StartEdge(at(1), Item("l", "x", 0)), sq.Cti(at(10))]),
              "right": given([sq.StartEdge(at(3), Item("r", "x", 0)), sq.Cti(at(10))])}
    # [3, INFINITY) until an end edge comes: no interval, one START edge
    assert run(query, inputs).events == []
    assert run(query, inputs, output=sq.Shape.EDGE).edges == [
        sq.Edge(sq.EdgeKind.START, at(3), at(3), Pair("l", "r"))]


# --- anti_join ---------------------------------------------------------------------------------------

BIG = sq.Insert(at(1), at(12), Item("big", "x", 0))
CUTS: list[InputItem[Item]] = [
    sq.Insert(at(3), at(5), Item("r1", "x", 0)),
    sq.Insert(at(4), at(6), Item("r2", "x", 0)),   # overlaps r1: together they cover [3, 6)
    sq.Insert(at(8), at(9), Item("r3", "x", 0)),
    sq.Insert(at(2), at(10), Item("r4", "y", 0)),  # another key
]


def test_anti_join_splits_one_event_into_pieces() -> None:
    query = LEFT.anti_join(RIGHT, lambda a, b: a.key == b.key)
    result = run(query, {"left": given([BIG], FLUSH), "right": given(CUTS, FLUSH)})
    # big [1, 12) minus r1 ∪ r2 = [3, 6) and r3 = [8, 9): [1, 3), [6, 8), [9, 12), each with big's payload
    assert lifetimes(result) == [
        (at(1), at(3), Item("big", "x", 0)),
        (at(6), at(8), Item("big", "x", 0)),
        (at(9), at(12), Item("big", "x", 0)),
    ]


def test_anti_join_without_a_predicate() -> None:
    query = LEFT.anti_join(RIGHT, None)
    result = run(query, {"left": given([BIG], FLUSH), "right": given(CUTS, FLUSH)})
    # every right event counts, r4 [2, 10) too: what is left is [1, 2) and [10, 12)
    assert lifetimes(result) == [(at(1), at(2), Item("big", "x", 0)), (at(10), at(12), Item("big", "x", 0))]
    # a left event wholly covered disappears; one that meets no right event passes unchanged
    covered = run(query, {"left": given([sq.Insert(at(4), at(5), Item("in", "x", 0)),
                                                  sq.Insert(at(20), at(21), Item("out", "x", 0))], FLUSH),
                          "right": given(CUTS, FLUSH)})
    assert lifetimes(covered) == [(at(20), at(21), Item("out", "x", 0))]


def test_anti_join_release_at_the_right_cti() -> None:
    query = LEFT.anti_join(RIGHT, lambda a, b: a.key == b.key)
    right: list[InputItem[Item]] = [sq.Insert(at(3), at(5), Item("r1", "x", 0)),
                                    sq.Insert(at(6), at(8), Item("r2", "x", 0))]
    left = sq.Insert(at(1), at(10), Item("l", "x", 0))

    def release(right_cti: datetime, output: sq.Shape = sq.Shape.INTERVAL) -> sq.Result[Item]:
        return run(query, {"left": given([left, sq.Cti(at(20))]),
                           "right": given([*right, sq.Cti(right_cti)])}, output)

    # pieces [1, 3), [5, 6), [8, 10)
    # right CTI 6: [5, 6) ends exactly at the CTI, at r2's start — r2 is accepted, so no right
    # event can move that boundary: released. [8, 10) starts after the CTI: a right event at 8
    # could still remove its start
    at_6 = release(at(6))
    assert lifetimes(at_6) == [(at(1), at(3), Item("l", "x", 0)), (at(5), at(6), Item("l", "x", 0))]
    assert at_6.final_cti == at(6)
    # right CTI 10: [8, 10) ends exactly at the CTI, at l's own (stable) end: released
    assert [e.start for e in release(at(10)).events] == [at(1), at(5), at(8)]
    # right CTI 9: a right event starting at 9 could still cut [8, 10): held; its start is final
    at_9 = release(at(9))
    assert [e.start for e in at_9.events] == [at(1), at(5)]
    assert [e.start for e in release(at(9), sq.Shape.POINT).events] == [at(1), at(5), at(8)]


# --- clip (ClipEventDuration) -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Session:
    user: str


SESSIONS = sq.input("sessions", Session, shape=sq.Shape.INTERVAL)
LOGOUTS = sq.input("logouts", Session, shape=sq.Shape.POINT)
CLIPPED = SESSIONS.clip(LOGOUTS, lambda s, o: s.user == o.user)


def test_clip_cuts_at_the_first_matching_start_after_the_start() -> None:
    sessions: list[InputItem[Session]] = [
        sq.Insert(at(1), at(10), Session("u")),
        sq.Insert(at(2), at(6), Session("v")),
        sq.Insert(at(3), at(7), Session("w")),
    ]
    logouts: list[InputItem[Session]] = [
        point(at(1), Session("u")),   # at u's own start: not strictly after it, no cut
        point(at(3), Session("v")),   # cuts v at 3
        point(at(4), Session("u")),   # cuts u at 4
        point(at(5), Session("v")),   # later than the first cut of v: no effect
        point(at(7), Session("w")),   # at w's end: nothing left to cut
        point(at(8), Session("u")),   # after u's cut
    ]
    result = run(CLIPPED, {"sessions": given(sessions, FLUSH), "logouts": given(logouts, FLUSH)})
    assert lifetimes(result) == [
        (at(1), at(4), Session("u")),
        (at(2), at(3), Session("v")),
        (at(3), at(7), Session("w")),
    ]


def test_clip_of_open_edges_ends_each_at_the_next_matching_event() -> None:
    # StreamInsight's typical use: a start edge that lasts until the next event of its key
    open_sessions = sq.input("sessions", Session, shape=sq.Shape.EDGE)
    query = open_sessions.clip(LOGOUTS, lambda s, o: s.user == o.user)
    sessions: list[InputItem[Session]] = [sq.StartEdge(at(1), Session("u")), sq.StartEdge(at(2), Session("v")),
                                          sq.Cti(at(9))]
    logouts: list[InputItem[Session]] = [point(at(5), Session("u")), sq.Cti(at(9))]
    result = run(query, {"sessions": given(sessions), "logouts": given(logouts)})
    # u's end is cut at 5, before both CTIs: whatever end edge u gets, it ends at or after 9, so
    # [1, 5) is final. v has no logout: still open, not released as an interval
    assert lifetimes(result) == [(at(1), at(5), Session("u"))]
    edges = run(query, {"sessions": given(sessions), "logouts": given(logouts)},
                output=sq.Shape.EDGE).edges
    assert [(e.kind.name, e.time, e.payload.user) for e in edges] == [
        ("START", at(1), "u"), ("START", at(2), "v"), ("END", at(5), "u")]


def test_clip_release_at_the_right_cti() -> None:
    session = sq.Insert(at(1), at(10), Session("u"))

    def release(logouts: list[InputItem[Session]], query: sq.Stream[Session] = CLIPPED) -> sq.Result[Session]:
        return run(query, {"sessions": given([session, sq.Cti(at(20))]),
                           "logouts": given(logouts)})

    # the logout at 6 arrives with the CTI 6: the cut [1, 6) ends exactly at the CTI, made by an
    # accepted event, which no later logout can undo (they start at or after 6): released
    cut = release([point(at(6), Session("u")), sq.Cti(at(6))])
    assert lifetimes(cut) == [(at(1), at(6), Session("u"))]
    assert cut.final_cti == at(6)
    # no logout yet, CTI 10: the session's own end 10 is the boundary, and no logout can start
    # before it any more: released uncut
    assert lifetimes(release([sq.Cti(at(10))])) == [(at(1), at(10), Session("u"))]
    # CTI 9: a logout at 9 could still cut it: held
    assert release([sq.Cti(at(9))]).events == []
    # a boundary at the CTI made by an unstable event does not count: through keep_last(1), the
    # logout at 6 (at the logouts' CTI 6) could still be displaced by another logout at 6 that
    # sorts after it, so the cut at 6 may still move: held
    displaced = SESSIONS.clip(LOGOUTS.keep_last(1), lambda s, o: s.user == o.user)
    assert release([point(at(6), Session("u")), sq.Cti(at(6))], displaced).events == []
    # one tick later the boundary passes the CTI: released
    assert lifetimes(release([point(at(6), Session("u")), sq.Cti(at(6) + TICK)], displaced)) == [
        (at(1), at(6), Session("u"))]


# --- CTI = the least of the inputs' ---------------------------------------------------------------


@pytest.mark.parametrize("build", [
    lambda: LEFT.join(RIGHT, None, lambda a, b: Pair(a.name, b.name)),
    lambda: LEFT.anti_join(RIGHT, None),
    lambda: LEFT.clip(RIGHT, lambda a, b: a.key == b.key),
    lambda: LEFT.union(RIGHT),
], ids=["join", "anti_join", "clip", "union"])
def test_output_cti_is_the_least_of_the_inputs(build: Callable[[], sq.Stream[Any]]) -> None:
    query = build()
    both = run(query, {"left": given([sq.Cti(at(7))]), "right": given([sq.Cti(at(4))])})
    assert both.final_cti == at(4)
    flipped = run(query, {"left": given([sq.Cti(at(3))]), "right": given([sq.Cti(at(4))])})
    assert flipped.final_cti == at(3)
    one_missing = run(query, {"left": given([sq.Cti(at(3))]), "right": given([])})
    assert one_missing.final_cti is None


# --- errors raised when the query is built ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Other:
    name: str


def test_union_of_different_payload_types_is_an_error() -> None:
    other = sq.input("other", Other)
    with pytest.raises(sq.ExpressionError, match="union needs streams of one payload type"):
        LEFT.union(cast(sq.Stream[Item], other))
    with pytest.raises(sq.ExpressionError, match="argument 2 has Other"):
        LEFT.union(RIGHT, cast(sq.Stream[Item], other))


def test_join_select_must_build_a_payload() -> None:
    with pytest.raises(sq.ExpressionError, match="join select must build a payload instance"):
        LEFT.join(RIGHT, None, lambda a, b: cast(Any, a.value + b.value))


def test_join_on_must_be_a_condition() -> None:
    with pytest.raises(sq.ExpressionError):
        LEFT.join(RIGHT, lambda a, b: cast(Any, a.value + b.value), lambda a, b: Pair(a.name, b.name))


def test_a_misspelled_field_in_a_join_is_an_error_when_built() -> None:
    with pytest.raises((sq.ExpressionError, AttributeError)):
        LEFT.join(RIGHT, lambda a, b: cast(Any, a).kee == b.key, lambda a, b: Pair(a.name, b.name))


def test_multi_stream_operators_take_streams() -> None:
    for build in (lambda: LEFT.join(cast(Any, RIGHT.node), None, lambda a, b: Pair(a.name, b.name)),
                  lambda: LEFT.anti_join(cast(Any, [RIGHT]), None),
                  lambda: LEFT.clip(cast(Any, "right"), lambda a, b: True),
                  lambda: LEFT.union(cast(Any, RIGHT.node))):
        with pytest.raises(sq.ExpressionError, match="takes a query"):
            build()


def test_clip_needs_a_predicate() -> None:
    with pytest.raises(sq.ExpressionError, match="clip needs a predicate"):
        LEFT.clip(RIGHT, cast(Any, None))
