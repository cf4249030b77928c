"""Property tests for session windows on Spark: random inputs (points, intervals, events that never
end, edges with late, missing and unmatched end edges; in storage order or shuffled with an arrival
column), advance-time settings, pipelines before the window, gaps and maximum durations; ungrouped,
grouped (by a nullable key too), inside ``group_apply`` (and grouped there: two key columns); every
aggregate (a user-defined one over clipped lifetimes too) and every output shape give identical
Results on Spark and in the reference evaluator (the specification). Ungrouped windows over many
ranges of the timeline, where sessions cross range borders, are in test_session_windows_on_spark.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.frames import bind, frame
from support.depth import spark_examples
from support.must_release import check_release
from support.streams import (P, SPARK_EXAMPLES, advance_settings, build, edge_items, inputs, pipelines, side_by_side,
                             TimeWeighted, us)


@dataclass(frozen=True)
class Visit:
    key: int
    n: int
    total: Optional[int]
    mean: Optional[float]
    low: Optional[int]
    high: Optional[str]


@dataclass(frozen=True)
class Spent:
    n: int
    weighted: Optional[float]


SELECTS: list[Callable[[sq.Window[P]], Any]] = [
    lambda w: Visit(0, w.count(), w.sum(lambda e: e.v), w.avg(lambda e: e.o), w.min(lambda e: e.o),
                    w.max(lambda e: e.s)),
    lambda w: Spent(w.count(), w.aggregate(TimeWeighted(), lambda e: e.o)),
    lambda w: Spent(3, None),  # no aggregate: one event per session all the same
]
KEYED: list[Callable[[sq.GroupWindow[int, P]], Any]] = [
    lambda w: Visit(w.key, w.count(), w.sum(lambda e: e.o), w.avg(lambda e: e.v), w.max(lambda e: e.v),
                    w.min(lambda e: e.s)),
    lambda w: Visit(w.key, w.key * 2, None, None, None, None),  # the key only
]


@st.composite
def session_queries(draw: st.DrawFn, source: sq.Stream[P]) -> sq.Stream[Any]:
    q = build(source, draw(pipelines(), label="pipeline"))
    gap = us(draw(st.integers(1, 25), label="gap"))
    longest = draw(st.one_of(st.none(), st.integers(1, 40)), label="max_duration")
    max_duration = None if longest is None else us(longest)
    style = draw(st.sampled_from(["window", "grouped", "nullable key", "group_apply", "grouped in group_apply"]),
                 label="style")
    if style == "grouped":
        keyed = KEYED[draw(st.integers(0, len(KEYED) - 1), label="select")]
        return q.group_by(lambda e: e.k % 3).session_window(gap, max_duration).select(keyed)
    if style == "nullable key":  # null is a group of its own
        return q.group_by(lambda e: e.o).session_window(gap, max_duration).select(
            lambda w: Visit(sq.coalesce(w.key, -1), w.count(), w.sum(lambda e: e.v), None, None, None))
    if style == "grouped in group_apply":  # two key columns
        return q.group_apply(lambda e: e.k % 2, lambda s: s.group_by(lambda e: e.v % 2).session_window(
            gap, max_duration).select(KEYED[0]), lambda key, a: Visit(key * 10 + a.key, a.n, a.total, None, None, a.high))
    select = SELECTS[draw(st.integers(0, len(SELECTS) - 1), label="select")]
    if style == "window":
        return q.session_window(gap, max_duration).select(select)
    return q.group_apply(lambda e: e.k % 2, lambda s: s.session_window(gap, max_duration).select(SELECTS[1]),
                         lambda key, a: Visit(key, a.n, None, a.weighted, None, None))


def check(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL, sq.Shape.EDGE]), label="shape")
    if shape is sq.Shape.EDGE:  # late, missing and unmatched end edges: bad rows dropped
        items = data.draw(side_by_side(edge_items()), label="items")
    else:
        items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    bad_rows: Literal["error", "drop"] = "drop" if shape is sq.Shape.EDGE else "error"
    at = data.draw(advance_settings(), label="settings")
    source = sq.input("in", P, shape)
    q = data.draw(session_queries(source), label="query")
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    partitions = data.draw(st.integers(1, 3), label="partitions")
    # an arrival column (rows shuffled, only it gives the order), or storage order
    arrival = data.draw(st.booleans(), label="arrival column")
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at, bad_rows)}, output=output)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    df = frame(spark, P, shape, items, partitions=partitions, arrival=arrival, seed=len(items))
    actual = bind(sq.Binder(spark), source, df, shape, at, arrival=arrival, bad_rows=bad_rows).run(q, output=output)
    assert actual == expected
    check_release(q, {"in": sq.reference.ReferenceInput(items, at, bad_rows)}, output, expected)


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_session_windows_on_spark_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    check(spark, data)


# --- operators after a session or count window inside group_apply ---------------------------------

def _summary(w: sq.Window[P]) -> P:
    return P(w.count(), sq.coalesce(w.sum(lambda e: e.v), 0), "w", w.max(lambda e: e.o))


@st.composite
def flushing_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 3)),
                                                           delay=us(draw(st.sampled_from([0, 3]))), flush=True),
                                  policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


@st.composite
def after_windows_in_group_apply(draw: st.DrawFn, source: sq.Stream[P]) -> sq.Stream[P]:
    """``group_apply`` whose sub-query is a session or count window followed by another operator: a
    snapshot or tumbling window, a where, a join or an anti-join with the group's own events (whose
    CTI is the group's input CTI, not the window's), or an operator that moves the group's CTI
    (``shift``, ``alter_lifetime``, ``time_batch``) and a window that reads it."""
    q = build(source, draw(pipelines(), label="pipeline"))
    window = draw(st.sampled_from(["session", "count"]), label="window")
    gap = us(draw(st.integers(1, 20), label="gap"))
    longest = draw(st.one_of(st.none(), st.integers(1, 30)), label="max_duration")
    n = draw(st.integers(1, 3), label="count")
    after = draw(st.sampled_from(["snapshot", "tumbling", "where", "join", "anti_join", "shift", "alter_lifetime",
                                  "time_batch"]), label="after")
    shift = us(draw(st.integers(-10, 10), label="shift"))

    def apply(s: sq.Stream[P]) -> sq.Stream[P]:
        windowed = (s.session_window(gap, None if longest is None else us(longest)) if window == "session"
                    else s.count_window(n)).select(_summary)
        if after == "snapshot":
            return windowed.snapshot_window().select(_summary)
        if after == "tumbling":
            return windowed.tumbling_window(us(10)).select(_summary)
        if after == "where":
            return windowed.where(lambda e: e.k > 1)
        if after == "shift":
            return windowed.shift(shift).snapshot_window().select(_summary)
        if after == "alter_lifetime":
            return windowed.alter_lifetime(shift, us(4)).tumbling_window(us(10)).select(_summary)
        if after == "time_batch":
            return windowed.time_batch(us(7)).snapshot_window().select(_summary)
        if after == "join":
            return windowed.join(s.shift(shift), lambda l, r: l.v >= r.v, lambda l, r: P(l.k, r.v, r.s, l.o))
        return windowed.anti_join(s.shift(shift), lambda l, r: l.k == r.k)

    return q.group_apply(lambda e: e.k % 2, apply, lambda key, e: P(key, e.k, e.s, e.v))


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_operators_after_windows_in_group_apply_on_spark_equal_reference(spark: SparkSession,
                                                                         data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    # mostly CTIs after every few events and a flush (else any settings): most examples release
    at = data.draw(st.one_of(flushing_settings(), advance_settings()), label="settings")
    source = sq.input("in", P, shape)
    q = data.draw(after_windows_in_group_apply(source), label="query")
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)}, output=output)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    df = frame(spark, P, shape, items, partitions=data.draw(st.integers(1, 3), label="partitions"))
    actual = bind(sq.Binder(spark), source, df, shape, at).run(q, output=output)
    assert actual == expected
