"""Property tests for windows on Spark: random inputs, advance-time settings, pipelines before the
window, window kinds, grouping, aggregates and chains of windows give identical Results on Spark
and in the reference evaluator (the specification)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.frames import bind, frame
from support.streams import P, TimeWeighted, build, inputs, pipelines, side_by_side, us
from support.depth import spark_examples
from support.must_release import check_release


@dataclass(frozen=True)
class Agg:
    n: int
    total: Optional[int]
    mean: Optional[float]
    low: Optional[int]
    high: Optional[str]


@dataclass(frozen=True)
class KeyedAgg:
    key: int
    n: int
    total: Optional[int]
    mixed: Optional[int]


@dataclass(frozen=True)
class Weighted:
    n: int
    weighted: Optional[float]
    first: Optional[str]


SELECTS: list[Callable[[sq.Window[P]], Any]] = [
    lambda w: Agg(w.count(), w.sum(lambda e: e.v), w.avg(lambda e: e.v), w.min(lambda e: e.o),
                  w.max(lambda e: e.s)),
    lambda w: Agg(w.count() * 10 + 1, w.sum(lambda e: e.o), w.avg(lambda e: e.o), w.max(lambda e: e.k - e.v),
                  w.min(lambda e: e.s.upper())),
    lambda w: Weighted(w.count(), w.aggregate(TimeWeighted(), lambda e: e.o), w.min(lambda e: e.s)),
    # no aggregate at all: one event per non-empty window all the same (and, inside group_apply,
    # the shape of a grouped window that reads only its key)
    lambda w: Agg(7, None, None, None, "const"),
]
KEYED_SELECTS: list[Callable[[sq.GroupWindow[int, P]], KeyedAgg]] = [
    lambda w: KeyedAgg(w.key, w.count(), w.sum(lambda e: e.v * 2), w.max(lambda e: e.o)),
    lambda w: KeyedAgg(w.key * 100, w.count(), w.sum(lambda e: e.o), w.key * 100 + w.count() * 10 + w.sum(lambda e: e.v % 10)),
    lambda w: KeyedAgg(w.key, w.key * 2, None, w.key + 1),  # the key only, no aggregate
]


def window_of(q: sq.Stream[P] | sq.Grouped[int, P], kind: str, arg: Any) -> Any:
    if kind == "tumbling":
        return q.tumbling_window(us(arg))
    if kind == "hopping":
        return q.hopping_window(us(arg[0]), us(arg[1]))
    if kind == "count":
        return q.count_window(arg)
    return q.snapshot_window()


@st.composite
def window_specs(draw: st.DrawFn, snapshot: bool) -> tuple[str, Any]:
    kinds = ["tumbling", "hopping", "count"] + (["snapshot"] if snapshot else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "tumbling":
        return kind, draw(st.integers(1, 30))
    if kind == "hopping":
        return kind, (draw(st.integers(1, 30)), draw(st.integers(1, 30)))
    if kind == "count":
        return kind, draw(st.integers(1, 4))
    return kind, None


def as_p(q: sq.Stream[Any], fields: str) -> sq.Stream[P]:
    """Maps a window's output back to ``P`` so that another window (or pipeline) can follow."""
    if fields == "agg":
        return q.select(lambda a: P(a.n, sq.coalesce(a.total, -1), sq.coalesce(a.high, "?"), a.low))
    if fields == "weighted":
        return q.select(lambda a: P(a.n, 0, sq.coalesce(a.first, "?"), None))
    return q.select(lambda a: P(a.key, a.n, "k", a.total))


def windowed(source: sq.Stream[P], spec: tuple[str, Any], grouped: bool, select: int) -> tuple[sq.Stream[P], sq.Stream[Any]]:
    """The window query, and the same mapped back to ``P``."""
    if grouped:
        keyed = window_of(source.group_by(lambda e: e.k % 3), *spec).select(KEYED_SELECTS[select % len(KEYED_SELECTS)])
        return as_p(keyed, "keyed"), keyed
    out = window_of(source, *spec).select(SELECTS[select % len(SELECTS)])
    return as_p(out, "weighted" if select % len(SELECTS) == 2 else "agg"), out


@st.composite
def window_queries(draw: st.DrawFn, source: sq.Stream[P], snapshot: bool) -> sq.Stream[Any]:
    q = build(source, draw(pipelines()))
    result: sq.Stream[Any] = q
    for depth in range(draw(st.integers(1, 2))):
        style = draw(st.sampled_from(["window", "grouped", "group_apply"]))
        spec = draw(window_specs(snapshot))
        select = draw(st.integers(0, 5))
        if style == "group_apply":
            inner_spec = spec

            def apply(s: sq.Stream[P], inner_spec: tuple[str, Any] = inner_spec, select: int = select) -> sq.Stream[Any]:
                return windowed(s, inner_spec, False, select)[1]

            applied = q.group_apply(lambda e: e.k % 2, apply, lambda key, a: KeyedAgg(key, a.n, None, None))
            q, result = as_p(applied, "keyed"), applied
        else:
            q, result = windowed(q, spec, style == "grouped", select)
        if depth == 0 and draw(st.booleans()):
            q = build(q, draw(pipelines()))
            result = q
    return result


@st.composite
def mostly_flushed_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings:
    """Mostly flushed, so that most windows are released and compared."""
    if draw(st.integers(0, 3)) == 0:
        generation = sq.AdvanceTimeGeneration(every=us(draw(st.sampled_from([1, 5, 20]))), flush=draw(st.booleans()))
    else:
        generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 3)),
                                              delay=us(draw(st.sampled_from([-1, 0, 3, 10]))),
                                              flush=draw(st.integers(0, 2)) > 0)
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


def check(spark: SparkSession, data: st.DataObject, snapshot: bool) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape)), label="items")
    at = data.draw(mostly_flushed_settings(), label="settings")
    source = sq.input("in", P, shape)
    q = data.draw(window_queries(source, snapshot), label="query")
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    partitions = data.draw(st.integers(1, 3), label="partitions")
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)}, output=output)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    df = frame(spark, P, shape, items, partitions=partitions)
    actual = bind(sq.Binder(spark), source, df, shape, at).run(q, output=output)
    assert actual == expected
    check_release(q, {"in": sq.reference.ReferenceInput(items, at)}, output, expected)


@settings(max_examples=spark_examples(18), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_windows_on_spark_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    check(spark, data, snapshot=True)

