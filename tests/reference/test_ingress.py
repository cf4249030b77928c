"""Ingress in the reference evaluator (docs/time-model.md, docs/ctis-and-release.md): CTI rows, CTI
generation, DROP and
ADJUST, edge inputs, bad rows and CTI import. Every expected value is worked out by hand in
the comment above it. Times are integer microseconds since the
epoch (docs/reference-evaluator.md#input-items allows them);
results show tz-aware datetimes, compared through ``at``."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any, Literal, Optional, cast

import pytest

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput
from streamql.time import from_micros

INF = sq.INFINITY


@dataclasses.dataclass(frozen=True)
class V:
    v: int


def at(micros: int) -> datetime:
    return from_micros(micros)


def ev(start: int, end: Optional[int], v: int) -> sq.Event[V]:
    """An interval event; ``end=None`` is an event that never ends."""
    return sq.Event(at(start), INF if end is None else at(end), V(v))


def point(start: int, v: int) -> sq.Event[V]:
    return ev(start, start + 1, v)


def ins(start: int, end: int, v: int) -> sq.Insert[V]:
    return sq.Insert(start, end, V(v))


def pt(start: int, v: int) -> sq.Insert[V]:
    """A point event: it ends one tick after it starts."""
    return sq.Insert(start, start + 1, V(v))


def start_edge(start: int, v: int) -> sq.StartEdge[V]:
    return sq.StartEdge(start, V(v))


def end_edge(start: int, end: int, v: int) -> sq.EndEdge[V]:
    return sq.EndEdge(start, end, V(v))


def given(*items: InputItem[Any], settings: Optional[sq.AdvanceTimeSettings] = None,
          bad_rows: Literal["error", "drop"] = "error") -> ReferenceInput[Any]:
    return ReferenceInput(list(items), settings, bad_rows)


def generate(every_events: Optional[int] = None, every: Optional[int] = None, delay: int = 0,
             flush: bool = False, policy: sq.AdvanceTimePolicy = sq.AdvanceTimePolicy.DROP) -> sq.AdvanceTimeSettings:
    """Generation settings with micro-second ``every`` and ``delay``."""
    generation = sq.AdvanceTimeGeneration(
        every_events=every_events, every=None if every is None else timedelta(microseconds=every),
        delay=timedelta(microseconds=delay), flush=flush)
    return sq.AdvanceTimeSettings(generation=generation, policy=policy)


def policy_only(policy: sq.AdvanceTimePolicy, flush: bool = False) -> sq.AdvanceTimeSettings:
    """Settings whose generation never fires within these short inputs: the CTIs come from
    explicit CTI rows, the settings only choose the violation policy (and the final flush)."""
    return generate(every_events=10_000, flush=flush, policy=policy)


DROP = sq.AdvanceTimePolicy.DROP
ADJUST = sq.AdvanceTimePolicy.ADJUST

POINTS = sq.input("points", V, shape=sq.Shape.POINT)
INTERVALS = sq.input("intervals", V, shape=sq.Shape.INTERVAL)
EDGES = sq.input("edges", V, shape=sq.Shape.EDGE)


def run_points(*items: InputItem[Any], settings: Optional[sq.AdvanceTimeSettings] = None,
               output: sq.Shape = sq.Shape.INTERVAL) -> sq.Result[V]:
    return sq.reference.run(POINTS, {"points": given(*items, settings=settings)}, output)


def run_intervals(*items: InputItem[Any], settings: Optional[sq.AdvanceTimeSettings] = None,
                  bad_rows: Literal["error", "drop"] = "error") -> sq.Result[V]:
    return sq.reference.run(INTERVALS, {"intervals": given(*items, settings=settings, bad_rows=bad_rows)})


def run_edges(*items: InputItem[Any], settings: Optional[sq.AdvanceTimeSettings] = None,
              output: sq.Shape = sq.Shape.INTERVAL, bad_rows: Literal["error", "drop"] = "error") -> sq.Result[V]:
    return sq.reference.run(EDGES, {"edges": given(*items, settings=settings, bad_rows=bad_rows)}, output)


# --- CTI rows --------------------------------------------------------------------------------


def test_cti_rows_commit_what_lies_before_them_and_drop_late_events() -> None:
    result = run_points(pt(1, 1), pt(5, 2), sq.Cti(5), pt(7, 3), pt(3, 4))
    # pos 0, 1: points at 1 and 5 are accepted; pos 2: CTI 5; pos 3: 7 >= 5 accepted;
    # pos 4: 3 < 5 violates the CTI, and with no settings the policy is DROP.
    # Released (start < 5): only the point at 1 — the point at 5 is not strictly before the CTI.
    assert result.events == [point(1, 1)]
    assert (result.dropped, result.adjusted, result.bad_rows) == (1, 0, 0)
    assert result.final_cti == at(5)
    assert result.edges == []


def test_the_current_cti_is_the_greatest_so_far() -> None:
    result = run_points(sq.Cti(10), pt(12, 1), sq.Cti(4), pt(8, 2))
    # CTI 10, then a lower CTI row 4 does not move it back: 8 < 10 is still dropped.
    # Released: 12 < 10? no. Nothing.
    assert result.events == []
    assert result.dropped == 1
    assert result.final_cti == at(10)


def test_cti_rows_accept_datetimes() -> None:
    result = run_points(pt(1, 1), sq.Cti(at(2)))
    # the CTI at datetime 2 µs equals the integer CTI 2: the point at 1 is released
    assert result.events == [point(1, 1)]
    assert result.final_cti == at(2)


def test_cti_at_infinity_releases_everything_and_closes_the_input() -> None:
    result = run_points(pt(1, 1), pt(9, 2), sq.Cti(INF), pt(20, 3))
    # after a CTI at INFINITY every later event violates it (20 < INFINITY): dropped
    assert result.events == [point(1, 1), point(9, 2)]
    assert result.dropped == 1
    assert result.final_cti == INF


def test_no_settings_and_no_cti_rows_give_no_output() -> None:
    for output in sq.Shape:
        result = run_points(pt(1, 1), pt(2, 2), output=output)
        assert result.events == [] and result.edges == []
        assert result.final_cti is None
        assert (result.dropped, result.adjusted, result.bad_rows) == (0, 0, 0)


def test_empty_input() -> None:
    result = run_points(settings=generate(every_events=1, flush=True))
    # no events, but the flush CTI still comes
    assert result.events == [] and result.final_cti == INF


# --- generation ------------------------------------------------------------------------------


def test_every_event_with_delay_zero_the_last_point_waits() -> None:
    result = run_points(pt(10, 1), pt(20, 2), pt(30, 3), settings=generate(every_events=1))
    # a CTI after every event at its start (delay 0): 10, 20, 30.
    # Released: starts < 30 — the last point is not committed until a CTI after it.
    assert result.events == [point(10, 1), point(20, 2)]
    assert result.final_cti == at(30)


def test_every_event_with_delay_minus_one_tick_commits_every_point() -> None:
    result = run_points(pt(10, 1), pt(20, 2), pt(30, 3), settings=generate(every_events=1, delay=-1))
    # CTIs at start + 1 tick: 11, 21, 31; every point starts before the last one
    assert result.events == [point(10, 1), point(20, 2), point(30, 3)]
    assert result.final_cti == at(31)


def test_negative_tick_delay_as_a_timedelta() -> None:
    settings = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1, delay=-sq.TICK))
    result = run_points(pt(10, 1), settings=settings)
    assert result.events == [point(10, 1)]
    assert result.final_cti == at(11)


def test_every_second_event() -> None:
    result = run_points(pt(10, 1), pt(20, 2), pt(30, 3), settings=generate(every_events=2))
    # a CTI after the 2nd event only: greatest start 20; the 3rd event generates nothing.
    # Released: starts < 20: the point at 10.
    assert result.events == [point(10, 1)]
    assert result.final_cti == at(20)


def test_delay_is_a_grace_period_for_late_events() -> None:
    result = run_points(pt(10, 1), pt(20, 2), pt(17, 3), pt(12, 4), settings=generate(every_events=1, delay=5))
    # after 10: CTI 10 - 5 = 5; after 20: CTI 15; 17 >= 15 is accepted (late but within the
    # grace period), and its CTI is max(15, greatest start 20 - 5) = 15; 12 < 15 is dropped.
    # Released (start < 15): the point at 10.
    assert result.events == [point(10, 1)]
    assert result.dropped == 1
    assert result.final_cti == at(15)


def test_dropped_events_do_not_count_towards_every_events() -> None:
    result = run_points(sq.Cti(10), pt(5, 1), pt(12, 2), pt(11, 3), settings=generate(every_events=2))
    # CTI row 10; 5 < 10 dropped (not counted); 12 is the 1st accepted event; 11 >= 10 is the
    # 2nd: a CTI at the greatest start 12. (Counting the dropped event would have put CTI 12
    # after the event at 12 and dropped the event at 11.)
    # Released (start < 12): the point at 11.
    assert result.events == [point(11, 3)]
    assert result.dropped == 1
    assert result.final_cti == at(12)


def test_generated_ctis_never_move_back() -> None:
    result = run_points(sq.Cti(30), pt(31, 1), pt(30, 2), settings=generate(every_events=1, delay=10))
    # CTI row 30; after 31 the generated CTI is max(30, 31 - 10) = 30; 30 >= 30 is accepted,
    # and again max(30, 21) = 30. Released: starts < 30: none.
    assert result.events == []
    assert result.dropped == 0
    assert result.final_cti == at(30)


def test_every_duration_uses_a_moving_baseline() -> None:
    result = run_points(pt(0, 1), pt(15, 2), pt(24, 3), pt(26, 4), pt(30, 5), settings=generate(every=10))
    # baseline 0 (first event); 15 >= 0 + 10: CTI 15, baseline 15; 24 >= 25? no (a baseline
    # advanced by steps of 10 would have fired here); 26 >= 25: CTI 26, baseline 26; 30 >= 36? no.
    # Released: starts < 26: 0, 15, 24.
    assert result.events == [point(0, 1), point(15, 2), point(24, 3)]
    assert result.final_cti == at(26)


def test_every_duration_with_delay_and_late_events() -> None:
    result = run_points(pt(100, 1), pt(104, 2), pt(110, 3), pt(103, 4), pt(95, 5), pt(121, 6),
                        settings=generate(every=10, delay=8))
    # baseline 100; 104: no; 110 >= 110: CTI 110 - 8 = 102, baseline 110; 103 >= 102 accepted,
    # 103 >= 120? no; 95 < 102 dropped; 121 >= 120: CTI max(102, 121 - 8) = 113.
    # Released (start < 113): 100, 103, 104, 110.
    assert result.events == [point(100, 1), point(103, 4), point(104, 2), point(110, 3)]
    assert result.dropped == 1
    assert result.final_cti == at(113)


def test_flush_releases_everything() -> None:
    result = run_points(pt(10, 1), pt(20, 2), pt(30, 3), settings=generate(every_events=2, flush=True))
    # CTI 20 after the 2nd event, then the final CTI at INFINITY: all three are released
    assert result.events == [point(10, 1), point(20, 2), point(30, 3)]
    assert result.final_cti == INF


def test_generation_combines_with_cti_rows() -> None:
    result = run_points(pt(10, 1), sq.Cti(50), pt(40, 2), pt(60, 3), pt(55, 4), settings=generate(every_events=1))
    # after 10: CTI 10; CTI row 50; 40 < 50 dropped; after 60: CTI max(50, 60) = 60;
    # 55 < 60 dropped. Released: starts < 60: 10.
    assert result.events == [point(10, 1)]
    assert result.dropped == 2
    assert result.final_cti == at(60)


# --- DROP and ADJUST ---------------------------------------------------------------------------

LATE_INTERVALS: list[InputItem[Any]] = [
    sq.Cti(10),
    ins(5, 8, 1),    # wholly before the CTI
    ins(5, 15, 2),   # straddles the CTI
    ins(12, 14, 3),  # after it
    ins(10, 11, 4),  # starts at the CTI: not a violation
    ins(9, 10, 5),   # ends at the CTI: nothing of it is at or after the CTI
]


def test_drop_removes_every_late_event() -> None:
    result = run_intervals(*LATE_INTERVALS, settings=policy_only(DROP, flush=True))
    # 1, 2 and 5 start before CTI 10: dropped. The flush releases the rest.
    assert result.events == [ev(10, 11, 4), ev(12, 14, 3)]
    assert (result.dropped, result.adjusted) == (3, 0)


def test_adjust_moves_the_start_of_a_straddling_event() -> None:
    result = run_intervals(*LATE_INTERVALS, settings=policy_only(ADJUST, flush=True))
    # 2: [5, 15) becomes [10, 15) (adjusted); 1: [5, 8) and 5: [9, 10) end at or before the CTI:
    # removed even under ADJUST.
    assert result.events == [ev(10, 11, 4), ev(10, 15, 2), ev(12, 14, 3)]
    assert (result.dropped, result.adjusted) == (2, 1)


def test_a_late_point_is_dropped_under_both_policies() -> None:
    # a point [9, 10) after CTI 10 ends at the CTI: ADJUST has nothing to move it to
    for policy in (DROP, ADJUST):
        result = run_points(sq.Cti(10), pt(9, 1), pt(10, 2), settings=policy_only(policy, flush=True))
        assert result.events == [point(10, 2)]
        assert (result.dropped, result.adjusted) == (1, 0)


def test_adjusted_events_feed_generation_with_their_new_start() -> None:
    result = run_intervals(ins(20, 30, 1), ins(5, 25, 2), ins(18, 40, 3),
                           settings=generate(every_events=1, delay=-1, policy=ADJUST))
    # "greatest start seen" counts accepted events, and an adjusted event is accepted with its
    # moved start. After [20, 30): CTI 21. [5, 25) becomes [21, 25) (adjusted): greatest start
    # 21, CTI 22. [18, 40) becomes [22, 40): CTI 23. Released (start < 23): all three.
    # (With the original starts 5 and 18 the CTI would have stayed at 21.)
    assert result.events == [ev(20, 30, 1), ev(21, 25, 2), ev(22, 40, 3)]
    assert (result.dropped, result.adjusted) == (0, 2)
    assert result.final_cti == at(23)


# --- edge inputs -------------------------------------------------------------------------------

EDGE_ITEMS: list[InputItem[Any]] = [
    start_edge(1, 1),
    start_edge(2, 2),
    end_edge(1, 5, 1),  # closes event 1: [1, 5)
    start_edge(3, 3),
    sq.Cti(4),
]


def test_edge_input_interval_output_waits_for_the_end_edge() -> None:
    result = run_edges(*EDGE_ITEMS)
    # CTI 4: events 2 and 3 are still open — an interval is not released before it is stable
    assert result.events == [ev(1, 5, 1)]
    assert result.final_cti == at(4)


def test_edge_input_point_output_releases_the_starts() -> None:
    result = run_edges(*EDGE_ITEMS, output=sq.Shape.POINT)
    # start and payload of every start edge are stable: points at 1, 2, 3 (all < 4)
    assert result.events == [point(1, 1), point(2, 2), point(3, 3)]
    assert result.edges == []


def test_edge_input_edge_output() -> None:
    result = run_edges(*EDGE_ITEMS, output=sq.Shape.EDGE)
    # START edges at 1, 2, 3 (< CTI 4); the END edge of event 1 (closed, stable) at 5 even though
    # 5 >= the CTI; no END edge for the open events 2 and 3
    assert result.edges == [
        sq.Edge(sq.EdgeKind.START, at(1), at(1), V(1)),
        sq.Edge(sq.EdgeKind.START, at(2), at(2), V(2)),
        sq.Edge(sq.EdgeKind.START, at(3), at(3), V(3)),
        sq.Edge(sq.EdgeKind.END, at(5), at(1), V(1)),
    ]
    assert result.events == []


def test_open_events_are_released_with_an_infinite_end_at_the_final_cti() -> None:
    items = [*EDGE_ITEMS, sq.Cti(INF)]
    result = run_edges(*items)
    # with CTI INFINITY no end edge can come: the open events are stable, ending at INFINITY
    assert result.events == [ev(1, 5, 1), ev(2, None, 2), ev(3, None, 3)]
    assert result.final_cti == INF
    edges = run_edges(*items, output=sq.Shape.EDGE).edges
    # ... but events that never end have no END edge
    assert [(e.kind, e.time) for e in edges] == [
        (sq.EdgeKind.START, at(1)), (sq.EdgeKind.START, at(2)), (sq.EdgeKind.START, at(3)),
        (sq.EdgeKind.END, at(5))]


def test_open_events_stay_unreleased_before_the_final_infinite_cti() -> None:
    result = run_edges(start_edge(1, 1), sq.Cti(1_000_000))
    # a CTI far after the start does not release an open interval: its end may still come
    assert result.events == []
    flushed = run_edges(start_edge(1, 1), settings=policy_only(DROP, flush=True))
    assert flushed.events == [ev(1, None, 1)]
    assert flushed.final_cti == INF


def test_end_edges_match_by_start_and_payload() -> None:
    result = run_edges(start_edge(1, 1), start_edge(1, 2), start_edge(2, 1), end_edge(1, 3, 2),
                       end_edge(2, 6, 1), sq.Cti(INF))
    # the end edge (1, 3, V2) closes the event that started at 1 with V2, not the one with V1;
    # (2, 6, V1) closes the event that started at 2 with V1; (1, V1) never ends
    assert result.events == [ev(1, 3, 2), ev(1, None, 1), ev(2, 6, 1)]


def test_end_edges_do_not_count_for_generation() -> None:
    result = run_edges(start_edge(1, 1), end_edge(1, 8, 1), start_edge(5, 2), end_edge(5, 9, 2),
                       start_edge(7, 3), settings=generate(every_events=2))
    # start edges count, end edges do not: the 2nd start edge (at 5) generates CTI 5
    # (counting end edges would have put the CTI after the end edge at 1..8, at 1).
    # Released (INTERVAL, start < 5, closed): [1, 8).
    assert result.events == [ev(1, 8, 1)]
    assert result.final_cti == at(5)


def test_end_edge_violating_a_cti_under_drop_is_ignored() -> None:
    items: list[InputItem[Any]] = [start_edge(1, 1), sq.Cti(4), end_edge(1, 3, 1), sq.Cti(6)]
    result = run_edges(*items, settings=policy_only(DROP))
    # the end edge ends at 3 < CTI 4: ignored, counted as dropped; the event stays open, so at
    # CTI 6 it is not released as an interval
    assert result.events == []
    assert (result.dropped, result.adjusted) == (1, 0)
    # as a point (its start is stable) it is released
    assert run_edges(*items, settings=policy_only(DROP), output=sq.Shape.POINT).events == [point(1, 1)]
    # and with a final flush it is released open-ended: it never ends
    flushed = run_edges(*items, settings=policy_only(DROP, flush=True))
    assert flushed.events == [ev(1, None, 1)]
    assert flushed.dropped == 1


def test_end_edge_violating_a_cti_under_adjust_is_moved_to_the_cti() -> None:
    result = run_edges(start_edge(1, 1), sq.Cti(4), end_edge(1, 3, 1), sq.Cti(6), settings=policy_only(ADJUST))
    # the end 3 < CTI 4 moves to 4: [1, 4), adjusted; released at CTI 6
    assert result.events == [ev(1, 4, 1)]
    assert (result.dropped, result.adjusted) == (0, 1)


def test_end_edge_at_the_cti_is_no_violation() -> None:
    result = run_edges(start_edge(1, 1), sq.Cti(4), end_edge(1, 4, 1), sq.Cti(6), settings=policy_only(DROP))
    assert result.events == [ev(1, 4, 1)]
    assert (result.dropped, result.adjusted) == (0, 0)


def test_adjustment_that_empties_a_lifetime_removes_the_event() -> None:
    result = run_edges(sq.Cti(5), start_edge(3, 1), end_edge(3, 4, 1), settings=policy_only(ADJUST, flush=True))
    # the start edge at 3 < CTI 5 moves to 5 (adjusted); its end edge at 4 < 5 moves to 5:
    # [5, 5) is empty, so the event is removed and counted as dropped only (not adjusted)
    assert result.events == []
    assert (result.dropped, result.adjusted) == (1, 0)


def test_adjusted_start_edge_keeps_its_original_start_for_matching() -> None:
    result = run_edges(sq.Cti(5), start_edge(3, 1), end_edge(3, 9, 1), settings=policy_only(ADJUST, flush=True))
    # the start moves to 5; the end edge still names the original start 3 and closes it: [5, 9)
    assert result.events == [ev(5, 9, 1)]
    assert (result.dropped, result.adjusted) == (0, 1)


def test_end_edge_at_the_adjusted_start_empties_the_lifetime() -> None:
    result = run_edges(sq.Cti(5), start_edge(3, 1), end_edge(3, 5, 1), settings=policy_only(ADJUST, flush=True))
    # the start moves from 3 to 5; the end edge at 5 is no violation (5 >= CTI 5), but [5, 5)
    # is empty: removed, counted as dropped only
    assert result.events == []
    assert (result.dropped, result.adjusted) == (1, 0)


def test_an_event_moved_at_both_ends_counts_once() -> None:
    result = run_edges(sq.Cti(5), start_edge(3, 1), sq.Cti(10), end_edge(3, 8, 1),
                       settings=policy_only(ADJUST, flush=True))
    # start 3 -> CTI 5; later the end 8 < CTI 10 -> 10: [5, 10), one adjusted event
    assert result.events == [ev(5, 10, 1)]
    assert (result.dropped, result.adjusted) == (0, 1)


def test_end_edge_of_a_dropped_start_edge_is_ignored() -> None:
    result = run_edges(sq.Cti(5), start_edge(3, 1), end_edge(3, 8, 1), settings=policy_only(DROP, flush=True))
    # the start edge is dropped (one dropped event); its end edge goes with it, silently:
    # it is neither a second drop nor a bad row
    assert result.events == []
    assert (result.dropped, result.adjusted, result.bad_rows) == (1, 0, 0)


def test_unmatched_end_edge_is_bad_input() -> None:
    with pytest.raises(sq.BadInputError, match=r"input 'edges', item 1: end edge at 3 has no open start edge at 1"):
        run_edges(start_edge(1, 2), end_edge(1, 3, 1), sq.Cti(INF))
    result = run_edges(start_edge(1, 2), end_edge(1, 3, 1), sq.Cti(INF), bad_rows="drop")
    # dropped as a bad row; the start edge with V2 stays open and is flushed open-ended
    assert result.events == [ev(1, None, 2)]
    assert (result.bad_rows, result.dropped) == (1, 0)


def test_second_end_edge_is_unmatched() -> None:
    result = run_edges(start_edge(1, 1), end_edge(1, 3, 1), end_edge(1, 4, 1), sq.Cti(INF), bad_rows="drop")
    # the first end edge closes [1, 3); the second finds no open event
    assert result.events == [ev(1, 3, 1)]
    assert result.bad_rows == 1


# --- bad rows ------------------------------------------------------------------------------------


def test_end_not_after_start_is_bad_input() -> None:
    with pytest.raises(sq.BadInputError, match=r"input 'intervals', item 1: end 5 is not after start 5"):
        run_intervals(ins(1, 2, 1), ins(5, 5, 2), sq.Cti(INF))
    result = run_intervals(ins(1, 2, 1), ins(5, 5, 2), ins(6, 4, 3), ins(7, 9, 4), sq.Cti(INF), bad_rows="drop")
    # [5, 5) and [6, 4) are bad rows; they are neither events nor drops
    assert result.events == [ev(1, 2, 1), ev(7, 9, 4)]
    assert (result.bad_rows, result.dropped) == (2, 0)


def test_end_edge_not_after_its_start_is_bad_input() -> None:
    with pytest.raises(sq.BadInputError, match="end edge's end 1 is not after its start 1"):
        run_edges(start_edge(1, 1), end_edge(1, 1, 1))
    result = run_edges(start_edge(1, 1), end_edge(1, 1, 1), sq.Cti(INF), bad_rows="drop")
    assert result.events == [ev(1, None, 1)] and result.bad_rows == 1


def test_null_times_are_bad_input() -> None:
    null_start = sq.Insert(cast(int, None), 3, V(1))
    with pytest.raises(sq.BadInputError, match="start is null"):
        run_intervals(null_start)
    result = run_intervals(null_start, ins(1, 2, 2), sq.Cti(INF), bad_rows="drop")
    assert result.events == [ev(1, 2, 2)] and result.bad_rows == 1


def test_naive_datetimes_are_bad_input() -> None:
    naive = sq.Insert(datetime(2009, 7, 15), datetime(2009, 7, 16), V(1))
    with pytest.raises(sq.BadInputError, match="naive datetime"):
        run_intervals(naive)


def test_a_point_input_needs_one_tick_lifetimes() -> None:
    with pytest.raises(sq.BadInputError, match="must end one tick"):
        run_points(ins(1, 3, 1))


def test_wrong_items_for_the_shape_are_type_errors() -> None:
    with pytest.raises(TypeError, match="EDGE input: give StartEdge/EndEdge items, not Insert"):
        run_edges(ins(1, 3, 1))
    with pytest.raises(TypeError, match="StartEdge needs Shape.EDGE"):
        run_intervals(start_edge(1, 1))


def test_payloads_must_have_the_declared_type() -> None:
    @dataclasses.dataclass(frozen=True)
    class W:
        v: int

    with pytest.raises(sq.SchemaError, match="input 'intervals': expected a V payload, got W"):
        run_intervals(sq.Insert(1, 2, W(1)))


# --- CTI import ------------------------------------------------------------------------------------

SLOW = sq.input("slow", V, shape=sq.Shape.INTERVAL)


def imports(source: str, policy: sq.AdvanceTimePolicy = ADJUST) -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport(source), policy=policy)


def test_import_copies_ctis_on_one_arrival_clock() -> None:
    fast = given(pt(1, 0), sq.Cti(10), pt(12, 0), sq.Cti(20))
    slow = given(ins(0, 30, 1), ins(5, 15, 2), ins(8, 9, 3), ins(15, 25, 4), settings=imports("fast"))
    result = sq.reference.run(SLOW, {"fast": fast, "slow": slow})
    # pos 0: [0, 30) accepted. pos 1: [5, 15) arrives before fast's CTI 10 at the same position:
    # accepted; then slow imports CTI 10. pos 2: [8, 9) is wholly before 10: removed even under
    # ADJUST. pos 3: [15, 25) accepted before the imported CTI 20.
    # Released (start < 20): [0, 30), [5, 15), [15, 25). Only the input the query reads is counted.
    assert result.events == [ev(0, 30, 1), ev(5, 15, 2), ev(15, 25, 4)]
    assert (result.dropped, result.adjusted) == (1, 0)
    assert result.final_cti == at(20)


def test_imported_cti_adjusts_later_events() -> None:
    fast = given(sq.Cti(10))
    slow = given(ins(1, 2, 1), ins(5, 15, 2), settings=imports("fast"))
    result = sq.reference.run(SLOW, {"fast": fast, "slow": slow})
    # pos 0: [1, 2) arrives before CTI 10; pos 1: [5, 15) after it: moved to [10, 15)
    # Released (start < 10): [1, 2) only.
    assert result.events == [ev(1, 2, 1)]
    assert (result.dropped, result.adjusted) == (0, 1)
    assert result.final_cti == at(10)


def test_import_of_the_final_flush_cti() -> None:
    fast = given(pt(10, 0), pt(20, 0), settings=generate(every_events=1, flush=True))
    slow = given(ins(0, 100, 1), ins(15, 40, 2), ins(30, 35, 3), settings=imports("fast"))
    result = sq.reference.run(SLOW, {"fast": fast, "slow": slow})
    # fast generates CTIs 10 (pos 0) and 20 (pos 1); slow imports them: [15, 40) arrives at
    # pos 1 before CTI 20; [30, 35) at pos 2 is after it, fine. The flush CTI comes at the end
    # of the run (batch: the end of input), after every input's last item — so [30, 35), at a
    # position past fast's last item, still arrives before it. Slow imports INFINITY too:
    # everything is released.
    assert result.events == [ev(0, 100, 1), ev(15, 40, 2), ev(30, 35, 3)]
    assert result.final_cti == INF


def test_import_combined_with_generation_and_cti_rows() -> None:
    fast = given(sq.Cti(50))
    settings = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1),
                                      import_=sq.AdvanceTimeImport("fast"), policy=DROP)
    slow = given(ins(10, 20, 1), ins(40, 60, 2), ins(70, 80, 3), sq.Cti(60), settings=settings)
    result = sq.reference.run(SLOW, {"fast": fast, "slow": slow})
    # pos 0: [10, 20) accepted, generated CTI 10, imported CTI 50 -> current 50;
    # pos 1: [40, 60) starts before 50: dropped; pos 2: [70, 80) accepted, CTI 70;
    # pos 3: a CTI row 60 does not move it back. Released (start < 70): [10, 20).
    assert result.events == [ev(10, 20, 1)]
    assert result.dropped == 1
    assert result.final_cti == at(70)


def test_import_chains() -> None:
    a = given(sq.Cti(7))
    b = given(pt(1, 0), settings=imports("a"))
    c = given(ins(2, 9, 1), settings=imports("b"))
    result = sq.reference.run(sq.input("c", V, shape=sq.Shape.INTERVAL), {"a": a, "b": b, "c": c})
    # a's CTI 7 reaches b and, through b, c
    assert result.events == [ev(2, 9, 1)]
    assert result.final_cti == at(7)


def test_import_cycles_are_binding_errors() -> None:
    a = given(pt(1, 1), settings=imports("b"))
    b = given(pt(1, 1), settings=imports("a"))
    query = sq.input("a", V)
    with pytest.raises(sq.BindingError, match="CTI imports form a cycle: a -> b -> a"):
        sq.reference.run(query, {"a": a, "b": b})
    with pytest.raises(sq.BindingError, match="cannot import its own CTIs"):
        sq.reference.run(query, {"a": given(pt(1, 1), settings=imports("a"))})


def test_import_from_an_unknown_input_is_a_binding_error() -> None:
    with pytest.raises(sq.BindingError, match="imports the CTIs of 'nowhere', which is not bound"):
        sq.reference.run(SLOW, {"slow": given(ins(1, 2, 1), settings=imports("nowhere"))})


def test_inputs_must_match_the_query() -> None:
    with pytest.raises(sq.BindingError, match="the query reads inputs that are not given: slow"):
        sq.reference.run(SLOW, {"fast": given(sq.Cti(1))})
    with pytest.raises(sq.BindingError, match="'extra' is not read by the query and no input imports its CTIs"):
        sq.reference.run(SLOW, {"slow": given(sq.Cti(1)), "extra": given(sq.Cti(1))})
    with pytest.raises(sq.BindingError, match="expected a sq.reference.ReferenceInput"):
        sq.reference.run(SLOW, {"slow": cast(ReferenceInput[Any], [sq.Cti(1)])})
