"""Hand-worked examples from the seed documents, run through ``sq.reference.run``.

- seed 000 (StreamInsight: Event Structure): the power-meter tables as interval and as point
  events, and the edge model;
- seed 001 (StreamInsight: Advancing Application Time): "Result Liveliness" (frequency 1,
  delay 0 vs a negative delay of one tick), the 10-events/5-seconds generation example,
  Drop vs Adjust, CTI import, and CTI propagation through ShiftEventTime/AlterEventLifetime.
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any, Optional

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput

from support.seeds import (INF, INTERVAL_TABLE, METER_INTERVALS, METER_POINTS, POINT_TABLE, T1, T2, T3, T4,
                           TICK, PowerReading, Watts, every_event, t)


@dataclasses.dataclass(frozen=True)
class Signal:
    value: str


def meter(items: list[InputItem[Any]], settings: Optional[sq.AdvanceTimeSettings]) -> dict[str, ReferenceInput[Any]]:
    return {"meter": ReferenceInput(items, settings)}


# --- seed 000: event models ----------------------------------------------------------------------


def test_interval_table_flushed() -> None:
    result = sq.reference.run(METER_INTERVALS, meter(INTERVAL_TABLE, every_event(flush=True)))
    # the final CTI at INFINITY releases the three intervals exactly as given
    assert result.events == [
        sq.Event(T1, T2, PowerReading(100)),
        sq.Event(T2, T3, PowerReading(200)),
        sq.Event(T3, T4, PowerReading(100)),
    ]
    assert result.final_cti == INF
    assert (result.dropped, result.adjusted, result.bad_rows) == (0, 0, 0)


def test_interval_table_filtered_and_projected() -> None:
    query = METER_INTERVALS.where(lambda e: e.consumption > 150).select(lambda e: Watts(e.consumption * 1.5))
    result = sq.reference.run(query, meter(INTERVAL_TABLE, every_event(flush=True)))
    # only the 200 reading, valid over [09:14:09.270, 09:14:22.255); 200 * 1.5 = 300.0
    assert result.events == [sq.Event(T2, T3, Watts(300.0))]


def test_interval_table_without_flush_the_last_interval_waits() -> None:
    result = sq.reference.run(METER_INTERVALS, meter(INTERVAL_TABLE, every_event()))
    # CTIs at each start: 09:13:33.317, 09:14:09.270, 09:14:22.255. The last interval starts
    # at the final CTI, so it is not yet committed; the first two are released whole (their
    # lifetimes are final: interval input events are stable on arrival).
    assert result.events == [sq.Event(T1, T2, PowerReading(100)), sq.Event(T2, T3, PowerReading(200))]
    assert result.final_cti == T3


def test_point_table() -> None:
    result = sq.reference.run(METER_POINTS, meter(POINT_TABLE, every_event(delay=-TICK)))
    # a CTI one tick after each point: the last one at 09:14:22.255 + t commits all three,
    # each with end = start + t
    assert result.events == [
        sq.Event(T1, T1 + TICK, PowerReading(100)),
        sq.Event(T2, T2 + TICK, PowerReading(200)),
        sq.Event(T3, T3 + TICK, PowerReading(100)),
    ]
    assert result.final_cti == T3 + TICK


def test_intervals_as_points_are_the_point_table() -> None:
    as_points = sq.reference.run(METER_INTERVALS.to_point(), meter(INTERVAL_TABLE, every_event(flush=True)))
    point_output = sq.reference.run(METER_INTERVALS, meter(INTERVAL_TABLE, every_event(flush=True)),
                                    output=sq.Shape.POINT)
    points = sq.reference.run(METER_POINTS, meter(POINT_TABLE, every_event(flush=True)))
    # both ways of turning the interval table into points give seed 000's point table
    assert as_points.events == point_output.events == points.events
    assert [(e.start, e.end) for e in points.events] == [(T1, T1 + TICK), (T2, T2 + TICK), (T3, T3 + TICK)]


def test_point_readings_extended_to_intervals() -> None:
    query = METER_POINTS.alter_duration(timedelta(seconds=10))
    result = sq.reference.run(query, meter(POINT_TABLE, every_event(flush=True)))
    # each reading counts for 10 s: [33.317, 43.317), [09.270, 19.270), [22.255, 32.255)
    assert result.events == [
        sq.Event(T1, t(9, 13, 43, 317), PowerReading(100)),
        sq.Event(T2, t(9, 14, 19, 270), PowerReading(200)),
        sq.Event(T3, t(9, 14, 32, 255), PowerReading(100)),
    ]


# Seed 000, "edge event model": a start edge sets the end to the maximum time, the end edge
# updates it; the event with payload 'c' has no known end yet. (The seed's table itself did
# not survive; these edges follow its description of a quantised analog signal: for every
# new value an END and a START edge.)
SIGNAL = sq.input("signal", Signal, shape=sq.Shape.EDGE)
S1, S2, S3 = t(10, 0, 0, 0), t(10, 0, 1, 0), t(10, 0, 3, 0)
SIGNAL_EDGES: list[InputItem[Any]] = [
    sq.StartEdge(S1, Signal("a")),
    sq.EndEdge(S1, S2, Signal("a")),
    sq.StartEdge(S2, Signal("b")),
    sq.EndEdge(S2, S3, Signal("b")),
    sq.StartEdge(S3, Signal("c")),
]


def test_edge_signal_with_an_open_event() -> None:
    settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-TICK))
    inputs = {"signal": ReferenceInput(SIGNAL_EDGES, settings)}
    result = sq.reference.run(SIGNAL, inputs)
    # CTIs one tick after each start edge; the last is S3 + t. 'a' [S1, S2) and 'b' [S2, S3) are
    # closed and released; 'c' is open (end unknown): not released as an interval
    assert result.events == [sq.Event(S1, S2, Signal("a")), sq.Event(S2, S3, Signal("b"))]
    edges = sq.reference.run(SIGNAL, inputs, output=sq.Shape.EDGE).edges
    # as edges: every START edge, and END edges for 'a' and 'b'; at S2 and S3 the END edge of
    # the previous value comes before the START edge of the next
    assert [(e.kind.name, e.time, e.payload.value) for e in edges] == [
        ("START", S1, "a"), ("END", S2, "a"), ("START", S2, "b"), ("END", S3, "b"), ("START", S3, "c")]
    flushed = sq.reference.run(SIGNAL, {"signal": ReferenceInput(
        SIGNAL_EDGES, sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True)))})
    # at the end (CTI INFINITY) 'c' is released with the maximum end
    assert flushed.events[-1] == sq.Event(S3, INF, Signal("c"))


def test_unordered_edges_give_the_ordered_result() -> None:
    # seed 000: edge events "unordered on timestamps (1, 10, 3, 6, 5, 20)" — read as three events
    # a [1, 10), b [3, 6), c [5, 20) whose start and end edges arrive interleaved
    def s(second: int) -> datetime:
        return t(10, 0, second, 0)

    unordered: list[InputItem[Any]] = [
        sq.StartEdge(s(1), Signal("a")), sq.EndEdge(s(1), s(10), Signal("a")),
        sq.StartEdge(s(3), Signal("b")), sq.EndEdge(s(3), s(6), Signal("b")),
        sq.StartEdge(s(5), Signal("c")), sq.EndEdge(s(5), s(20), Signal("c")),
    ]
    ordered: list[InputItem[Any]] = [unordered[i] for i in (0, 2, 4, 3, 1, 5)]  # 1, 3, 5, 6, 10, 20
    flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=100, flush=True))
    expected = [sq.Event(s(1), s(10), Signal("a")), sq.Event(s(3), s(6), Signal("b")),
                sq.Event(s(5), s(20), Signal("c"))]
    # "the output of a query is the same as if the events arrived in order"
    assert sq.reference.run(SIGNAL, {"signal": ReferenceInput(unordered, flush)}).events == expected
    assert sq.reference.run(SIGNAL, {"signal": ReferenceInput(ordered, flush)}).events == expected
    # with a CTI after every start edge (delay 0) the CTIs are 1, 3, 5: a and b are released,
    # c starts at the final CTI and waits
    live = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))
    result = sq.reference.run(SIGNAL, {"signal": ReferenceInput(unordered, live)})
    assert result.events == expected[:2]
    assert result.final_cti == s(5)


# --- seed 001: advancing application time ----------------------------------------------------------


def test_result_liveliness_delay_zero_the_last_point_waits() -> None:
    # "frequency 1 (every event) and delay 0 ... the very last point event will only be
    # committed with the next CTI because its timestamp is not strictly before the CTI"
    result = sq.reference.run(METER_POINTS, meter(POINT_TABLE, every_event()))
    assert result.events == [sq.Event(T1, T1 + TICK, PowerReading(100)), sq.Event(T2, T2 + TICK, PowerReading(200))]
    assert result.final_cti == T3
    # the next CTI (here an explicit CTI row one tick later) commits it
    later = sq.reference.run(METER_POINTS, meter([*POINT_TABLE, sq.Cti(T3 + TICK)], every_event()))
    assert later.events[-1] == sq.Event(T3, T3 + TICK, PowerReading(100))


def test_result_liveliness_negative_one_tick_delay_commits_every_point() -> None:
    # "new AdvanceTimeGenerationSettings(1, TimeSpan.FromTicks(-1), true)": after each point a
    # CTI immediately after it. Without the flush, the liveliness is visible: after each event
    # every event so far is committed.
    for n in range(1, 4):
        result = sq.reference.run(METER_POINTS, meter(POINT_TABLE[:n], every_event(delay=-TICK)))
        assert len(result.events) == n
        assert result.final_cti == [T1, T2, T3][n - 1] + TICK
    with_flush = sq.reference.run(METER_POINTS, meter(POINT_TABLE, every_event(delay=-TICK, flush=True)))
    assert len(with_flush.events) == 3 and with_flush.final_cti == INF


def test_ten_events_five_seconds_grace_period() -> None:
    # "new AdvanceTimeGenerationSettings(10, TimeSpan.FromSeconds(5), true) ... a CTI after
    # every 10 events ... the last event's time minus five seconds ... the event source can
    # enqueue late events without violating CTI semantics (as long as the events are never
    # more than five seconds late). When the query is shut down, a CTI with infinite time."
    base = t(12, 0, 0, 0)
    readings: list[InputItem[Any]] = [
        sq.Insert(base + timedelta(seconds=i), base + timedelta(seconds=i) + TICK, PowerReading(i)) for i in range(10)
    ]
    # after the 10th event (at 9 s) the CTI is 9 - 5 = 4 s
    late_ok = sq.Insert(base + timedelta(seconds=4.5), base + timedelta(seconds=4.5) + TICK, PowerReading(45))
    too_late = sq.Insert(base + timedelta(seconds=3.9), base + timedelta(seconds=3.9) + TICK, PowerReading(39))
    settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10, delay=timedelta(seconds=5), flush=True))
    result = sq.reference.run(METER_POINTS, meter([*readings, late_ok, too_late], settings))
    # 4.5 s is 4.5 s late: accepted; 3.9 s is 5.1 s late: it violates CTI 4 s and is dropped.
    # The shut-down CTI at INFINITY releases the ten readings and the late one.
    assert [e.payload.consumption for e in result.events] == [0, 1, 2, 3, 4, 45, 5, 6, 7, 8, 9]
    assert result.dropped == 1
    assert result.final_cti == INF
    # without the flush, only what lies before CTI 4 s is committed
    no_flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10, delay=timedelta(seconds=5)))
    partial = sq.reference.run(METER_POINTS, meter([*readings, late_ok, too_late], no_flush))
    assert [e.payload.consumption for e in partial.events] == [0, 1, 2, 3]
    assert partial.final_cti == base + timedelta(seconds=4)


# Seed 001, "CTI Violation Policies": after a CTI at 09:14:09.270, a late interval that
# overlaps the CTI and one that lies wholly before it.
LATE_OVERLAPPING = sq.Insert(t(9, 13, 50, 0), t(9, 14, 15, 0), PowerReading(150))
LATE_BEFORE = sq.Insert(t(9, 13, 40, 0), t(9, 13, 55, 0), PowerReading(120))
WITH_LATE: list[InputItem[Any]] = [INTERVAL_TABLE[0], sq.Cti(T2), LATE_OVERLAPPING, LATE_BEFORE,
                                   *INTERVAL_TABLE[1:]]


def _explicit_ctis(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    # the CTIs come from the CTI row; generation only adds the shut-down CTI at INFINITY
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1000, flush=True), policy=policy)


def test_drop_policy() -> None:
    # "Drop: events that violate the inserted CTI are dropped and are not enqueued"
    result = sq.reference.run(METER_INTERVALS, meter(WITH_LATE, _explicit_ctis(sq.AdvanceTimePolicy.DROP)))
    assert result.events == [
        sq.Event(T1, T2, PowerReading(100)),
        sq.Event(T2, T3, PowerReading(200)),
        sq.Event(T3, T4, PowerReading(100)),
    ]
    assert (result.dropped, result.adjusted) == (2, 0)


def test_adjust_policy() -> None:
    # "Adjust: ... the start timestamp of the events is set to the most recent CTI timestamp ...
    # If both start and end time of an event fall before the CTI timestamp, then the event is dropped."
    result = sq.reference.run(METER_INTERVALS, meter(WITH_LATE, _explicit_ctis(sq.AdvanceTimePolicy.ADJUST)))
    # [09:13:50, 09:14:15) becomes [09:14:09.270, 09:14:15); [09:13:40, 09:13:55) is dropped.
    # Sorted by (start, end): the adjusted event ends before the 200 reading does.
    assert result.events == [
        sq.Event(T1, T2, PowerReading(100)),
        sq.Event(T2, t(9, 14, 15, 0), PowerReading(150)),
        sq.Event(T2, T3, PowerReading(200)),
        sq.Event(T3, T4, PowerReading(100)),
    ]
    assert (result.dropped, result.adjusted) == (1, 1)


def test_import_synchronises_a_slow_stream_with_a_fast_one() -> None:
    # "var ats = new AdvanceTimeSettings(null, new AdvanceTimeImportSettings("dataStream"),
    # AdvanceTimePolicy.Adjust)": the lookup stream has no CTIs of its own and copies the data
    # stream's, so that it produces output as fast as the data stream.
    lookup = sq.input("lookupStream", PowerReading, shape=sq.Shape.INTERVAL)
    data = ReferenceInput(POINT_TABLE, every_event(delay=-TICK))
    reference_data: list[InputItem[Any]] = [sq.Insert(t(9, 0, 0, 0), t(10, 0, 0, 0), PowerReading(1))]
    imported = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("dataStream"), policy=sq.AdvanceTimePolicy.ADJUST)
    result = sq.reference.run(lookup, {"dataStream": data, "lookupStream": ReferenceInput(reference_data, imported)})
    # the lookup interval [09:00, 10:00) is released once the data stream's CTI (T1 + t after
    # its first point) passes its start; the final CTI is the data stream's last, T3 + t
    assert result.events == [sq.Event(t(9, 0, 0, 0), t(10, 0, 0, 0), PowerReading(1))]
    assert result.final_cti == T3 + TICK
    # without the import the lookup stream has no CTI and releases nothing
    alone = sq.reference.run(lookup, {"lookupStream": ReferenceInput(reference_data)})
    assert alone.events == [] and alone.final_cti is None


def test_shift_applies_the_same_transformation_to_ctis() -> None:
    # "ShiftEventTime() and AlterEventLifeTime() methods both change the start time of events,
    # and the same transformation will be applied to CTIs."
    minute = timedelta(minutes=1)
    for query in (METER_INTERVALS.shift(minute), METER_INTERVALS.alter_lifetime(minute, timedelta(seconds=1))):
        result = sq.reference.run(query, meter(INTERVAL_TABLE, every_event()))
        # the input CTI T3 becomes T3 + 1 min; still, only the first two events start before it
        assert result.final_cti == T3 + minute
        assert [e.start for e in result.events] == [T1 + minute, T2 + minute]
