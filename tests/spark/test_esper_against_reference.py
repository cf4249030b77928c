"""The Esper-style lifetimes on Spark — ``keep_last``, ``time_batch``, ``length_batch`` — against the
reference evaluator (the specification): property tests over crowded start times and payloads,
the seed's Withdrawal examples worked by hand (seed 003, Esper's processing model), and the plans
of ungrouped operators (docs/architecture.md#rules-of-execution-on-spark: no single partition)."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from support.depth import spark_examples, tiered
from support.frames import bind, frame
from support.must_release import check_release
from support.plans import assert_distributed, physical_plan
from support.seeds import every_event
from support.streams import P, build, crowded_inputs, pipelines, side_by_side, Tied, tied_payloads, us

EsperOp = tuple[str, int]


@dataclass(frozen=True)
class Total:
    n: int
    total: Optional[int]


def apply_op(q: sq.Stream[Any], op: EsperOp) -> sq.Stream[Any]:
    kind, arg = op
    if kind == "keep_last":
        return q.keep_last(arg)
    if kind == "length_batch":
        return q.length_batch(arg)
    return q.time_batch(us(arg))


@st.composite
def esper_ops(draw: st.DrawFn) -> EsperOp:
    kind = draw(st.sampled_from(["keep_last", "keep_last", "length_batch", "length_batch", "time_batch"]))
    return kind, draw(st.integers(1, 4)) if kind != "time_batch" else draw(st.integers(1, 25))


def grouped_op(q: sq.Stream[P], op: EsperOp) -> sq.Stream[P]:
    """``op`` inside ``group_apply`` by ``k % 2``; the key goes back into the payload."""
    def apply(s: sq.Stream[P]) -> sq.Stream[P]:
        return apply_op(s, op)
    return q.group_apply(lambda e: e.k % 2, apply, lambda key, e: P(key * 10 + e.k, e.v, e.s, e.o))


def window_after(q: sq.Stream[P], kind: str) -> sq.Stream[Any]:
    def total(w: sq.Window[P]) -> Total:
        return Total(w.count(), w.sum(lambda e: e.v))
    if kind == "snapshot":
        return q.snapshot_window().select(total)
    if kind == "count":
        return q.count_window(2).select(total)
    return q.tumbling_window(us(10)).select(total)


@st.composite
def esper_queries(draw: st.DrawFn, source: sq.Stream[P]) -> sq.Stream[Any]:
    """A pipeline, one or two Esper-style operators (each maybe inside ``group_apply``), then maybe
    a pipeline or a window."""
    q = build(source, draw(pipelines()))
    for _ in range(1 if draw(st.integers(0, 4)) else 2):
        op = draw(esper_ops())
        q = grouped_op(q, op) if draw(st.integers(0, 2)) == 0 else apply_op(q, op)
    after = draw(st.sampled_from(["none", "none", "none", "pipeline", "snapshot", "count", "tumbling"]))
    if after == "pipeline":
        return build(q, draw(pipelines()))
    if after == "none":
        return q
    return window_after(q, after)


@st.composite
def half_flushed_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings | None:
    """Flushed or not, half and half (not flushed, stability decides what is released); rarely none."""
    if draw(st.integers(0, 11)) == 0:
        return None
    delay = us(draw(st.sampled_from([-1, 0, 2, 5])))
    if draw(st.integers(0, 3)) == 0:
        generation = sq.AdvanceTimeGeneration(every=us(draw(st.sampled_from([1, 3, 10]))), delay=delay,
                                              flush=draw(st.booleans()))
    else:
        generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 4)), delay=delay,
                                              flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


def run_both(spark: SparkSession, source: sq.Stream[Any], payload: type[Any], shape: sq.Shape, items: list[Any],
             at: sq.AdvanceTimeSettings | None, q: sq.Stream[Any], output: sq.Shape,
             partitions: int = 3) -> tuple[sq.Result[Any], sq.Result[Any]]:
    """(Spark's Result, the reference's Result) of ``q`` over ``items`` bound as input ``"in"``."""
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)}, output=output)
    check_release(q, {"in": sq.reference.ReferenceInput(items, at)}, output, expected)  # and releases what it must
    df = frame(spark, payload, shape, items, partitions=partitions)
    actual = bind(sq.Binder(spark), source, df, shape, at).run(q, output=output)
    return actual, expected


SLOW_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=spark_examples(14), deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data())
def test_esper_on_spark_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(crowded_inputs(shape)), label="items")
    at = data.draw(half_flushed_settings(), label="settings")
    source = sq.input("in", P, shape)
    q = data.draw(esper_queries(source), label="query")
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    partitions = data.draw(st.integers(1, 3), label="partitions")
    actual, expected = run_both(spark, source, P, shape, items, at, q, output, partitions)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    assert actual == expected


# --- the order among equal starts: nulls first, NaN greatest, nested fields --------------------


def comparable(value: Any) -> Any:
    """A payload (or value) with NaN as a string, so that equal results compare equal."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple(comparable(getattr(value, f.name)) for f in fields(value)))
    return value


def comparable_result(result: sq.Result[Any]) -> tuple[Any, ...]:
    """The Result's contents with NaN comparable, events and edges as sorted multisets (NaN also
    leaves the Result's own order of payloads undecided)."""
    events = sorted(repr((e.start, e.end, comparable(e.payload))) for e in result.events)
    edges = sorted(repr((e.kind, e.time, e.start, comparable(e.payload))) for e in result.edges)
    return events, edges, result.dropped, result.adjusted, result.bad_rows, result.final_cti


@settings(max_examples=spark_examples(8), deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data())
def test_order_among_equal_starts_on_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(crowded_inputs(shape, tied_payloads)), label="items")
    at = data.draw(half_flushed_settings(), label="settings")
    source = sq.input("in", Tied, shape)
    op = (data.draw(st.sampled_from(["keep_last", "length_batch"]), label="op"), data.draw(st.integers(1, 4), label="n"))
    q: sq.Stream[Any] = apply_op(source, op)
    if data.draw(st.booleans(), label="grouped"):
        def apply(s: sq.Stream[Tied]) -> sq.Stream[Tied]:
            return apply_op(s, op)
        q = source.group_apply(lambda e: e.k, apply, lambda key, e: e)
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    actual, expected = run_both(spark, source, Tied, shape, items, at, q, output)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    assert comparable_result(actual) == comparable_result(expected)


@dataclass(frozen=True)
class Reading:
    x: Optional[float]


def test_order_among_equal_starts_is_nulls_first_nan_last(spark: SparkSession) -> None:
    # four events start at 5: in order null, -inf, 1.5, NaN; keep_last(1) ends each at the next
    # one's start, so only the last of them (NaN) lives, until the event at 9
    source = sq.input("in", Reading, shape=sq.Shape.POINT)
    items: list[Any] = [sq.Insert(5, 6, Reading(x)) for x in (float("nan"), 1.5, None, float("-inf"))]
    items.append(sq.Insert(9, 10, Reading(2.0)))
    flushed = every_event(flush=True)
    actual, expected = run_both(spark, source, Reading, sq.Shape.POINT, items, flushed, source.keep_last(1),
                                sq.Shape.INTERVAL)
    assert comparable_result(actual) == comparable_result(expected)
    assert [(e.start, e.end, comparable(e.payload)) for e in actual.events] == [
        (at_micros(5), at_micros(9), ("Reading", ("NaN",))), (at_micros(9), sq.INFINITY, ("Reading", (2.0,)))]


def at_micros(t: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=t)


# --- seed 003: the Withdrawal examples ------------------------------------------------------------


@dataclass(frozen=True)
class Withdrawal:
    account: str
    amount: int


@dataclass(frozen=True)
class Sum:
    mysum: Optional[int]


UTC = timezone.utc
T0 = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# W1 .. W6 arrive over time (the amounts of the seed's diagram are ours: its figures are images)
AMOUNTS = [500, 100, 200, 50, 150, 600]
W = [Withdrawal(f"A{i + 1}", amount) for i, amount in enumerate(AMOUNTS)]
ONE_PER_SECOND: list[InputItem[Withdrawal]] = [sq.Insert(at(i + 1), at(i + 1) + sq.TICK, w) for i, w in enumerate(W)]
WITHDRAWALS = sq.input("in", Withdrawal, shape=sq.Shape.POINT)


def start(t: datetime, w: Any) -> sq.Edge[Any]:
    return sq.Edge(sq.EdgeKind.START, t, t, w)


def end(t: datetime, started: datetime, w: Any) -> sq.Edge[Any]:
    return sq.Edge(sq.EdgeKind.END, t, started, w)


def run_seed(spark: SparkSession, q: sq.Stream[Any], items: list[InputItem[Withdrawal]],
             at_settings: sq.AdvanceTimeSettings) -> sq.Result[Any]:
    """``q``'s edges on Spark (insert stream: START edges; remove stream: END edges), checked
    against the reference evaluator too."""
    actual, expected = run_both(spark, WITHDRAWALS, Withdrawal, sq.Shape.POINT, list(items), at_settings, q,
                                sq.Shape.EDGE, partitions=2)
    assert actual == expected
    return actual


def test_withdrawal_length_window_insert_and_remove_streams(spark: SparkSession) -> None:
    # select * from Withdrawal#length(5): every arrival is inserted; W6 pushes W1 out
    result = run_seed(spark, WITHDRAWALS.keep_last(5), ONE_PER_SECOND, every_event(flush=True))
    assert result.edges == [
        start(at(1), W[0]), start(at(2), W[1]), start(at(3), W[2]), start(at(4), W[3]), start(at(5), W[4]),
        end(at(6), at(1), W[0]), start(at(6), W[5]),
    ]
    assert result.final_cti == sq.INFINITY


def test_withdrawal_length_window_before_the_flush(spark: SparkSession) -> None:
    # a CTI at each arrival's start: W6 starts at the final CTI, so its START edge waits, but W1's
    # removal at that instant is final (W6's start and payload are stable) and is released
    result = run_seed(spark, WITHDRAWALS.keep_last(5), ONE_PER_SECOND, every_event())
    assert result.edges == [
        start(at(1), W[0]), start(at(2), W[1]), start(at(3), W[2]), start(at(4), W[3]), start(at(5), W[4]),
        end(at(6), at(1), W[0]),
    ]
    assert result.final_cti == at(6)


def test_withdrawal_length_window_after_a_filter(spark: SparkSession) -> None:
    # select * from Withdrawal(amount>=200)#length(2): only W1, W3, W6 enter; W6 pushes out W1
    q = WITHDRAWALS.where(lambda w: w.amount >= 200).keep_last(2)
    result = run_seed(spark, q, ONE_PER_SECOND, every_event(flush=True))
    assert result.edges == [start(at(1), W[0]), start(at(3), W[2]), end(at(6), at(1), W[0]), start(at(6), W[5])]


# arrivals within one-second batches: [0, 1) W1 W2, [1, 2) W3, [2, 3) W4 W5, [3, 4) W6
IN_BATCHES: list[InputItem[Withdrawal]] = [
    sq.Insert(at(s), at(s) + sq.TICK, w) for s, w in zip([0.2, 0.5, 1.3, 2.1, 2.8, 3.5], W)]


def test_withdrawal_time_batch(spark: SparkSession) -> None:
    # select account, amount from Withdrawal#time_batch(1 sec): each batch is inserted when it
    # ends and removed when the next one ends
    result = run_seed(spark, WITHDRAWALS.time_batch(timedelta(seconds=1)), IN_BATCHES, every_event(flush=True))
    assert result.edges == [
        start(at(1), W[0]), start(at(1), W[1]),
        end(at(2), at(1), W[0]), end(at(2), at(1), W[1]), start(at(2), W[2]),
        end(at(3), at(2), W[2]), start(at(3), W[3]), start(at(3), W[4]),
        end(at(4), at(3), W[3]), end(at(4), at(3), W[4]), start(at(4), W[5]),
        end(at(5), at(4), W[5]),
    ]


def test_withdrawal_time_batch_sum(spark: SparkSession) -> None:
    # select sum(amount) as mysum from Withdrawal#time_batch(1 sec): the insert stream is each
    # batch's sum when it ends, the remove stream the prior sum
    q = WITHDRAWALS.time_batch(timedelta(seconds=1)).snapshot_window().select(
        lambda w: Sum(w.sum(lambda e: e.amount)))
    result = run_seed(spark, q, IN_BATCHES, every_event(flush=True))
    assert result.edges == [
        start(at(1), Sum(600)),
        end(at(2), at(1), Sum(600)), start(at(2), Sum(200)),
        end(at(3), at(2), Sum(200)), start(at(3), Sum(200)),
        end(at(4), at(3), Sum(200)), start(at(4), Sum(600)),
        end(at(5), at(4), Sum(600)),
    ]


def test_withdrawal_time_batch_waits_for_the_batch_to_end(spark: SparkSession) -> None:
    # without the flush the final CTI is W6's start, 3.5 s: the output CTI is the end of its batch,
    # 4 s; the batch [3, 4) is output at 4 s, not before it
    q = WITHDRAWALS.time_batch(timedelta(seconds=1))
    result = run_seed(spark, q, IN_BATCHES, every_event())
    assert result.final_cti == at(4)
    assert result.edges == [
        start(at(1), W[0]), start(at(1), W[1]),
        end(at(2), at(1), W[0]), end(at(2), at(1), W[1]), start(at(2), W[2]),
        end(at(3), at(2), W[2]), start(at(3), W[3]), start(at(3), W[4]),
        end(at(4), at(3), W[3]), end(at(4), at(3), W[4]),
    ]


def test_withdrawal_length_batch(spark: SparkSession) -> None:
    # select * from Withdrawal#length_batch(3): W1-W3 are inserted when W3 arrives and removed when
    # W6 completes the next batch; W4-W6 are never removed
    result = run_seed(spark, WITHDRAWALS.length_batch(3), ONE_PER_SECOND, every_event(flush=True))
    assert result.edges == [
        start(at(3), W[0]), start(at(3), W[1]), start(at(3), W[2]),
        end(at(6), at(3), W[0]), end(at(6), at(3), W[1]), end(at(6), at(3), W[2]),
        start(at(6), W[3]), start(at(6), W[4]), start(at(6), W[5]),
    ]


# --- distribution (docs/architecture.md#rules-of-execution-on-spark) ------------------------------

SOURCE = sq.input("in", P, shape=sq.Shape.INTERVAL)
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=7, delay=us(4)))
# 400 events, three or four to a start time, payloads tied too, some differing only by end
CROWDED: list[InputItem[P]] = [sq.Insert(5 * (k // 4) - 3 * (k % 3), 5 * (k // 4) + 1 + k % 5,
                                         P(k % 2, (k // 3) % 3, "ab"[k % 2], None if k % 5 == 0 else k % 4))
                               for k in range(400)]


def snapshot_total(w: sq.Window[P]) -> Total:
    return Total(w.count(), w.sum(lambda e: e.v))


PLAN_QUERIES: dict[str, Callable[[], sq.Stream[Any]]] = {
    "keep_last": lambda: SOURCE.keep_last(3),
    "length_batch": lambda: SOURCE.length_batch(4),
    "time_batch": lambda: SOURCE.time_batch(us(20)),
    "keep_last_snapshot": lambda: SOURCE.keep_last(3).snapshot_window().select(snapshot_total),
    "group_apply": lambda: grouped_op(SOURCE, ("length_batch", 3)),
}


def run_crowded(spark: SparkSession, q: sq.Stream[Any]) -> tuple[sq.Result[Any], sq.Result[Any]]:
    return run_both(spark, SOURCE, P, sq.Shape.INTERVAL, list(CROWDED), SETTINGS, q, sq.Shape.EDGE, partitions=4)


@pytest.mark.parametrize("name", sorted(PLAN_QUERIES))
def test_esper_plan_is_distributed(spark: SparkSession, name: str) -> None:
    df = frame(spark, P, sq.Shape.INTERVAL, CROWDED, partitions=4)
    out = bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, SETTINGS).to_dataframe(PLAN_QUERIES[name]())
    assert_distributed(physical_plan(out), of=f"the {name} query")


@pytest.mark.parametrize("ranges", tiered([2, 7], deep={"2"}))
@pytest.mark.parametrize("name", ["keep_last", "length_batch"])
def test_numbering_over_many_ranges_equals_reference(spark: SparkSession, name: str, ranges: int) -> None:
    # the ungrouped numbering cuts the start times into as many ranges as shuffle partitions; with
    # 7 ranges over 100 start times, each range border lies among equal starts
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(ranges))
    try:
        actual, expected = run_crowded(spark, PLAN_QUERIES[name]())
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous or "2")
    assert len(expected.edges) > 300
    assert actual == expected
