"""Hand-worked window, grouping and user-aggregate examples, run through ``sq.reference.run``.

The expected outputs are worked out by hand from docs/windows.md, docs/grouping.md and
docs/ctis-and-release.md, and written out in full:

- seed 002 (StreamInsight: Snapshot Windows): the three events e1, e2, e3 and their snapshot
  windows; the sliding average (point events, ``alter_duration(3 min)``, snapshot ``avg``) whose
  fourth output event averages 1.5;
- seed 000's power meter, summed per meter with a grouped snapshot;
- seed 004 (SQLstream: rowtime bounds): hourly counts per colour, closed by the rows themselves
  or by punctuation (CTI rows);
- hopping, tumbling and count windows with and without a final CTI, min/max, empty gaps, nulls,
  ``group_apply`` (nested too), events that never end, a user-defined aggregate over clipped
  lifetimes, and the errors raised when a window query is built.
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Callable, Optional, TypeVar, cast

import pytest

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput

from support.seeds import INF, T1, T2, T3, T4, TICK, UTC, every_event, t

T = TypeVar("T")
MINUTE = timedelta(minutes=1)
#: no CTI before the end of the input, then the shut-down CTI at INFINITY
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


def m(minute: int, second: int = 0) -> datetime:
    """12:mm:ss on 2024-05-01 (UTC); minute 60 and more roll over into 13:00 and later."""
    return datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC) + timedelta(minutes=minute, seconds=second)


def point(start: datetime, payload: Any) -> sq.Insert[Any]:
    return sq.Insert(start, start + TICK, payload)


def run(query: sq.Stream[Any], name: str, items: list[InputItem[Any]],
        settings: Optional[sq.AdvanceTimeSettings] = None, output: sq.Shape = sq.Shape.INTERVAL) -> sq.Result[Any]:
    return sq.reference.run(query, {name: ReferenceInput(items, settings)}, output=output)


@dataclasses.dataclass(frozen=True)
class Value:
    name: str
    i: int


@dataclasses.dataclass(frozen=True)
class Total:
    count: int
    total: int


VALUES = sq.input("values", Value, shape=sq.Shape.INTERVAL)
VALUE_POINTS = sq.input("points", Value, shape=sq.Shape.POINT)


def totals(windowed: sq.Windowed[Value]) -> sq.Stream[Total]:
    return windowed.select(lambda w: Total(count=w.count(), total=w.sum(lambda e: e.i)))


# --- seed 002: snapshot windows ----------------------------------------------------------------

# "a stream with three events: e1, e2, and e3 ... only event e1 is in the first snapshot window.
# However, both events e1 and e2 are overlapping and, therefore, are included in the second window."
E1 = sq.Insert(m(1), m(4), Value("e1", 1))
E2 = sq.Insert(m(2), m(6), Value("e2", 2))
E3 = sq.Insert(m(5), m(8), Value("e3", 4))
SNAPSHOT = totals(VALUES.snapshot_window())


def test_seed_snapshot_windows_of_three_events() -> None:
    result = run(SNAPSHOT, "values", [E1, E2, E3], FLUSH)
    # endpoints 1, 2, 4, 5, 6, 8: one window between each consecutive pair with a live event;
    # e1 alone, e1+e2, e2 alone, e2+e3, e3 alone
    assert result.events == [
        sq.Event(m(1), m(2), Total(1, 1)),
        sq.Event(m(2), m(4), Total(2, 3)),
        sq.Event(m(4), m(5), Total(1, 2)),
        sq.Event(m(5), m(6), Total(2, 6)),
        sq.Event(m(6), m(8), Total(1, 4)),
    ]
    assert result.final_cti == INF


def test_snapshot_released_up_to_a_stable_boundary_at_the_cti() -> None:
    result = run(SNAPSHOT, "values", [E1, E2, E3], every_event())
    # CTIs at the starts 1, 2, 5. [4, 5) ends exactly at the CTI, at e3's start: e3 is accepted,
    # so the boundary is stable and the interval is released. [5, 6) ends after the CTI: an
    # event starting at 5:30 could still split it.
    assert result.events == [
        sq.Event(m(1), m(2), Total(1, 1)),
        sq.Event(m(2), m(4), Total(2, 3)),
        sq.Event(m(4), m(5), Total(1, 2)),
    ]
    assert result.final_cti == m(5)  # a snapshot's output CTI is its input CTI
    # a CTI row at 6, where e2 ends: [5, 6) is released too, [6, 8) is not
    later = run(SNAPSHOT, "values", [E1, E2, E3, sq.Cti(m(6))], every_event())
    assert [e.start for e in later.events] == [m(1), m(2), m(4), m(5)]
    assert later.final_cti == m(6)


def test_snapshot_start_and_payload_are_final_before_the_end() -> None:
    items: list[InputItem[Any]] = [E1, E2, sq.Cti(m(3)), E3]
    # CTI 3: only [1, 2) is stable; [2, 4) has started but an event at 3 could still end it there
    assert run(SNAPSHOT, "values", items).events == [sq.Event(m(1), m(2), Total(1, 1))]
    # its start and payload are final, so POINT output releases it
    assert run(SNAPSHOT, "values", items, output=sq.Shape.POINT).events == [
        sq.Event(m(1), m(1) + TICK, Total(1, 1)),
        sq.Event(m(2), m(2) + TICK, Total(2, 3)),
    ]
    edges = run(SNAPSHOT, "values", items, output=sq.Shape.EDGE).edges
    # START edges for both; an END edge only for the stable one
    assert [(e.kind, e.time) for e in edges] == [
        (sq.EdgeKind.START, m(1)), (sq.EdgeKind.END, m(2)), (sq.EdgeKind.START, m(2))]


@dataclasses.dataclass(frozen=True)
class Sample:
    value: float


@dataclasses.dataclass(frozen=True)
class Average:
    average: float


SAMPLES_IN = sq.input("samples", Sample, shape=sq.Shape.POINT)
SLIDING = SAMPLES_IN.alter_duration(timedelta(minutes=3)).snapshot_window().select(
    lambda w: Average(w.avg(lambda e: e.value)))
SAMPLES: list[InputItem[Any]] = [point(m(0), Sample(3.0)), point(m(1), Sample(1.0)), point(m(2), Sample(2.0))]


def test_seed_sliding_average_over_three_minutes() -> None:
    result = run(SLIDING, "samples", SAMPLES, FLUSH)
    # the samples count [0, 3), [1, 4), [2, 5). Adjacent equal averages stay separate events.
    assert result.events == [
        sq.Event(m(0), m(1), Average(3.0)),
        sq.Event(m(1), m(2), Average(2.0)),   # (3 + 1) / 2
        sq.Event(m(2), m(3), Average(2.0)),   # (3 + 1 + 2) / 3
        sq.Event(m(3), m(4), Average(1.5)),   # (1 + 2) / 2
        sq.Event(m(4), m(5), Average(2.0)),
    ]
    # "the fourth event ... was 1.5 ... starts when the point event with payload 3 just falls
    # outside of the three minutes window, and ... ends right before the point event with
    # payload 1 falls outside the window"
    fourth = result.events[3]
    assert fourth.payload.average == 1.5
    assert fourth.start == m(0) + timedelta(minutes=3) and fourth.end == m(1) + timedelta(minutes=3)


def test_sliding_average_released_as_the_samples_arrive() -> None:
    # a CTI one tick after every sample: after the last (2:00) the CTI is 2:00 + t
    result = run(SLIDING, "samples", SAMPLES, every_event(delay=-TICK))
    # [0, 1) and [1, 2) end before the CTI; [2, 3) ends at 3, after it
    assert result.events == [sq.Event(m(0), m(1), Average(3.0)), sq.Event(m(1), m(2), Average(2.0))]
    assert result.final_cti == m(2) + TICK
    # as points, the snapshot from 2:00 is already final: its start is before the CTI
    points = run(SLIDING, "samples", SAMPLES, every_event(delay=-TICK), output=sq.Shape.POINT)
    assert [(e.start, e.payload.average) for e in points.events] == [(m(0), 3.0), (m(1), 2.0), (m(2), 2.0)]


# --- seed 000's power meter, per meter ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MeterReading:
    meter: str
    consumption: int


@dataclasses.dataclass(frozen=True)
class MeterSum:
    meter: str
    total: int
    readings: int


METERS = sq.input("meter", MeterReading, shape=sq.Shape.INTERVAL)
PER_METER = METERS.group_by(lambda e: e.meter).snapshot_window().select(
    lambda w: MeterSum(meter=w.key, total=w.sum(lambda e: e.consumption), readings=w.count()))
M2_A = sq.Insert(t(9, 13, 50, 0), t(9, 14, 30, 0), MeterReading("m2", 50))
M2_B = sq.Insert(t(9, 14, 0, 0), t(9, 14, 30, 0), MeterReading("m2", 30))
# in start order: the seed's meter as "m1", and two overlapping intervals of a meter "m2"
METER_ITEMS: list[InputItem[Any]] = [
    sq.Insert(T1, T2, MeterReading("m1", 100)), M2_A, M2_B,
    sq.Insert(T2, T3, MeterReading("m1", 200)), sq.Insert(T3, T4, MeterReading("m1", 100))]


def test_power_meter_sums_per_meter() -> None:
    result = run(PER_METER, "meter", METER_ITEMS, FLUSH)
    # each meter's timeline is cut at its own endpoints only: m1's three intervals stay whole
    # although m2 changes at 09:13:50 and 09:14:00; m2 sums 50, then 50 + 30
    assert result.events == [
        sq.Event(T1, T2, MeterSum("m1", 100, 1)),
        sq.Event(t(9, 13, 50, 0), t(9, 14, 0, 0), MeterSum("m2", 50, 1)),
        sq.Event(t(9, 14, 0, 0), t(9, 14, 30, 0), MeterSum("m2", 80, 2)),
        sq.Event(T2, T3, MeterSum("m1", 200, 1)),
        sq.Event(T3, T4, MeterSum("m1", 100, 1)),
    ]


def test_power_meter_sums_per_meter_released_by_the_ctis() -> None:
    result = run(PER_METER, "meter", METER_ITEMS, every_event())
    # the CTI is T3 (the last start). m1's [T2, T3) ends at the CTI where an accepted reading
    # ends: released. m2's [09:14:00, 09:14:30) ends after the CTI: not yet. m1's [T3, T4)
    # starts at the CTI: not yet.
    assert result.events == [
        sq.Event(T1, T2, MeterSum("m1", 100, 1)),
        sq.Event(t(9, 13, 50, 0), t(9, 14, 0, 0), MeterSum("m2", 50, 1)),
        sq.Event(T2, T3, MeterSum("m1", 200, 1)),
    ]
    assert result.final_cti == T3


def test_ungrouped_snapshot_cuts_at_every_meters_endpoints() -> None:
    query = METERS.snapshot_window().select(lambda w: Total(count=w.count(), total=w.sum(lambda e: e.consumption)))
    result = run(query, "meter", METER_ITEMS, FLUSH)
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (T1, t(9, 13, 50, 0), Total(1, 100)),
        (t(9, 13, 50, 0), t(9, 14, 0, 0), Total(2, 150)),
        (t(9, 14, 0, 0), T2, Total(3, 180)),
        (T2, T3, Total(3, 280)),
        (T3, t(9, 14, 30, 0), Total(3, 180)),
        (t(9, 14, 30, 0), T4, Total(1, 100)),
    ]


# --- seed 004: hourly counts per colour ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    colour: str


@dataclasses.dataclass(frozen=True)
class ColourCount:
    colour: str
    n: int


def h(hh: int, mm: int) -> datetime:
    return datetime(2024, 5, 1, hh, mm, tzinfo=UTC)


ROWS_IN = sq.input("rows", Row, shape=sq.Shape.POINT)
HOURLY_PER_COLOUR = ROWS_IN.group_by(lambda e: e.colour).tumbling_window(timedelta(hours=1)).select(
    lambda w: ColourCount(colour=w.key, n=w.count()))
# "During this period there were 5 input rows, and the counts are (red = 3, blue = 2) ... The next
# period ... includes 6 rows, with counts (red = 3, blue = 3). However the input stream clock jumps
# from 4:49 to 6:15"
ROWS: list[InputItem[Any]] = [point(h(hh, mm), Row(colour)) for hh, mm, colour in [
    (3, 5, "red"), (3, 12, "blue"), (3, 27, "red"), (3, 41, "blue"), (3, 58, "red"),
    (4, 0, "red"), (4, 10, "blue"), (4, 18, "blue"), (4, 25, "red"), (4, 37, "blue"), (4, 49, "red")]]
ROW_AT_6_15 = point(h(6, 15), Row("blue"))
#: SQLstream: "each row automatically creates a non-strict bound following itself"
ROWTIME_BOUND = every_event()
HOUR_3 = [sq.Event(h(3, 0), h(4, 0), ColourCount("blue", 2)), sq.Event(h(3, 0), h(4, 0), ColourCount("red", 3))]
HOUR_4 = [sq.Event(h(4, 0), h(5, 0), ColourCount("blue", 3)), sq.Event(h(4, 0), h(5, 0), ColourCount("red", 3))]


def test_hour_closed_by_the_row_at_its_end() -> None:
    # "The arrival of the row (4:00, red) moves the input clock to 4:00, closing off the period
    # from 3:00 to 4:00." After 4:49 the hour 4:00-5:00 is still open.
    result = run(HOURLY_PER_COLOUR, "rows", ROWS, ROWTIME_BOUND)
    assert result.events == HOUR_3
    # the input CTI 4:49 lies in the window [4:00, 5:00): the output CTI is pulled back to its start
    assert result.final_cti == h(4, 0)
    # before the row at 4:00 arrives, no hour is closed (the CTI is 3:58)
    before = run(HOURLY_PER_COLOUR, "rows", ROWS[:5], ROWTIME_BOUND)
    assert before.events == [] and before.final_cti == h(3, 0)


def test_hour_without_punctuation_waits_for_the_next_row() -> None:
    # "it is only on seeing the row at 6:15 that the counting operator knows that the period
    # 4:00 -- 5:00 has ended"
    result = run(HOURLY_PER_COLOUR, "rows", [*ROWS, ROW_AT_6_15], ROWTIME_BOUND)
    assert result.events == HOUR_3 + HOUR_4
    assert result.final_cti == h(6, 0)


def test_hour_closed_by_punctuation() -> None:
    # "At 5:00 it knows there will be no more input rows for the day, so it can advance the
    # rowtime bound past 5:00": a CTI row at 5:00 releases the hour 4:00-5:00 at once
    result = run(HOURLY_PER_COLOUR, "rows", [*ROWS, sq.Cti(h(5, 0))], ROWTIME_BOUND)
    assert result.events == HOUR_3 + HOUR_4
    assert result.final_cti == h(5, 0)
    # a bound just short of 5:00 does not close it
    short = run(HOURLY_PER_COLOUR, "rows", [*ROWS, sq.Cti(h(5, 0) - TICK)], ROWTIME_BOUND)
    assert short.events == HOUR_3
    assert short.final_cti == h(4, 0)


# --- hopping and tumbling windows -------------------------------------------------------------

SPREAD: list[InputItem[Any]] = [sq.Insert(m(1), m(3), Value("a", 1)), sq.Insert(m(4), m(7), Value("b", 2)),
                                sq.Insert(m(12), m(13), Value("c", 4))]
HOPPING = totals(VALUES.hopping_window(timedelta(minutes=4), timedelta(minutes=2)))


def test_hopping_windows_flushed() -> None:
    result = run(HOPPING, "values", SPREAD, FLUSH)
    # windows [2k, 2k + 4): a [1, 3) is in those from -2, 0 and 2; b [4, 7) in those from 2, 4
    # and 6; c [12, 13) in those from 10 and 12. The window [8, 12) is empty: no output.
    assert result.events == [
        sq.Event(m(-2), m(2), Total(1, 1)),
        sq.Event(m(0), m(4), Total(1, 1)),
        sq.Event(m(2), m(6), Total(2, 3)),
        sq.Event(m(4), m(8), Total(1, 2)),
        sq.Event(m(6), m(10), Total(1, 2)),
        sq.Event(m(10), m(14), Total(1, 4)),
        sq.Event(m(12), m(16), Total(1, 4)),
    ]
    assert result.final_cti == INF


def test_hopping_windows_without_flush() -> None:
    result = run(HOPPING, "values", SPREAD, every_event())
    # input CTI 12 (the last start): windows ending at or before 12 are stable; the earliest
    # window it has not reached the end of is [10, 14), so the output CTI is 10. c's windows wait.
    assert result.events == [
        sq.Event(m(-2), m(2), Total(1, 1)),
        sq.Event(m(0), m(4), Total(1, 1)),
        sq.Event(m(2), m(6), Total(2, 3)),
        sq.Event(m(4), m(8), Total(1, 2)),
        sq.Event(m(6), m(10), Total(1, 2)),
    ]
    assert result.final_cti == m(10)
    # a hopping window's start and payload are final only with the window: POINT output is the same
    points = run(HOPPING, "values", SPREAD, every_event(), output=sq.Shape.POINT)
    assert [e.start for e in points.events] == [e.start for e in result.events]
    # a CTI row at 14 completes [10, 14); [12, 16) still waits. Output CTI: the start of [12, 16).
    later = run(HOPPING, "values", [*SPREAD, sq.Cti(m(14))], every_event())
    assert later.events[-1] == sq.Event(m(10), m(14), Total(1, 4))
    assert len(later.events) == 6 and later.final_cti == m(12)


def test_tumbling_windows_and_the_cti_pulled_back() -> None:
    query = totals(VALUES.tumbling_window(timedelta(minutes=5)))
    result = run(query, "values", SPREAD, every_event())
    # windows [0, 5), [5, 10), [10, 15): b [4, 7) is in the first two. CTI 12 lies in [10, 15).
    assert result.events == [sq.Event(m(0), m(5), Total(2, 3)), sq.Event(m(5), m(10), Total(1, 2))]
    assert result.final_cti == m(10)
    assert run(query, "values", SPREAD, FLUSH).events[-1] == sq.Event(m(10), m(15), Total(1, 4))


def test_empty_windows_and_gaps_produce_nothing() -> None:
    items: list[InputItem[Any]] = [sq.Insert(m(1), m(2), Value("a", 1)), sq.Insert(m(3), m(4), Value("b", 2)),
                                   sq.Insert(m(21), m(22), Value("c", 4))]
    # snapshot: nothing between 2 and 3, nor between 4 and 21
    assert [(e.start, e.end) for e in run(SNAPSHOT, "values", items, FLUSH).events] == [
        (m(1), m(2)), (m(3), m(4)), (m(21), m(22))]
    # tumbling windows of 5 minutes: [5, 10), [10, 15), [15, 20) are empty
    tumbling = totals(VALUES.tumbling_window(timedelta(minutes=5)))
    assert [(e.start, e.payload) for e in run(tumbling, "values", items, FLUSH).events] == [
        (m(0), Total(2, 3)), (m(20), Total(1, 4))]
    # hop > size leaves gaps between the windows [5k, 5k + 2): b [3, 4) falls in none of them
    gapped = totals(VALUES.hopping_window(timedelta(minutes=2), timedelta(minutes=5)))
    assert [(e.start, e.end, e.payload) for e in run(gapped, "values", items, FLUSH).events] == [
        (m(0), m(2), Total(1, 1)), (m(20), m(22), Total(1, 4))]


def test_hopping_windows_are_aligned_to_the_epoch() -> None:
    # hour-long windows every 30 minutes start on the hour and the half hour (UTC), wherever the
    # data starts
    query = totals(VALUE_POINTS.hopping_window(timedelta(hours=1), timedelta(minutes=30)))
    result = run(query, "points", [point(m(47), Value("a", 5))], FLUSH)
    assert [(e.start, e.end) for e in result.events] == [(m(0), m(60)), (m(30), m(90))]


# --- count windows -----------------------------------------------------------------------------

COUNTED_ITEMS: list[InputItem[Any]] = [point(m(1), Value("a", 1)), point(m(2), Value("b", 2)),
                                       point(m(2), Value("c", 3)), point(m(4), Value("d", 4)),
                                       point(m(7), Value("e", 5))]
BY_THREE = totals(VALUE_POINTS.count_window(3))


def test_count_windows_over_distinct_start_times() -> None:
    result = run(BY_THREE, "points", COUNTED_ITEMS, FLUSH)
    # distinct starts 1, 2, 4, 7: windows {1, 2, 4} (a, b, c, d) and {2, 4, 7} (b, c, d, e), each
    # from its first start to its last start + t. {4, 7} and {7} never fill: never output, not
    # even at the end; the final CTI INFINITY stays INFINITY.
    assert result.events == [
        sq.Event(m(1), m(4) + TICK, Total(4, 10)),
        sq.Event(m(2), m(7) + TICK, Total(4, 14)),
    ]
    assert result.final_cti == INF


def test_count_window_released_once_filled_and_the_cti_is_past_its_last_start() -> None:
    result = run(BY_THREE, "points", COUNTED_ITEMS, every_event())
    # input CTI 7. {1, 2, 4}: last start 4 < 7, stable. {2, 4, 7}: last start 7 is not before the
    # CTI (another event at 7 may come): not stable, and its start 2 is the output CTI.
    assert result.events == [sq.Event(m(1), m(4) + TICK, Total(4, 10))]
    assert result.final_cti == m(2)
    # a CTI at 7 + t makes {2, 4, 7} stable; the earliest unstable window is then {4, 7, ...},
    # which has not filled: the output CTI is its start, 4
    later = run(BY_THREE, "points", [*COUNTED_ITEMS, sq.Cti(m(7) + TICK)], every_event())
    assert later.events == [sq.Event(m(1), m(4) + TICK, Total(4, 10)), sq.Event(m(2), m(7) + TICK, Total(4, 14))]
    assert later.final_cti == m(4)
    # however far the CTI goes, the unfilled windows hold the output CTI at 4
    far = run(BY_THREE, "points", [*COUNTED_ITEMS, sq.Cti(m(500))], every_event())
    assert far.events == later.events and far.final_cti == m(4)
    # a new start time fills {4, 7, 9}; the output CTI moves to the start of {7, 9, ...}
    filled = run(BY_THREE, "points", [*COUNTED_ITEMS, point(m(9), Value("f", 6)), sq.Cti(m(10))], every_event())
    assert filled.events[-1] == sq.Event(m(4), m(9) + TICK, Total(3, 15))
    assert filled.final_cti == m(7)


def test_count_window_before_any_cti_and_unfilled_group() -> None:
    # without CTIs nothing is released and there is no output CTI
    result = run(BY_THREE, "points", COUNTED_ITEMS)
    assert result.events == [] and result.final_cti is None
    # two start times never fill a window of three, whatever the CTIs
    short = run(BY_THREE, "points", COUNTED_ITEMS[:3], every_event(flush=True))
    assert short.events == [] and short.final_cti == INF


def test_count_window_of_one_is_one_window_per_start_time() -> None:
    query = totals(VALUE_POINTS.count_window(1))
    result = run(query, "points", COUNTED_ITEMS, FLUSH)
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (m(1), m(1) + TICK, Total(1, 1)), (m(2), m(2) + TICK, Total(2, 5)), (m(4), m(4) + TICK, Total(1, 4)),
        (m(7), m(7) + TICK, Total(1, 5))]


# --- aggregates: min/max, types, nulls, expressions --------------------------------------------


@dataclasses.dataclass(frozen=True)
class Trade:
    symbol: str
    price: float
    qty: int
    fee: Decimal
    at_: datetime
    note: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Extremes:
    low: float
    high: float
    first_symbol: str
    last_symbol: str
    latest: datetime
    spread: float


TRADES_IN = sq.input("trades", Trade, shape=sq.Shape.POINT)
TRADES: list[InputItem[Any]] = [
    point(m(0, 5), Trade("XYZ", 10.5, 100, Decimal("0.10"), m(0, 5))),
    point(m(0, 20), Trade("ABC", 11.0, 50, Decimal("0.25"), m(0, 20), "odd lot")),
    point(m(0, 40), Trade("QRS", 10.25, 200, Decimal("0.05"), m(0, 40))),
    point(m(1, 5), Trade("XYZ", 10.75, 100, Decimal("0.10"), m(1, 5))),
]
MINUTELY = TRADES_IN.tumbling_window(MINUTE)


def test_min_and_max_of_numbers_strings_and_times() -> None:
    query = MINUTELY.select(lambda w: Extremes(
        low=w.min(lambda e: e.price), high=w.max(lambda e: e.price),
        first_symbol=w.min(lambda e: e.symbol), last_symbol=w.max(lambda e: e.symbol),
        latest=w.max(lambda e: e.at_), spread=w.max(lambda e: e.price) - w.min(lambda e: e.price)))
    result = run(query, "trades", TRADES, FLUSH)
    assert result.events == [
        sq.Event(m(0), m(1), Extremes(10.25, 11.0, "ABC", "XYZ", m(0, 40), 0.75)),
        sq.Event(m(1), m(2), Extremes(10.75, 10.75, "XYZ", "XYZ", m(1, 5), 0.0)),
    ]


@dataclasses.dataclass(frozen=True)
class Turnover:
    trades: int
    volume: int
    fees: Decimal
    turnover: float
    vwap: float
    mean_qty: float
    busy: bool


def test_aggregates_are_expressions() -> None:
    query = MINUTELY.select(lambda w: Turnover(
        trades=w.count(),
        volume=w.sum(lambda e: e.qty),
        fees=w.sum(lambda e: e.fee),
        turnover=w.sum(lambda e: e.price * e.qty),
        vwap=w.sum(lambda e: e.price * e.qty) / w.sum(lambda e: e.qty),
        mean_qty=w.avg(lambda e: e.qty),
        busy=w.count() >= 3))
    first, second = run(query, "trades", TRADES, FLUSH).events
    # 10.5*100 + 11*50 + 10.25*200 = 1050 + 550 + 2050 = 3650 over 350 shares
    assert first.payload == Turnover(3, 350, Decimal("0.40"), 3650.0, 3650.0 / 350, 350 / 3, True)
    assert second.payload == Turnover(1, 100, Decimal("0.10"), 1075.0, 10.75, 100.0, False)
    # sum keeps the argument's type (int, Decimal), avg is a float
    assert type(first.payload.volume) is int and type(first.payload.fees) is Decimal
    assert type(second.payload.mean_qty) is float


@dataclasses.dataclass(frozen=True)
class Level:
    sensor: Optional[str]
    reading: Optional[float]


@dataclasses.dataclass(frozen=True)
class Stats:
    sensor: Optional[str]
    events: int
    readings: int
    total: Optional[float]
    mean: Optional[float]
    low: Optional[float]
    high: Optional[float]


LEVELS_IN = sq.input("levels", Level, shape=sq.Shape.POINT)


def test_aggregates_skip_nulls_and_all_null_gives_null() -> None:
    query = LEVELS_IN.group_by(lambda e: e.sensor).tumbling_window(timedelta(minutes=10)).select(lambda w: Stats(
        sensor=w.key, events=w.count(), readings=w.sum(lambda e: sq.if_(sq.is_null(e.reading), 0, 1)),
        # sum and avg are typed for non-null numbers: cast (a no-op at run time) lets mypy accept
        # an Optional field, whose nulls the aggregates skip
        total=w.sum(lambda e: cast(float, e.reading)), mean=w.avg(lambda e: cast(float, e.reading)),
        low=w.min(lambda e: e.reading), high=w.max(lambda e: e.reading)))
    items: list[InputItem[Any]] = [
        point(m(1), Level("s1", 2.0)), point(m(2), Level("s1", None)), point(m(3), Level(None, 7.0)),
        point(m(6), Level("s1", 4.0)), point(m(8), Level(None, 1.0)), point(m(12), Level("s1", None)),
        point(m(15), Level("s1", None)),
    ]
    result = run(query, "levels", items, FLUSH)
    assert result.events == [
        # the null key is one group of its own, sorted first
        sq.Event(m(0), m(10), Stats(None, 2, 2, 8.0, 4.0, 1.0, 7.0)),
        # the null reading counts as an event, not as a zero: mean (2 + 4) / 2
        sq.Event(m(0), m(10), Stats("s1", 3, 2, 6.0, 3.0, 2.0, 4.0)),
        # events but no readings: output, with null aggregates
        sq.Event(m(10), m(20), Stats("s1", 2, 0, None, None, None, None)),
    ]


def test_snapshot_min_and_max_follow_the_live_events() -> None:
    query = VALUES.snapshot_window().select(lambda w: Extremes(
        low=w.min(lambda e: e.i * 1.0), high=w.max(lambda e: e.i * 1.0), first_symbol=w.min(lambda e: e.name),
        last_symbol=w.max(lambda e: e.name), latest=m(0), spread=w.max(lambda e: e.i * 1.0) - w.min(lambda e: e.i * 1.0)))
    result = run(query, "values", [E1, E2, E3], FLUSH)
    assert [(e.payload.low, e.payload.high, e.payload.first_symbol, e.payload.last_symbol) for e in result.events] == [
        (1.0, 1.0, "e1", "e1"), (1.0, 2.0, "e1", "e2"), (2.0, 2.0, "e2", "e2"), (2.0, 4.0, "e2", "e3"),
        (4.0, 4.0, "e3", "e3")]


# --- group_apply ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sale:
    region: str
    shop: str
    amount: int


@dataclasses.dataclass(frozen=True)
class Amount:
    total: int


@dataclasses.dataclass(frozen=True)
class RegionTotal:
    region: str
    total: int


@dataclasses.dataclass(frozen=True)
class ShopTotal:
    shop: str
    total: int


@dataclasses.dataclass(frozen=True)
class RegionShopTotal:
    region: str
    shop: str
    total: int


SALES_IN = sq.input("sales", Sale, shape=sq.Shape.POINT)
SALES: list[InputItem[Any]] = [point(m(minute), Sale(region, shop, amount)) for minute, region, shop, amount in [
    (1, "north", "n1", 10), (2, "south", "s1", 5), (3, "north", "n2", 7), (4, "north", "n1", 1),
    (6, "south", "s1", 2), (7, "north", "n1", 4), (9, "south", "s2", 8)]]
FIVE = timedelta(minutes=5)


def test_group_apply_runs_a_sub_query_per_group() -> None:
    query = SALES_IN.group_apply(
        lambda e: e.region,
        lambda region: region.where(lambda e: e.amount >= 5).tumbling_window(FIVE).select(
            lambda w: Amount(w.sum(lambda e: e.amount))),
        lambda region, a: RegionTotal(region, a.total))
    result = run(query, "sales", SALES, FLUSH)
    # north [0, 5): 10 + 7 (1 is filtered out); north [5, 10): only 4, filtered out: empty, no
    # output. south [0, 5): 5; south [5, 10): 8 (2 is filtered out)
    assert result.events == [
        sq.Event(m(0), m(5), RegionTotal("north", 17)),
        sq.Event(m(0), m(5), RegionTotal("south", 5)),
        sq.Event(m(5), m(10), RegionTotal("south", 8)),
    ]
    # every group sees the input CTI (9): the tumbling rule pulls it back to 5 for all of them
    live = run(query, "sales", SALES, every_event())
    assert live.events == result.events[:2] and live.final_cti == m(5)


def test_nested_group_apply() -> None:
    def per_shop(region: sq.Stream[Sale]) -> sq.Stream[ShopTotal]:
        return region.group_apply(
            lambda e: e.shop,
            lambda shop: shop.tumbling_window(FIVE).select(lambda w: Amount(w.sum(lambda e: e.amount))),
            lambda shop, a: ShopTotal(shop, a.total))

    query = SALES_IN.group_apply(lambda e: e.region, per_shop, lambda region, s: RegionShopTotal(region, s.shop, s.total))
    result = run(query, "sales", SALES, FLUSH)
    assert result.events == [
        sq.Event(m(0), m(5), RegionShopTotal("north", "n1", 11)),
        sq.Event(m(0), m(5), RegionShopTotal("north", "n2", 7)),
        sq.Event(m(0), m(5), RegionShopTotal("south", "s1", 5)),
        sq.Event(m(5), m(10), RegionShopTotal("north", "n1", 4)),
        sq.Event(m(5), m(10), RegionShopTotal("south", "s1", 2)),
        sq.Event(m(5), m(10), RegionShopTotal("south", "s2", 8)),
    ]
    # the nested form gives what one group_by on the combined key gives
    flat = SALES_IN.group_by(lambda e: e.region + "/" + e.shop).tumbling_window(FIVE).select(
        lambda w: ShopTotal(w.key, w.sum(lambda e: e.amount)))
    assert [(e.start, e.payload.shop, e.payload.total) for e in run(flat, "sales", SALES, FLUSH).events] == [
        (e.start, f"{e.payload.region}/{e.payload.shop}", e.payload.total) for e in result.events]


def test_count_window_cti_is_the_minimum_over_the_groups() -> None:
    pairs = SALES_IN.group_apply(
        lambda e: e.region,
        lambda region: region.count_window(2).select(lambda w: Amount(w.sum(lambda e: e.amount))),
        lambda region, a: RegionTotal(region, a.total))
    result = run(pairs, "sales", SALES, every_event())
    # input CTI 9. north starts 1, 3, 4, 7: {1,3} {3,4} {4,7} stable, {7, ...} unfilled: 7.
    # south starts 2, 6, 9: {2,6} stable, {6,9} has its last start at the CTI: 6. Minimum: 6.
    assert result.final_cti == m(6)
    assert result.events == [
        sq.Event(m(1), m(3) + TICK, RegionTotal("north", 17)),
        sq.Event(m(2), m(6) + TICK, RegionTotal("south", 7)),
        sq.Event(m(3), m(4) + TICK, RegionTotal("north", 8)),
        sq.Event(m(4), m(7) + TICK, RegionTotal("north", 5)),
    ]
    # group_by gives the same windows and the same minimum
    grouped = SALES_IN.group_by(lambda e: e.region).count_window(2).select(
        lambda w: RegionTotal(w.key, w.sum(lambda e: e.amount)))
    by = run(grouped, "sales", SALES, every_event())
    assert by.events == result.events and by.final_cti == m(6)
    # with the final CTI at INFINITY, south's {6, 9} is released; the CTI stays INFINITY
    flushed = run(pairs, "sales", SALES, every_event(flush=True))
    assert flushed.events[-1] == sq.Event(m(6), m(9) + TICK, RegionTotal("south", 10))
    assert flushed.final_cti == INF


def test_group_apply_cti_of_a_group_without_events() -> None:
    # no group at all: the sub-query's rule applied to the input CTI (a CTI row at 12:07) alone
    pairs = SALES_IN.group_apply(
        lambda e: e.region, lambda region: region.tumbling_window(FIVE).select(lambda w: Amount(w.count())),
        lambda region, a: RegionTotal(region, a.total))
    result = run(pairs, "sales", [sq.Cti(m(7))])
    assert result.events == [] and result.final_cti == m(5)


# --- events that never end -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Session:
    user: str


@dataclasses.dataclass(frozen=True)
class Count:
    n: int


@dataclasses.dataclass(frozen=True)
class UserCount:
    user: str
    n: int


SESSIONS_IN = sq.input("sessions", Session, shape=sq.Shape.EDGE)
SESSIONS: list[InputItem[Any]] = [sq.StartEdge(m(1), Session("ann")), sq.StartEdge(m(3), Session("bob")),
                                  sq.EndEdge(m(3), m(12), Session("bob"))]


def test_windows_over_events_that_never_end_stop_at_the_horizon() -> None:
    online = SESSIONS_IN.tumbling_window(FIVE).select(lambda w: Count(w.count()))
    result = run(online, "sessions", SESSIONS, FLUSH)
    # ann never ends; the greatest finite time seen is bob's end, 12: windows up to the one
    # starting at or before 12, [10, 15)
    assert result.events == [sq.Event(m(0), m(5), Count(2)), sq.Event(m(5), m(10), Count(2)),
                             sq.Event(m(10), m(15), Count(2))]
    # a finite CTI counts too: with a CTI row at 20, up to [20, 25)
    further = run(online, "sessions", [*SESSIONS, sq.Cti(m(20))], FLUSH)
    assert [(e.start, e.payload.n) for e in further.events] == [
        (m(0), 2), (m(5), 2), (m(10), 2), (m(15), 1), (m(20), 1)]
    # a snapshot needs no horizon: its last interval ends at INFINITY
    snapshot = SESSIONS_IN.snapshot_window().select(lambda w: Count(w.count()))
    assert run(snapshot, "sessions", SESSIONS, FLUSH).events == [
        sq.Event(m(1), m(3), Count(1)), sq.Event(m(3), m(12), Count(2)), sq.Event(m(12), INF, Count(1))]


def test_horizon_per_group_in_group_apply_and_over_the_input_for_group_by() -> None:
    by_user = SESSIONS_IN.group_by(lambda e: e.user).tumbling_window(FIVE).select(
        lambda w: UserCount(w.key, w.count()))
    per_user = SESSIONS_IN.group_apply(
        lambda e: e.user, lambda user: user.tumbling_window(FIVE).select(lambda w: Count(w.count())),
        lambda user, c: UserCount(user, c.n))
    # group_by: ann's windows reach the whole input's horizon, 12
    assert [(e.start, e.payload.user) for e in run(by_user, "sessions", SESSIONS, FLUSH).events] == [
        (m(0), "ann"), (m(0), "bob"), (m(5), "ann"), (m(5), "bob"), (m(10), "ann"), (m(10), "bob")]
    # group_apply: ann's group has seen only her start, 1
    assert [(e.start, e.payload.user) for e in run(per_user, "sessions", SESSIONS, FLUSH).events] == [
        (m(0), "ann"), (m(0), "bob"), (m(5), "bob"), (m(10), "bob")]
    # a finite CTI is seen by every group
    assert [(e.start, e.payload.user) for e in run(per_user, "sessions", [*SESSIONS, sq.Cti(m(10))], FLUSH).events] == [
        (m(0), "ann"), (m(0), "bob"), (m(5), "ann"), (m(5), "bob"), (m(10), "ann"), (m(10), "bob")]


# --- stability of derived events -----------------------------------------------------------------


def test_unstable_window_starting_at_the_cti_makes_no_stable_boundary() -> None:
    counts = VALUES.tumbling_window(timedelta(minutes=10)).select(lambda w: Count(w.count()))
    stretched = counts.alter_duration(timedelta(minutes=15))
    query = stretched.snapshot_window().select(lambda w: Count(w.sum(lambda e: e.n)))
    items: list[InputItem[Any]] = [sq.Insert(m(0), m(1), Value("a", 1)), sq.Insert(m(12), m(13), Value("b", 1)),
                                   sq.Cti(m(15))]
    # the windows [0, 10) and [10, 20) count 1 each; the input CTI 15 pulls the output CTI back
    # to 10, and [10, 20) is not stable. Stretched: [0, 15) and [10, 25). The snapshot [0, 10)
    # ends at its CTI, 10, where [10, 25) starts — but that start is not yet stable, so the
    # interval waits; its start and payload are final, so POINT output releases it.
    assert run(query, "values", items).events == []
    assert run(query, "values", items, output=sq.Shape.POINT).events == [sq.Event(m(0), m(0) + TICK, Count(1))]
    # with the CTI at 20, [10, 20) is stable: [0, 10) and [10, 15) are released, [15, 25) waits
    items[-1] = sq.Cti(m(20))
    assert run(query, "values", items).events == [sq.Event(m(0), m(10), Count(1)), sq.Event(m(10), m(15), Count(2))]


# --- user-defined aggregates ---------------------------------------------------------------------


class Calls(sq.UserAggregate[Optional[int], list[str], str]):
    """The add calls in order, as 'value@start-end' with times as minutes past 12:00."""

    result_type = str

    def zero(self) -> list[str]:
        return []

    def add(self, acc: list[str], value: Optional[int], start: datetime, end: datetime) -> list[str]:
        return [*acc, f"{value}@{_minutes(start)}-{_minutes(end)}"]

    def result(self, acc: list[str]) -> str:
        return " ".join(acc)


def _minutes(time: datetime) -> str:
    minutes = (time - m(0)) / MINUTE
    return str(int(minutes)) if minutes == int(minutes) else f"{minutes:.6f}"


class TimeWeightedAverage(sq.UserAggregate[float, tuple[float, float], Optional[float]]):
    result_type = Optional[float]

    def zero(self) -> tuple[float, float]:
        return (0.0, 0.0)

    def add(self, acc: tuple[float, float], value: float, start: datetime, end: datetime) -> tuple[float, float]:
        seconds = (end - start).total_seconds()
        return (acc[0] + value * seconds, acc[1] + seconds)

    def result(self, acc: tuple[float, float]) -> Optional[float]:
        return acc[0] / acc[1] if acc[1] else None


@dataclasses.dataclass(frozen=True)
class Reading:
    value: Optional[int]


@dataclasses.dataclass(frozen=True)
class Folded:
    calls: str
    weighted: Optional[float]


READINGS_IN = sq.input("readings", Reading, shape=sq.Shape.INTERVAL)
FOLDED = READINGS_IN.tumbling_window(timedelta(minutes=10)).select(lambda w: Folded(
    calls=w.aggregate(Calls(), lambda e: e.value),
    weighted=w.aggregate(TimeWeightedAverage(), lambda e: sq.coalesce(e.value, 0) * 1.0)))
READINGS: list[InputItem[Any]] = [sq.Insert(m(5), m(25), Reading(3)), sq.Insert(m(0), m(10), Reading(None)),
                                  sq.Insert(m(0), m(10), Reading(1)), sq.Insert(m(0), m(5), Reading(2))]


def test_user_aggregate_sees_clipped_lifetimes_in_order() -> None:
    result = run(FOLDED, "readings", READINGS, FLUSH)
    # [0, 10): by (start, end, value nulls first): 2 [0, 5), null [0, 10), 1 [0, 10), then 3
    # clipped to [5, 10). Time-weighted (null as 0): (2*5 + 0*10 + 1*10 + 3*5) / 30 = 35/30.
    # 3 [5, 25) reaches into [10, 20) and [20, 30), clipped to each.
    assert result.events == [
        sq.Event(m(0), m(10), Folded("2@0-5 None@0-10 1@0-10 3@5-10", 35 / 30)),
        sq.Event(m(10), m(20), Folded("3@10-20", 3.0)),
        sq.Event(m(20), m(30), Folded("3@20-25", 3.0)),
    ]


def test_user_aggregate_in_snapshot_and_count_windows() -> None:
    snapshot = READINGS_IN.snapshot_window().select(lambda w: Folded(w.aggregate(Calls(), lambda e: e.value), None))
    # snapshot members are clipped to the snapshot interval, and ordered by the clipped
    # lifetimes: in [0, 5) all three are [0, 5), so only the values order them (null first)
    assert [e.payload.calls for e in run(snapshot, "readings", READINGS, FLUSH).events] == [
        "None@0-5 1@0-5 2@0-5", "None@5-10 1@5-10 3@5-10", "3@10-25"]
    counted = READINGS_IN.count_window(2).select(lambda w: Folded(w.aggregate(Calls(), lambda e: e.value), None))
    # starts 0 and 5: one window [0, 5 + t); each member is clipped to it
    assert [(e.start, e.end, e.payload.calls) for e in run(counted, "readings", READINGS, FLUSH).events] == [
        (m(0), m(5) + TICK, "2@0-5 None@0-5.000000 1@0-5.000000 3@5-5.000000")]


@dataclasses.dataclass(frozen=True)
class Spread:
    spread: float


def test_composed_built_ins_as_a_plain_function() -> None:
    def spread(w: sq.Window[T], f: Callable[[T], float]) -> float:
        return w.max(f) - w.min(f)

    query = MINUTELY.select(lambda w: Spread(spread(w, lambda e: e.price)))
    assert [e.payload.spread for e in run(query, "trades", TRADES, FLUSH).events] == [0.75, 0.0]


# --- errors ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Priced:
    name: str
    qty: int
    price: Decimal


@dataclasses.dataclass(frozen=True)
class Out:
    x: float


@dataclasses.dataclass(frozen=True)
class Fees:
    total: Decimal


PRICED = sq.input("priced", Priced)


def test_key_on_an_ungrouped_window_is_an_error() -> None:
    with pytest.raises(sq.ExpressionError, match=r"w\.key exists on grouped windows only: group_by\(\.\.\.\)"):
        PRICED.snapshot_window().select(lambda w: Out(w.key))  # type: ignore[attr-defined]  # mypy says so too


def test_sum_of_a_string_is_an_error() -> None:
    with pytest.raises(sq.ExpressionError, match=r"w\.sum needs numbers \(int, float, Decimal\), got str \(e\.name\)"):
        PRICED.tumbling_window(MINUTE).select(lambda w: Out(w.sum(lambda e: e.name)))  # type: ignore[type-var, arg-type]


def test_avg_of_a_decimal_is_refused() -> None:
    with pytest.raises(sq.ExpressionError, match=r"w\.avg of Decimal \(e\.price\) is not offered: the quotient's scale"):
        PRICED.tumbling_window(MINUTE).select(lambda w: Out(w.avg(lambda e: e.price)))  # type: ignore[type-var, arg-type]
    # the sum of Decimals is fine, and stays a Decimal
    fees = PRICED.tumbling_window(MINUTE).select(lambda w: Fees(w.sum(lambda e: e.price)))
    result = run(fees, "priced", [point(m(0, 1), Priced("a", 1, Decimal("0.10"))),
                                  point(m(0, 2), Priced("b", 2, Decimal("0.25")))], FLUSH)
    assert result.events == [sq.Event(m(0), m(1), Fees(Decimal("0.35")))]


@pytest.mark.parametrize("build, message", [
    (lambda: PRICED.hopping_window(timedelta(0), MINUTE), "hopping_window: size must be positive, got 0:00:00"),
    (lambda: PRICED.hopping_window(MINUTE, -MINUTE), "hopping_window: hop must be positive"),
    (lambda: PRICED.tumbling_window(timedelta(seconds=-1)), "tumbling_window: size must be positive"),
    (lambda: PRICED.group_by(lambda e: e.name).tumbling_window(timedelta(0)), "tumbling_window: size must be positive"),
    (lambda: PRICED.count_window(0), "count_window needs a positive int, got 0"),
    (lambda: PRICED.count_window(-2), "count_window needs a positive int, got -2"),
    (lambda: PRICED.group_by(lambda e: e.name).count_window(0), "count_window needs a positive int, got 0"),
])
def test_non_positive_window_sizes_are_errors(build: Any, message: str) -> None:
    with pytest.raises(sq.ExpressionError) as raised:
        build()
    assert message in str(raised.value)


def test_select_must_build_a_payload() -> None:
    with pytest.raises(sq.ExpressionError, match=r"snapshot window select must build a payload instance .* got int \(w\.count\(\)\)"):
        PRICED.snapshot_window().select(lambda w: w.count())  # type: ignore[type-var]
    with pytest.raises(sq.ExpressionError, match=r"grouped .* window select must build a payload instance .* got str \(key\)"):
        PRICED.group_by(lambda e: e.name).tumbling_window(MINUTE).select(lambda w: w.key)  # type: ignore[type-var]
    with pytest.raises(sq.ExpressionError, match="returned the plain Python value 3 instead of an expression"):
        PRICED.snapshot_window().select(lambda w: 3)  # type: ignore[type-var]


def test_other_window_mistakes() -> None:
    with pytest.raises(sq.ExpressionError, match=r"a window has no attribute 'total'; its aggregates are count, sum"):
        PRICED.snapshot_window().select(lambda w: Out(w.total))  # type: ignore[attr-defined]
    with pytest.raises(sq.ExpressionError, match=r"w\.min aggregates scalar values, not the payload Priced"):
        PRICED.snapshot_window().select(lambda w: Out(w.min(lambda e: e)))  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match=r"w\.aggregate needs a sq\.UserAggregate instance"):
        PRICED.snapshot_window().select(lambda w: Out(w.aggregate(3, lambda e: e.qty)))  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match=r"group_apply's apply reads the input\(s\) priced"):
        PRICED.group_apply(lambda e: e.name, lambda s: PRICED, lambda k, p: Out(1.0))
    with pytest.raises(sq.ExpressionError, match="group_apply's result must build a payload instance"):
        PRICED.group_apply(lambda e: e.name, lambda s: s, lambda k, p: k)  # type: ignore[type-var]


def test_user_aggregate_without_result_type_is_an_error() -> None:
    class NoResultType(sq.UserAggregate[int, int, int]):
        def zero(self) -> int:
            return 0

        def add(self, acc: int, value: int, start: datetime, end: datetime) -> int:
            return acc + value

        def result(self, acc: int) -> int:
            return acc

    with pytest.raises(sq.ExpressionError, match=r"NoResultType must declare result_type \(e\.g\. `result_type = float`\)"):
        PRICED.snapshot_window().select(lambda w: Out(w.aggregate(NoResultType(), lambda e: e.qty)))
