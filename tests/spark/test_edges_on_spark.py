"""EDGE inputs on Spark (docs/edges.md; ``Binder.bind(edge=...)``): start edges open events,
end edges close the start edge with their start time and payload, DROP/ADJUST of late start and
end edges, unmatched end edges as bad input, open events, and EDGE output as insert/remove
streams. Hand-worked cases from the seeds, the error paths, the distribution of the plan, and a
property test: random edge inputs give Spark the reference evaluator's Result."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Literal, Optional, Sequence

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.events import InputItem
from streamql.time import from_micros
from streamql.spark.streaming.step import Plan, empty_carried, step
from support.frames import bind, frame
from support.incremental import collected_step
from support.streams import P, advance_settings, build, edge_items, pipelines, side_by_side, us
from support.depth import spark_examples
from support.must_release import check_release
from support.plans import assert_distributed, physical_plan

UTC = timezone.utc
INF = sq.INFINITY
DROP, ADJUST = sq.AdvanceTimePolicy.DROP, sq.AdvanceTimePolicy.ADJUST
#: plan operators that call Python once per event
PYTHON_PER_EVENT = ("BatchEvalPython", "ArrowEvalPython")


@dataclass(frozen=True)
class Signal:
    value: str


SIGNAL = sq.input("signal", Signal, shape=sq.Shape.EDGE)


def t(ss: int) -> datetime:
    """A time on the seeds' day, ``ss`` seconds after 10:00."""
    return datetime(2009, 7, 15, 10, 0, ss, tzinfo=UTC)


def signal_frame(spark: SparkSession, items: Sequence[InputItem[Signal]], partitions: int = 2) -> DataFrame:
    """Edge items as a user would bind them: timestamps, an edge column, a kind column for CTIs."""
    rows: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, sq.Cti):
            rows.append(("CTI", None, item.time, None, None))
        elif isinstance(item, sq.StartEdge):
            rows.append(("INSERT", "START", item.start, None, item.payload.value))
        else:
            assert isinstance(item, sq.EndEdge)
            rows.append(("INSERT", "END", item.start, item.end, item.payload.value))
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions),
                                 "kind string, edge string, start timestamp, end timestamp, value string")


def run_both(spark: SparkSession, items: Sequence[InputItem[Signal]], at: Optional[sq.AdvanceTimeSettings],
             output: sq.Shape = sq.Shape.INTERVAL, bad_rows: Literal["error", "drop"] = "drop",
             partitions: int = 2, query: sq.Stream[Signal] = SIGNAL) -> sq.Result[Signal]:
    """Runs ``query`` (the input itself unless given) on Spark and in the reference evaluator; they
    must agree."""
    binder = sq.Binder(spark).bind(SIGNAL, signal_frame(spark, items, partitions), start="start", end="end",
                                   edge="edge", kind="kind", advance_time=at, bad_rows=bad_rows)
    result = binder.run(query, output=output)
    expected = sq.reference.run(query, {"signal": sq.reference.ReferenceInput(items, at, bad_rows)}, output=output)
    assert result == expected
    return result


def every_event(policy: sq.AdvanceTimePolicy = DROP, flush: bool = False) -> sq.AdvanceTimeSettings:
    """Seed 001: ``new AdvanceTimeGenerationSettings(1, TimeSpan.Zero, flush)``."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=flush), policy=policy)


def policy_only(policy: sq.AdvanceTimePolicy, flush: bool = False) -> sq.AdvanceTimeSettings:
    """A policy whose generation never fires here: the CTIs are the explicit CTI rows."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10_000, flush=flush), policy=policy)


def a(ss: int) -> sq.StartEdge[Signal]:
    return sq.StartEdge(t(ss), Signal("a"))


def ev(start: int, end: Optional[int], value: str) -> sq.Event[Signal]:
    return sq.Event(t(start), INF if end is None else t(end), Signal(value))


def edge(kind: sq.EdgeKind, time: int, start: int, value: str) -> sq.Edge[Signal]:
    return sq.Edge(kind, t(time), t(start), Signal(value))


START, END = sq.EdgeKind.START, sq.EdgeKind.END

# --- seed 000: a quantised analog signal ---------------------------------------------------------

# Seed 000, "Event Models": quantising an analog signal takes, for every new value, an END edge for
# the old value and a START edge for the new one; the last value ('c') has no known end yet.
QUANTISED: list[InputItem[Signal]] = [
    sq.StartEdge(t(1), Signal("a")),
    sq.EndEdge(t(1), t(3), Signal("a")), sq.StartEdge(t(3), Signal("b")),
    sq.EndEdge(t(3), t(5), Signal("b")), sq.StartEdge(t(5), Signal("c")),
    sq.Cti(t(6)),
]


def test_seed_000_signal_interval_output_waits_for_the_end_edges(spark: SparkSession) -> None:
    result = run_both(spark, QUANTISED, None)
    # CTI 10:00:06: a [1, 3) and b [3, 5) are closed and stable; c is open, not released
    assert result.events == [ev(1, 3, "a"), ev(3, 5, "b")]
    assert (result.dropped, result.adjusted, result.bad_rows, result.final_cti) == (0, 0, 0, t(6))


def test_seed_000_signal_point_output_releases_every_start(spark: SparkSession) -> None:
    result = run_both(spark, QUANTISED, None, output=sq.Shape.POINT)
    assert result.events == [sq.Event(t(s), t(s) + sq.TICK, Signal(v)) for s, v in ((1, "a"), (3, "b"), (5, "c"))]


def test_seed_000_signal_edge_output_is_insert_and_remove_streams(spark: SparkSession) -> None:
    result = run_both(spark, QUANTISED, None, output=sq.Shape.EDGE)
    # START edges (the insert stream) for a, b, c; END edges (the remove stream) for a and b only;
    # sorted by time, END before START at equal times
    assert result.edges == [edge(START, 1, 1, "a"), edge(END, 3, 1, "a"), edge(START, 3, 3, "b"),
                            edge(END, 5, 3, "b"), edge(START, 5, 5, "c")]


def test_seed_000_signal_flushed_releases_the_open_value_open_ended(spark: SparkSession) -> None:
    result = run_both(spark, [*QUANTISED[:-1], sq.Cti(INF)], None)
    assert result.events == [ev(1, 3, "a"), ev(3, 5, "b"), ev(5, None, "c")]
    assert result.final_cti == INF
    edges = run_both(spark, [*QUANTISED[:-1], sq.Cti(INF)], None, output=sq.Shape.EDGE).edges
    assert edge(END, 5, 3, "b") in edges and not any(e.kind is END and e.start == t(5) for e in edges)


# --- seed 001: CTIs and edges ---------------------------------------------------------------------

# Seed 001: "edge events ... unordered on timestamps (1, 10, 3, 6, 5, 20)": start edges in order,
# each end edge right after its start edge, so the edge times read 1, 10, 3, 6, 5, 20.
UNORDERED: list[InputItem[Signal]] = [
    a(1), sq.EndEdge(t(1), t(10), Signal("a")),
    sq.StartEdge(t(3), Signal("b")), sq.EndEdge(t(3), t(6), Signal("b")),
    sq.StartEdge(t(5), Signal("c")), sq.EndEdge(t(5), t(20), Signal("c")),
]


def test_seed_001_unordered_edge_times_violate_nothing(spark: SparkSession) -> None:
    result = run_both(spark, UNORDERED, every_event(flush=True))
    # a CTI after every start edge (end edges do not count) at its start: 1, 3, 5; every end edge
    # (10, 6, 20) is at or after the CTI when it arrives: nothing is late
    assert result.events == [ev(1, 10, "a"), ev(3, 6, "b"), ev(5, 20, "c")]
    assert (result.dropped, result.adjusted, result.final_cti) == (0, 0, INF)


def test_seed_001_generation_counts_start_edges_only(spark: SparkSession) -> None:
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2))
    result = run_both(spark, UNORDERED, at)
    # start edges 1 and 3 make two: CTI 3 after b's start edge; c's start edge is the third (no
    # CTI). Counting end edges would have generated CTIs 1, 3 and 5, after every end edge.
    assert result.final_cti == t(3)
    assert result.events == [ev(1, 10, "a")]


@pytest.mark.slow  # the deep tier: the default tier's time (the late end edges' other tests stay)
def test_seed_001_late_end_edge_drop_leaves_the_event_open(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(1), sq.StartEdge(t(8), Signal("b")), sq.EndEdge(t(1), t(5), Signal("a"))]
    result = run_both(spark, items, every_event(DROP))
    # CTI 8 after b: a's end edge at 5 < 8 violates it: ignored (dropped), a stays open
    assert result.events == []
    assert (result.dropped, result.adjusted) == (1, 0)
    assert run_both(spark, items, every_event(DROP), output=sq.Shape.POINT).events == [
        sq.Event(t(1), t(1) + sq.TICK, Signal("a"))]
    flushed = run_both(spark, items, every_event(DROP, flush=True))
    assert flushed.events == [ev(1, None, "a"), ev(8, None, "b")]


def test_seed_001_late_end_edge_adjust_moves_it_to_the_cti(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(1), sq.StartEdge(t(8), Signal("b")), sq.EndEdge(t(1), t(5), Signal("a"))]
    result = run_both(spark, items, every_event(ADJUST, flush=True))
    # a's end 5 < CTI 8 moves to 8: [1, 8), one adjusted event
    assert result.events == [ev(1, 8, "a"), ev(8, None, "b")]
    assert (result.dropped, result.adjusted) == (0, 1)


def test_late_start_edge_drops_its_end_edge_silently(spark: SparkSession) -> None:
    result = run_both(spark, [sq.Cti(t(5)), a(3), sq.EndEdge(t(3), t(8), Signal("a"))], policy_only(DROP, True))
    # the start edge at 3 < CTI 5 is dropped; its end edge goes with it: not a drop, not a bad row
    assert result.events == []
    assert (result.dropped, result.adjusted, result.bad_rows) == (1, 0, 0)


def test_adjusted_start_edge_is_matched_by_its_original_start(spark: SparkSession) -> None:
    result = run_both(spark, [sq.Cti(t(5)), a(3), sq.Cti(t(10)), sq.EndEdge(t(3), t(8), Signal("a"))],
                      policy_only(ADJUST, True))
    # start 3 -> 5, end 8 < CTI 10 -> 10: [5, 10), adjusted once though moved at both ends
    assert result.events == [ev(5, 10, "a")]
    assert (result.dropped, result.adjusted) == (0, 1)


def test_adjustment_that_empties_the_lifetime_counts_as_dropped_only(spark: SparkSession) -> None:
    result = run_both(spark, [sq.Cti(t(5)), a(3), sq.EndEdge(t(3), t(4), Signal("a"))], policy_only(ADJUST, True))
    assert result.events == []
    assert (result.dropped, result.adjusted) == (1, 0)


def test_duplicate_start_edges_close_in_arrival_order(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(1), sq.Cti(t(3)), a(1), sq.EndEdge(t(1), t(5), Signal("a")),
                                      sq.EndEdge(t(1), t(7), Signal("a")), a(1)]
    result = run_both(spark, items, policy_only(ADJUST, True))
    # the first start edge stays at 1, the second moves to 3; the first end edge (5) closes the
    # first, the second (7) the second: [1, 5) and [3, 7). The third start edge (moved to 3)
    # never ends.
    assert result.events == [ev(1, 5, "a"), ev(3, 7, "a"), ev(3, None, "a")]
    assert result.adjusted == 2


def test_end_edge_before_its_start_edge_is_bad_input(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [sq.EndEdge(t(1), t(5), Signal("a")), a(1), sq.Cti(INF)]
    result = run_both(spark, items, None)
    # the end edge finds no open start edge: a bad row; the start edge after it never ends
    assert result.events == [ev(1, None, "a")]
    assert result.bad_rows == 1


def test_end_edge_before_a_start_edge_after_a_dropped_one_goes_with_the_dropped(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [sq.Cti(t(3)), a(1), sq.EndEdge(t(1), t(5), Signal("a")), a(1)]
    result = run_both(spark, items, policy_only(DROP, True))
    # the first start edge is dropped; the end edge goes with it silently (not bad input); the
    # second start edge, also before the CTI, is dropped too
    assert result.events == []
    assert (result.dropped, result.bad_rows) == (2, 0)


# --- decision 6: an end edge that DROP ignores is as if it never arrived ----------------------------


def end_a(start: int, end: int) -> sq.EndEdge[Signal]:
    return sq.EndEdge(t(start), t(end), Signal("a"))


@pytest.mark.slow  # the deep tier: the default tier runs this case as a release case ("an ignored end edge does not close the event")
def test_ignored_end_edge_does_not_close_the_event(spark: SparkSession) -> None:
    # issue 13's example in seconds: S(12), Cti(15), E(12, 14), E(12, 22), Cti(30); no settings (DROP)
    items: list[InputItem[Signal]] = [a(12), sq.Cti(t(15)), end_a(12, 14), end_a(12, 22), sq.Cti(t(30))]
    result = run_both(spark, items, None, bad_rows="error")
    # E(12, 14) ends before the CTI 15: ignored (dropped 1), a stays open; E(12, 22) closes it
    assert result.events == [ev(12, 22, "a")]
    assert (result.dropped, result.adjusted, result.bad_rows, result.final_cti) == (1, 0, 0, t(30))
    assert run_both(spark, items, None, output=sq.Shape.EDGE).edges == [edge(START, 12, 12, "a"),
                                                                         edge(END, 22, 12, "a")]


@pytest.mark.slow  # the deep tier: more cases of the one above (the default tier's time)
def test_every_ignored_end_edge_counts_one(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(12), sq.Cti(t(15)), end_a(12, 13), end_a(12, 14)]
    # both end before the CTI 15: both ignored, and a is still open at the CTI 30
    still_open = run_both(spark, [*items, sq.Cti(t(30))], None)
    assert still_open.events == [] and (still_open.dropped, still_open.bad_rows) == (2, 0)
    closed = run_both(spark, [*items, end_a(12, 22), sq.Cti(t(30))], None)
    assert closed.events == [ev(12, 22, "a")] and closed.dropped == 2
    never_ends = run_both(spark, [*items, sq.Cti(INF)], None)
    assert never_ends.events == [ev(12, None, "a")] and never_ends.dropped == 2


def test_ignored_end_edges_leave_duplicate_start_edges_to_later_end_edges(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(12), a(12), sq.Cti(t(15)), end_a(12, 14), end_a(12, 20), end_a(12, 13),
                                      end_a(12, 25), sq.Cti(t(30))]
    result = run_both(spark, items, None, bad_rows="error", partitions=3)
    # the late ones (14, 13) are ignored; 20 closes the first start edge, 25 the second
    assert result.events == [ev(12, 20, "a"), ev(12, 25, "a")]
    assert (result.dropped, result.bad_rows) == (2, 0)


@pytest.mark.slow  # the deep tier: the default tier checks unmatched end edges in test_unmatched_end_edge_raises_naming_the_input_and_row
def test_late_end_edge_without_an_open_start_edge_is_an_unmatched_end_edge(spark: SparkSession) -> None:
    # a closes at 20; E(12, 14) comes after the CTI 15 and finds no open start edge: not ignored
    # but unmatched (bad input), like any end edge without an open start edge
    items: list[InputItem[Signal]] = [a(12), end_a(12, 20), sq.Cti(t(15)), end_a(12, 14), sq.Cti(t(30))]
    result = run_both(spark, items, None)
    assert result.events == [ev(12, 20, "a")]
    assert (result.dropped, result.bad_rows) == (0, 1)
    binder = sq.Binder(spark).bind(SIGNAL, signal_frame(spark, items), start="start", end="end", edge="edge",
                                   kind="kind")
    with pytest.raises(sq.BadInputError, match=re.escape("bad row (end edge at 2009-07-15 10:00:14+00:00 has no open "
                                                         "start edge at 2009-07-15 10:00:12+00:00")):
        binder.run(SIGNAL)
    alone = run_both(spark, [sq.Cti(t(15)), end_a(12, 14), sq.Cti(INF)], None)
    assert alone.events == [] and (alone.dropped, alone.bad_rows) == (0, 1)


def test_late_end_edge_without_an_open_start_edge_takes_a_dropped_one(spark: SparkSession) -> None:
    # the second start edge comes after the CTI 15: dropped. E(12, 14) finds the first one open:
    # ignored. E(12, 22) closes the first; the second E(12, 14) finds none open and takes the dropped
    # one silently; the third has nothing left: bad input
    items: list[InputItem[Signal]] = [a(12), sq.Cti(t(15)), a(12), end_a(12, 14), end_a(12, 22), end_a(12, 14),
                                      sq.Cti(t(30))]
    result = run_both(spark, items, None, bad_rows="error")
    assert result.events == [ev(12, 22, "a")]
    assert (result.dropped, result.bad_rows) == (2, 0)  # the dropped start edge and the ignored end edge
    extra = run_both(spark, [*items[:-1], end_a(12, 14), sq.Cti(t(30))], None)
    assert extra.events == [ev(12, 22, "a")] and (extra.dropped, extra.bad_rows) == (2, 1)


@pytest.mark.slow  # the deep tier: a hand-worked case of micro-batches (the default tier's time)
def test_ignored_end_edge_counts_in_the_micro_batch_it_arrives_in(spark: SparkSession) -> None:
    micro_batches: list[list[InputItem[Signal]]] = [
        [sq.StartEdge(12, Signal("a")), sq.Cti(15)], [sq.EndEdge(12, 14, Signal("a"))],
        [sq.EndEdge(12, 22, Signal("a")), sq.Cti(30)]]
    first = frame(spark, Signal, sq.Shape.EDGE, micro_batches[0])
    binding = bind(sq.Binder(spark), SIGNAL, first, sq.Shape.EDGE, None).bindings["signal"]
    plan = Plan(SIGNAL.node, {"signal": binding}, (sq.Shape.INTERVAL,))
    carried = empty_carried(plan)
    dropped, open_edges, released = [], [], []
    for batch, items in enumerate(micro_batches):
        outcome = step(spark, plan, carried, {"signal": frame(spark, Signal, sq.Shape.EDGE, items)}, batch)
        now, carried = collected_step(outcome, SIGNAL, sq.Shape.INTERVAL)
        dropped.append(carried.state.dropped)
        open_edges.append(carried.pending["signal"].count())
        released.append(now)
    # the ignored end edge counts when it arrives; the start edge stays pending until E(12, 22)
    assert dropped == [0, 1, 1] and open_edges == [1, 1, 0]
    assert released == [[], [], [sq.Event(from_micros(12), from_micros(22), Signal("a"))]]


# --- a start edge that ADJUST moved to the CTI is not stable while open (issue 13, bug 1) -----------


@pytest.mark.slow  # the deep tier: a hand-worked case of micro-batches (the default tier's time)
def test_start_edge_moved_to_the_cti_is_not_stable_while_open(spark: SparkSession) -> None:
    # ADJUST: S(5, a), Cti(6), S(1, b) moved to 6. keep_last(1) ends a at 6, where b starts — but an
    # end edge at 6 would empty b and remove it, so b's start is not stable, nor is a's end
    moved: list[InputItem[Signal]] = [a(5), sq.Cti(t(6)), sq.StartEdge(t(1), Signal("b"))]
    latest = SIGNAL.keep_last(1)
    result = run_both(spark, moved, policy_only(ADJUST), query=latest)
    assert result.events == [] and (result.adjusted, result.final_cti) == (1, t(6))
    assert run_both(spark, moved, policy_only(ADJUST), output=sq.Shape.EDGE, query=latest).edges == [
        edge(START, 5, 5, "a")]
    # ... and so it is: E(1, 6, b) empties b; a lives on, open — nothing released is withdrawn
    emptied = [*moved, sq.EndEdge(t(1), t(6), Signal("b")), sq.Cti(t(10))]
    result = run_both(spark, emptied, policy_only(ADJUST), query=latest)
    assert result.events == [] and (result.dropped, result.adjusted) == (1, 0)
    assert run_both(spark, emptied, policy_only(ADJUST), output=sq.Shape.EDGE, query=latest).edges == [
        edge(START, 5, 5, "a")]


@pytest.mark.slow  # the deep tier: the default tier's time (tests/spark/test_late_on_spark.py's adjusted start edges stay)
def test_start_edge_moved_to_the_cti_is_stable_once_closed_or_passed(spark: SparkSession) -> None:
    moved: list[InputItem[Signal]] = [a(5), sq.Cti(t(6)), sq.StartEdge(t(1), Signal("b"))]
    latest = SIGNAL.keep_last(1)
    # its end edge accepted: b is [6, 8), stable, so a's [5, 6) is final (b, the last event, stays)
    closed = [*moved, sq.EndEdge(t(1), t(8), Signal("b")), sq.Cti(t(10))]
    result = run_both(spark, closed, policy_only(ADJUST), query=latest)
    assert result.events == [ev(5, 6, "a")] and (result.dropped, result.adjusted) == (0, 1)
    assert run_both(spark, closed, policy_only(ADJUST), output=sq.Shape.EDGE, query=latest).edges == [
        edge(START, 5, 5, "a"), edge(END, 6, 5, "a"), edge(START, 6, 6, "b")]
    # the CTI past 6: b, still open, can no longer be emptied; a's [5, 6) is final
    passed = [*moved, sq.Cti(t(7))]
    assert run_both(spark, passed, policy_only(ADJUST), query=latest).events == [ev(5, 6, "a")]
    assert run_both(spark, passed, policy_only(ADJUST), output=sq.Shape.EDGE, query=latest).edges == [
        edge(START, 5, 5, "a"), edge(END, 6, 5, "a"), edge(START, 6, 6, "b")]


def test_arrival_column_orders_shuffled_edges(spark: SparkSession) -> None:
    items: list[InputItem[P]] = [
        sq.StartEdge(1, P(1, 1, "a", None)), sq.StartEdge(4, P(2, 2, "b", 1)), sq.Cti(4),
        sq.EndEdge(1, 3, P(1, 1, "a", None)), sq.StartEdge(2, P(3, 3, "c", None)),
        sq.EndEdge(4, 9, P(2, 2, "b", 1)), sq.Cti(12),
    ]
    source = sq.input("in", P, sq.Shape.EDGE)
    for policy in (DROP, ADJUST):
        at = policy_only(policy)
        expected = sq.reference.run(source, {"in": sq.reference.ReferenceInput(items, at)}, output=sq.Shape.EDGE)
        df = frame(spark, P, sq.Shape.EDGE, items, partitions=3, arrival=True, seed=4)
        actual = bind(sq.Binder(spark), source, df, sq.Shape.EDGE, at, arrival=True).run(source, sq.Shape.EDGE)
        assert actual == expected
        # DROP: a's end edge (3 < CTI 4) is ignored and c (2 < 4) dropped; ADJUST: a ends at 4, c starts at 4
        assert actual.dropped == (2 if policy is DROP else 0) and actual.adjusted == (0 if policy is DROP else 2)


@pytest.mark.slow  # the deep tier: the default tier's time (tests/spark/test_imports_on_spark.py's imports stay)
def test_edge_input_importing_ctis_and_as_the_cti_source(spark: SparkSession) -> None:
    points = sq.input("data", Signal, shape=sq.Shape.POINT)
    edges = sq.input("edges", Signal, shape=sq.Shape.EDGE)
    every_point = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))
    imports = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("data"), policy=ADJUST)
    data: list[InputItem[Signal]] = [sq.Insert(10, 11, Signal("x")), sq.Insert(20, 21, Signal("y")),
                                     sq.Insert(30, 31, Signal("z"))]
    signal: list[InputItem[Signal]] = [sq.StartEdge(5, Signal("a")), sq.EndEdge(5, 12, Signal("a")),
                                       sq.StartEdge(15, Signal("b")), sq.EndEdge(15, 25, Signal("b"))]
    binder = (bind(sq.Binder(spark), points, frame(spark, Signal, sq.Shape.POINT, data, arrival=True),
                   sq.Shape.POINT, every_point, arrival=True)
              .bind(edges, frame(spark, Signal, sq.Shape.EDGE, signal, arrival=True), start="start", end="end",
                    edge="edge", kind="kind", arrival="arrival", advance_time=imports))
    result = binder.run(edges)
    # one arrival clock: CTIs 10, 20, 30 after the points. b's start 15 < 20 moves to 20 and its
    # end 25 < 30 moves to 30 (one adjusted event); a's end 12 is after CTI 10
    assert result.events == [sq.Event(from_micros(5), from_micros(12), Signal("a")),
                             sq.Event(from_micros(20), from_micros(30), Signal("b"))]
    assert (result.adjusted, result.final_cti) == (1, from_micros(30))
    assert result == sq.reference.run(edges, {"data": sq.reference.ReferenceInput(data, every_point),
                                              "edges": sq.reference.ReferenceInput(signal, imports)})
    # the other way round: the edge input generates the CTIs (start edges count), the points import them
    importer = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("edges"), policy=DROP)
    binder = (bind(sq.Binder(spark), points, frame(spark, Signal, sq.Shape.POINT, data, arrival=True),
                   sq.Shape.POINT, importer, arrival=True)
              .bind(edges, frame(spark, Signal, sq.Shape.EDGE, signal, arrival=True), start="start", end="end",
                    edge="edge", kind="kind", arrival="arrival", advance_time=every_point))
    inputs = {"data": sq.reference.ReferenceInput(data, importer), "edges": sq.reference.ReferenceInput(signal, every_point)}
    result = binder.run(points)
    # CTIs 5 (after a's start edge) and 15 (after b's): no point is late for them; released: start < 15
    assert result.events == [sq.Event(from_micros(10), from_micros(11), Signal("x"))]
    assert result == sq.reference.run(points, inputs)


@dataclass(frozen=True)
class Inner:
    label: str
    level: Optional[float]


@dataclass(frozen=True)
class Rich:
    flag: bool
    x: float
    raw: bytes
    amount: Decimal
    span: timedelta
    id: uuid.UUID
    inner: Optional[Inner]


def test_end_edges_match_payloads_of_every_type_null_safely(spark: SparkSession) -> None:
    one = Rich(True, 1.5, b"ab", Decimal("1.25"), timedelta(seconds=3), uuid.UUID(int=5), Inner("a", None))
    other = Rich(True, 1.5, b"ab", Decimal("1.25"), timedelta(seconds=3), uuid.UUID(int=5), None)
    third = Rich(False, 2.0, b"", Decimal("0"), timedelta(0), uuid.UUID(int=6), Inner("b", 2.0))
    items: list[InputItem[Rich]] = [
        sq.StartEdge(1, one), sq.StartEdge(1, other), sq.StartEdge(2, third),
        sq.EndEdge(1, 5, other), sq.EndEdge(2, 6, third), sq.EndEdge(1, 7, one), sq.Cti(INF)]
    source = sq.input("rich", Rich, sq.Shape.EDGE)
    result = bind(sq.Binder(spark), source, frame(spark, Rich, sq.Shape.EDGE, items), sq.Shape.EDGE, None).run(source)
    # a null nested payload matches a null one only; the two events that start at 1 differ in it
    assert result == sq.reference.run(source, {"rich": sq.reference.ReferenceInput(items)})
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (from_micros(1), from_micros(5), other), (from_micros(1), from_micros(7), one),
        (from_micros(2), from_micros(6), third)]


# --- error paths ---------------------------------------------------------------------------------


def test_unmatched_end_edge_raises_naming_the_input_and_row(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(1), sq.EndEdge(t(1), t(3), Signal("b")), sq.Cti(INF)]
    binder = sq.Binder(spark).bind(SIGNAL, signal_frame(spark, items), start="start", end="end", edge="edge",
                                   kind="kind")
    with pytest.raises(sq.BadInputError) as raised:
        binder.run(SIGNAL)
    message = str(raised.value)
    assert message.startswith("input 'signal': bad row (end edge at 2009-07-15 10:00:03+00:00 has no open start "
                              "edge at 2009-07-15 10:00:01+00:00 with its payload, row {"), message
    assert "'value': 'b'" in message and "bad_rows='drop'" in message
    with pytest.raises(sq.BadInputError, match="input 'signal', item 1: end edge at"):
        sq.reference.run(SIGNAL, {"signal": sq.reference.ReferenceInput(items)})
    dropped = run_both(spark, items, None, bad_rows="drop")
    assert dropped.events == [ev(1, None, "a")]
    assert (dropped.bad_rows, dropped.dropped) == (1, 0)


def test_second_end_edge_of_one_start_edge_is_bad_input(spark: SparkSession) -> None:
    items: list[InputItem[Signal]] = [a(1), sq.EndEdge(t(1), t(3), Signal("a")), sq.EndEdge(t(1), t(4), Signal("a")),
                                      sq.Cti(INF)]
    result = run_both(spark, items, None)
    assert result.events == [ev(1, 3, "a")] and result.bad_rows == 1


def test_unmatched_end_edge_with_an_arrival_column_shows_the_arrival(spark: SparkSession) -> None:
    items: list[InputItem[P]] = [sq.StartEdge(1, P(1, 1, "a", None)), sq.EndEdge(1, 3, P(1, 1, "a", 2))]
    source = sq.input("in", P, sq.Shape.EDGE)
    df = frame(spark, P, sq.Shape.EDGE, items, arrival=True)
    with pytest.raises(sq.BadInputError, match=re.escape("input 'in': bad row (end edge at 1970-01-01 00:00:00.000003"
                                                         "+00:00 has no open start edge at 1970-01-01 "
                                                         "00:00:00.000001+00:00 with its payload, row {'arrival': 1,")):
        bind(sq.Binder(spark), source, df, sq.Shape.EDGE, None, arrival=True).run(source)


@pytest.mark.parametrize("row, reason", [
    (("INSERT", "MIDDLE", t(1), None, "a"), "edge is neither START nor END: MIDDLE"),
    # the deep tier: the same check of another column's value (the default tier's time)
    pytest.param(("INSERT", None, t(1), None, "a"), "edge is neither START nor END: null", marks=pytest.mark.slow),
    (("INSERT", "END", t(1), None, "a"), "end of an end edge is null"),
    pytest.param(("INSERT", "END", t(2), t(2), "a"), "end of an end edge is not after its start",
                 marks=pytest.mark.slow),
])
def test_bad_edge_rows(spark: SparkSession, row: tuple[Any, ...], reason: str) -> None:
    df = spark.createDataFrame([("INSERT", "start", t(0), t(9), "z"), row, ("CTI", None, INF, None, None)],
                               "kind string, edge string, start timestamp, end timestamp, value string")
    binder = sq.Binder(spark).bind(SIGNAL, df, start="start", end="end", edge="edge", kind="kind")
    with pytest.raises(sq.BadInputError, match=re.escape(f"input 'signal': bad row ({reason}")):
        binder.run(SIGNAL)
    result = sq.Binder(spark).bind(SIGNAL, df, start="start", end="end", edge="edge", kind="kind",
                                   bad_rows="drop").run(SIGNAL)
    # the lower-case "start" edge is a start edge (any case), and its end column is ignored: it never ends
    assert result.events == [sq.Event(t(0), INF, Signal("z"))] and result.bad_rows == 1


def test_binding_errors_for_edge_inputs(spark: SparkSession) -> None:
    df = signal_frame(spark, [])
    with pytest.raises(sq.BindingError, match=r"input 'signal' is an EDGE input: bind its edge column .* with edge="):
        sq.Binder(spark).bind(SIGNAL, df, start="start", end="end")
    with pytest.raises(sq.BindingError, match="input 'signal' is an EDGE input: bind the column with the end time "
                                              "its end edges carry with end="):
        sq.Binder(spark).bind(SIGNAL, df, start="start", edge="edge")
    with pytest.raises(sq.BindingError, match="edge column 'edge' must be a string column holding START/END"):
        sq.Binder(spark).bind(SIGNAL, df.withColumn("edge", F.lit(1)), start="start", end="end", edge="edge")
    with pytest.raises(sq.BindingError, match="edge column 'side' is not in the DataFrame"):
        sq.Binder(spark).bind(SIGNAL, df, start="start", end="end", edge="side")
    interval = sq.input("signal", Signal, shape=sq.Shape.INTERVAL)
    with pytest.raises(sq.BindingError, match="is a INTERVAL input: edge= applies to Shape.EDGE inputs only"):
        sq.Binder(spark).bind(interval, df, start="start", end="end", edge="edge")


# --- distribution ----------------------------------------------------------------------------------


def test_plan_matches_end_edges_without_gathering_or_python_per_event(spark: SparkSession) -> None:
    items: list[InputItem[P]] = [sq.StartEdge(s, P(s % 3, s, "a", None)) for s in range(20)]
    items += [sq.EndEdge(s, s + 7, P(s % 3, s, "a", None)) for s in range(0, 20, 2)]
    source = sq.input("in", P, sq.Shape.EDGE)
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, delay=us(2), flush=True), policy=ADJUST)
    for arrival in (False, True):
        df = frame(spark, P, sq.Shape.EDGE, items, partitions=3, arrival=arrival)
        binder = bind(sq.Binder(spark), source, df, sq.Shape.EDGE, at, arrival=arrival)
        out = binder.to_dataframe(source.where(lambda e: e.v > 2))
        plan = physical_plan(out)
        assert_distributed(plan, also=PYTHON_PER_EVENT)
        assert "Window" in plan
        expected = sq.reference.run(source.where(lambda e: e.v > 2), {"in": sq.reference.ReferenceInput(items, at)})
        assert sorted((from_micros(r[0]), r[1]) for r in out.select(F.unix_micros("start"), "v").collect()) == \
            sorted((e.start, e.payload.v) for e in expected.events)


# --- property: Spark == reference -------------------------------------------------------------------


@dataclass(frozen=True)
class Snap:
    n: int
    total: Optional[int]
    low: Optional[str]


def with_snapshot(q: sq.Stream[P], how: int) -> sq.Stream[Any]:
    if how == 1:
        return q.snapshot_window().select(lambda w: Snap(w.count(), w.sum(lambda e: e.v), w.min(lambda e: e.s)))
    if how == 2:
        return q.group_by(lambda e: e.k % 2).snapshot_window().select(
            lambda w: Snap(w.key * 100 + w.count(), w.sum(lambda e: e.o), w.max(lambda e: e.s)))
    return q


@settings(max_examples=spark_examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_edge_inputs_on_spark_equal_the_reference(spark: SparkSession, data: st.DataObject) -> None:
    items = data.draw(side_by_side(edge_items()), label="items")
    at = data.draw(advance_settings(), label="settings")
    ops = data.draw(pipelines(), label="ops")
    snapshot = data.draw(st.sampled_from([0, 0, 1, 2]), label="snapshot")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    arrival = data.draw(st.booleans(), label="arrival column")
    partitions = data.draw(st.integers(1, 4), label="partitions")
    bad_rows: Literal["error", "drop"] = data.draw(st.sampled_from(["drop", "drop", "error"]), label="bad_rows")
    source = sq.input("in", P, sq.Shape.EDGE)
    q = with_snapshot(build(source, ops), snapshot)
    try:
        expected: sq.Result[Any] | None = sq.reference.run(
            q, {"in": sq.reference.ReferenceInput(items, at, bad_rows)}, output=output)
    except sq.BadInputError as error:
        note(f"reference: {error}")
        expected = None
    df = frame(spark, P, sq.Shape.EDGE, items, partitions=partitions, arrival=arrival, seed=len(items))
    binder = bind(sq.Binder(spark), source, df, sq.Shape.EDGE, at, arrival=arrival, bad_rows=bad_rows)
    if expected is None:
        with pytest.raises(sq.BadInputError, match="has no open start edge"):
            binder.run(q, output=output)
        return
    assert binder.run(q, output=output) == expected
    check_release(q, {"in": sq.reference.ReferenceInput(items, at, bad_rows)}, output, expected)
