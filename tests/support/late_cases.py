"""Hand-worked cases of the records of late events (docs/late-events.md), shared by the reference and the Spark tests.

Times are integer microseconds; every input carries the payload ``Reading``, each item its own
``watts`` so that a record names its item. Each case gives its query, its inputs (items in arrival
order, settings, ``bad_rows``), the ``Late`` records of ``run(q, ..., late=True)`` written out in
full — ``sq.Late(input, arrival, action, kind, start, end, cti, new_start, new_end, payload,
reason)`` — the counts ``(dropped, adjusted, bad_rows)`` and what the query releases (INTERVAL
output), worked out by hand in the comments. An arrival is the item's list position (on Spark: the
``arrival`` column ``support.frames.frame`` writes, the same number). ``reason`` is the reference
evaluator's text; Spark's differs, so the Spark tests compare records without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, cast

import streamql as sq
from streamql.time import from_micros

INF = sq.INFINITY
DROP = sq.AdvanceTimePolicy.DROP
ADJUST = sq.AdvanceTimePolicy.ADJUST


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: int


def at(t: Optional[int]) -> Optional[datetime]:
    """A record's time: ``None`` stays ``None`` (a start edge's end, a time that cannot be read)."""
    return None if t is None else from_micros(t)


def r(watts: int, meter: str = "m") -> Reading:
    return Reading(meter, watts)


def ins(start: Any, end: Any, watts: int, meter: str = "m") -> sq.Insert[Reading]:
    return sq.Insert(start, end, r(watts, meter))


def pt(start: int, watts: int, meter: str = "m") -> sq.Insert[Reading]:
    """A point event: it ends one tick after it starts."""
    return sq.Insert(start, start + 1, r(watts, meter))


def start_edge(start: int, watts: int) -> sq.StartEdge[Reading]:
    return sq.StartEdge(start, r(watts))


def end_edge(start: int, end: int, watts: int) -> sq.EndEdge[Reading]:
    return sq.EndEdge(start, end, r(watts))


def null() -> Any:
    """A missing time (a null column on Spark)."""
    return cast(Any, None)


def policy_only(policy: sq.AdvanceTimePolicy, flush: bool = True) -> sq.AdvanceTimeSettings:
    """CTIs from the input's CTI rows only (generation never fires in these short inputs), late
    events handled by ``policy``, and a final CTI at INFINITY that releases what was accepted."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=flush), policy=policy)


@dataclass(frozen=True)
class Side:
    shape: sq.Shape
    items: Sequence[Any]
    settings: Optional[sq.AdvanceTimeSettings]
    bad_rows: Literal["error", "drop"] = "error"


@dataclass(frozen=True)
class Case:
    name: str
    query: Callable[[Mapping[str, sq.Stream[Reading]]], sq.Stream[Reading]]
    sides: Mapping[str, Side]
    late: Sequence[sq.Late]
    #: (dropped, adjusted, bad_rows) of the result
    counts: tuple[int, int, int]
    #: INTERVAL output: (start, end (None: INFINITY), payload)
    interval: Sequence[tuple[int, Optional[int], Reading]]


def alone(name: str) -> Callable[[Mapping[str, sq.Stream[Reading]]], sq.Stream[Reading]]:
    """The query that reads the input ``name`` and nothing else."""
    return lambda s: s[name]


LATE_INTERVALS: list[Any] = [
    sq.Cti(10),
    ins(5, 8, 1),    # wholly before the CTI
    ins(5, 15, 2),   # straddles the CTI
    ins(12, 14, 3),  # after it
    ins(10, 11, 4),  # starts at the CTI: not a violation
    ins(9, 10, 5),   # ends at the CTI: nothing of it is at or after the CTI
]

#: the fast input of the import cases: points, its own CTI rows, one late point (policy DROP)
FAST = Side(sq.Shape.POINT, [pt(1, 1, "fast"), sq.Cti(10), pt(5, 2, "fast"), pt(12, 3, "fast"), sq.Cti(20)], None)
#: the slow input imports the fast input's CTIs and moves late events (ADJUST)
SLOW = Side(sq.Shape.INTERVAL, [ins(0, 30, 1, "slow"), ins(5, 15, 2, "slow"), ins(8, 9, 3, "slow"),
                                ins(15, 25, 4, "slow"), ins(6, 12, 5, "slow")],
            sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("fast"), policy=ADJUST))


CASES: list[Case] = [
    Case(
        # CTI 5 at position 1; the points at 3 (position 2) and 4 (position 4) start before it: dropped
        # — a point [4, 5) ends at the CTI, so ADJUST has nothing to move it to either; the point at 5
        # starts at the CTI: no violation
        "late_points_under_drop", alone("points"),
        {"points": Side(sq.Shape.POINT, [pt(1, 1), sq.Cti(5), pt(3, 2), pt(7, 3), pt(4, 4), pt(5, 5)],
                        policy_only(DROP))},
        [sq.Late("points", 2, "dropped", "INSERT", at(3), at(4), at(5), None, None, r(2), None),
         sq.Late("points", 4, "dropped", "INSERT", at(4), at(5), at(5), None, None, r(4), None)],
        (2, 0, 0),
        [(1, 2, r(1)), (5, 6, r(5)), (7, 8, r(3))]),
    Case(
        "late_points_under_adjust", alone("points"),
        {"points": Side(sq.Shape.POINT, [pt(1, 1), sq.Cti(5), pt(3, 2), pt(7, 3), pt(4, 4), pt(5, 5)],
                        policy_only(ADJUST))},
        [sq.Late("points", 2, "dropped", "INSERT", at(3), at(4), at(5), None, None, r(2), None),
         sq.Late("points", 4, "dropped", "INSERT", at(4), at(5), at(5), None, None, r(4), None)],
        (2, 0, 0),
        [(1, 2, r(1)), (5, 6, r(5)), (7, 8, r(3))]),
    Case(
        # a CTI after every point, 5 behind its start: 5 after the point at 10, 15 after the one at 20;
        # the point at 17 is late but within the delay (17 >= 15); the point at 12 violates the
        # generated CTI 15: its record names that CTI
        "late_point_after_a_generated_cti", alone("points"),
        {"points": Side(sq.Shape.POINT, [pt(10, 1), pt(20, 2), pt(17, 3), pt(12, 4)],
                        sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=sq.TICK * 5,
                                                                        flush=True)))},
        [sq.Late("points", 3, "dropped", "INSERT", at(12), at(13), at(15), None, None, r(4), None)],
        (1, 0, 0),
        [(10, 11, r(1)), (17, 18, r(3)), (20, 21, r(2))]),
    Case(
        # CTI 10: [5, 8), [5, 15) and [9, 10) start before it and are dropped
        "late_intervals_under_drop", alone("intervals"),
        {"intervals": Side(sq.Shape.INTERVAL, LATE_INTERVALS, policy_only(DROP))},
        [sq.Late("intervals", 1, "dropped", "INSERT", at(5), at(8), at(10), None, None, r(1), None),
         sq.Late("intervals", 2, "dropped", "INSERT", at(5), at(15), at(10), None, None, r(2), None),
         sq.Late("intervals", 5, "dropped", "INSERT", at(9), at(10), at(10), None, None, r(5), None)],
        (3, 0, 0),
        [(10, 11, r(4)), (12, 14, r(3))]),
    Case(
        # [5, 15) straddles CTI 10: moved to [10, 15), its record shows both lifetimes; [5, 8) and
        # [9, 10) end at or before the CTI: dropped even under ADJUST
        "late_intervals_under_adjust", alone("intervals"),
        {"intervals": Side(sq.Shape.INTERVAL, LATE_INTERVALS, policy_only(ADJUST))},
        [sq.Late("intervals", 1, "dropped", "INSERT", at(5), at(8), at(10), None, None, r(1), None),
         sq.Late("intervals", 2, "adjusted", "INSERT", at(5), at(15), at(10), at(10), at(15), r(2), None),
         sq.Late("intervals", 5, "dropped", "INSERT", at(9), at(10), at(10), None, None, r(5), None)],
        (2, 1, 0),
        [(10, 11, r(4)), (10, 15, r(2)), (12, 14, r(3))]),
    Case(
        # DROP on edges. Position 2: the end edge (1, 3) ends before CTI 4: ignored, as if it never
        # arrived (an END record; the event stays open). Position 3: the start edge at 2 is late:
        # dropped (a START record, no end). Position 4: its end edge goes with it, with no record and
        # not counted. Position 5: the end edge (1, 6) is on time and closes [1, 6)
        "late_edges_under_drop", alone("edges"),
        {"edges": Side(sq.Shape.EDGE, [start_edge(1, 1), sq.Cti(4), end_edge(1, 3, 1), start_edge(2, 2),
                                       end_edge(2, 9, 2), end_edge(1, 6, 1)], policy_only(DROP))},
        [sq.Late("edges", 2, "dropped", "END", at(1), at(3), at(4), None, None, r(1), None),
         sq.Late("edges", 3, "dropped", "START", at(2), None, at(4), None, None, r(2), None)],
        (2, 0, 0),
        [(1, 6, r(1))]),
    Case(
        # ADJUST moves the late start edges at 3 and 4 to CTI 5: START records, whose new end is
        # not known (None). The end edge (4, 9) is on time: it closes [5, 9) and is no record, so
        # the START record stays; the event of 3 never ends
        "adjusted_start_edges", alone("edges"),
        {"edges": Side(sq.Shape.EDGE, [sq.Cti(5), start_edge(3, 1), start_edge(4, 2), end_edge(4, 9, 2)],
                       policy_only(ADJUST))},
        [sq.Late("edges", 1, "adjusted", "START", at(3), None, at(5), at(5), None, r(1), None),
         sq.Late("edges", 2, "adjusted", "START", at(4), None, at(5), at(5), None, r(2), None)],
        (0, 2, 0),
        [(5, 9, r(2)), (5, None, r(1))]),
    Case(
        # the event of 3 is moved at both ends: its start to CTI 5 (position 1), its end 8 to CTI 10
        # (position 4). One record, the end edge's, whose new_start shows the moved start; the start
        # edge's record is gone. The event of 1 is moved at its end only: 7 -> 10, start kept
        "an_edge_event_moved_at_both_ends_has_one_record", alone("edges"),
        {"edges": Side(sq.Shape.EDGE, [start_edge(1, 2), sq.Cti(5), start_edge(3, 1), sq.Cti(10), end_edge(3, 8, 1),
                                       end_edge(1, 7, 2)], policy_only(ADJUST))},
        [sq.Late("edges", 4, "adjusted", "END", at(3), at(8), at(10), at(5), at(10), r(1), None),
         sq.Late("edges", 5, "adjusted", "END", at(1), at(7), at(10), at(1), at(10), r(2), None)],
        (0, 2, 0),
        [(1, 10, r(2)), (5, 10, r(1))]),
    Case(
        # the start edge at 3 moves to CTI 5; its end 4 moves to 5 too: [5, 5) is empty, the event is
        # removed — one "dropped" record, the end edge's. The start edge at 2 moves to 5 and its end
        # edge at 5 is on time (5 is not before the CTI) but leaves nothing either: one "dropped"
        # record with an end at the CTI
        "an_adjustment_that_empties_an_edge_event_is_one_dropped_record", alone("edges"),
        {"edges": Side(sq.Shape.EDGE, [sq.Cti(5), start_edge(3, 1), end_edge(3, 4, 1), start_edge(2, 2),
                                       end_edge(2, 5, 2)], policy_only(ADJUST))},
        [sq.Late("edges", 2, "dropped", "END", at(3), at(4), at(5), None, None, r(1), None),
         sq.Late("edges", 4, "dropped", "END", at(2), at(5), at(5), None, None, r(2), None)],
        (2, 0, 0),
        []),
    Case(
        # bad rows (bad_rows="drop"): [5, 5) and [6, 4) do not end after their start, two rows miss a
        # time; a record each, with no CTI, the times as given (None where missing) and the reason
        "bad_intervals", alone("intervals"),
        {"intervals": Side(sq.Shape.INTERVAL, [ins(1, 2, 1), ins(5, 5, 2), ins(null(), 3, 3), ins(6, null(), 4),
                                               ins(7, 9, 5), ins(6, 4, 6)], policy_only(DROP), "drop")},
        [sq.Late("intervals", 1, "bad_row", "INSERT", at(5), at(5), None, None, None, r(2),
                 "end 5 is not after start 5"),
         sq.Late("intervals", 2, "bad_row", "INSERT", None, at(3), None, None, None, r(3), "start is null"),
         sq.Late("intervals", 3, "bad_row", "INSERT", at(6), None, None, None, None, r(4), "end is null"),
         sq.Late("intervals", 5, "bad_row", "INSERT", at(6), at(4), None, None, None, r(6),
                 "end 4 is not after start 6")],
        (0, 0, 4),
        [(1, 2, r(1)), (7, 9, r(5))]),
    Case(
        # a point input's events last one tick: [1, 3) is a bad row
        "bad_point", alone("points"),
        {"points": Side(sq.Shape.POINT, [ins(1, 3, 1), pt(2, 2)], policy_only(DROP), "drop")},
        [sq.Late("points", 0, "bad_row", "INSERT", at(1), at(3), None, None, None, r(1),
                 "a POINT input's event must end one tick (0:00:00.000001) after its start")],
        (0, 0, 1),
        [(2, 3, r(2))]),
    Case(
        # end edges without an open start edge are bad rows: (1, 3) with payload 1 (the open event at
        # 1 has payload 2), and a second end edge (1, 4) for the event the end edge (1, 3) with
        # payload 2 closed; (2, 2) does not end after its start
        "unmatched_end_edges", alone("edges"),
        {"edges": Side(sq.Shape.EDGE, [start_edge(1, 2), end_edge(1, 3, 1), end_edge(1, 3, 2), end_edge(1, 4, 2),
                                       end_edge(2, 2, 3)], policy_only(DROP), "drop")},
        [sq.Late("edges", 1, "bad_row", "END", at(1), at(3), None, None, None, r(1),
                 "end edge at 3 has no open start edge at 1 with its payload"),
         sq.Late("edges", 3, "bad_row", "END", at(1), at(4), None, None, None, r(2),
                 "end edge at 4 has no open start edge at 1 with its payload"),
         sq.Late("edges", 4, "bad_row", "END", at(2), at(2), None, None, None, r(3),
                 "end edge's end 2 is not after its start 2")],
        (0, 0, 3),
        [(1, 3, r(2))]),
    Case(
        # slow imports fast's CTIs: CTI 10 after position 1, 20 after position 4. Slow's [8, 9)
        # (position 2) is wholly before 10: dropped; [6, 12) (position 4, before the CTI 20 of the
        # same position) is moved to [10, 12). Fast's point at 5 (position 2) is late too, but the
        # query does not read fast: no record of it, and it is not counted
        "only_the_inputs_the_query_reads_have_records", alone("slow"),
        {"fast": FAST, "slow": SLOW},
        [sq.Late("slow", 2, "dropped", "INSERT", at(8), at(9), at(10), None, None, r(3, "slow"), None),
         sq.Late("slow", 4, "adjusted", "INSERT", at(6), at(12), at(10), at(10), at(12), r(5, "slow"), None)],
        (1, 1, 0),
        [(0, 30, r(1, "slow")), (5, 15, r(2, "slow")), (10, 12, r(5, "slow")), (15, 25, r(4, "slow"))]),
    Case(
        # the union reads both: fast's record too, first (by input name, then arrival)
        "records_of_every_input_read_by_input_and_arrival", lambda s: s["slow"].union(s["fast"]),
        {"fast": FAST, "slow": SLOW},
        [sq.Late("fast", 2, "dropped", "INSERT", at(5), at(6), at(10), None, None, r(2, "fast"), None),
         sq.Late("slow", 2, "dropped", "INSERT", at(8), at(9), at(10), None, None, r(3, "slow"), None),
         sq.Late("slow", 4, "adjusted", "INSERT", at(6), at(12), at(10), at(10), at(12), r(5, "slow"), None)],
        (2, 1, 0),
        [(0, 30, r(1, "slow")), (1, 2, r(1, "fast")), (5, 15, r(2, "slow")), (10, 12, r(5, "slow")),
         (12, 13, r(3, "fast")), (15, 25, r(4, "slow"))]),
]
