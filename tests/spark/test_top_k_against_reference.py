"""Top-k per window on Spark: the hand-worked cases (support/top_k_cases.py), and a property test
giving identical Results on Spark and in the reference evaluator over random inputs, pipelines,
every window kind (snapshot, hopping, tumbling, count, session with and without a maximum),
grouped, ungrouped and inside ``group_apply``, with ties, nulls and both directions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.reference import ReferenceInput

from support.depth import spark_examples, tiered
from support.frames import bind, frame
from support.must_release import check_release
from support.plans import assert_distributed, physical_plan
from support.streams import P, SPARK_EXAMPLES, build, inputs, pipelines, side_by_side, us
from support.top_k_cases import CASES, Case, Reading


def check_cases(spark: SparkSession, cases: list[Case]) -> None:
    for case in cases:
        shape = sq.Shape.INTERVAL if case.input == "readings" else sq.Shape.POINT
        source = sq.input(case.input, Reading, shape)
        df = frame(spark, Reading, shape, case.items, partitions=2)
        result = bind(sq.Binder(spark), source, df, shape, case.settings).run(case.query)
        assert sorted(result.events, key=repr) == sorted(case.events(), key=repr), case.name
        assert result.final_cti == case.final_cti, case.name


#: the default tier's share: snapshot windows, ties at k, nulls, grouped hopping windows, a partial release
DEFAULT_CASES = ["snapshot top 3", "ties, k=2, descending", "nulls last, k=2, ascending", "top 3 meters per hour",
                 "a CTI releases the windows it reaches"]


def test_hand_worked_cases_on_spark(spark: SparkSession) -> None:
    check_cases(spark, [c for c in CASES if c.name in DEFAULT_CASES])
    assert set(DEFAULT_CASES) <= {c.name for c in CASES}


@pytest.mark.slow
def test_the_other_hand_worked_cases_on_spark(spark: SparkSession) -> None:
    check_cases(spark, [c for c in CASES if c.name not in DEFAULT_CASES])


@dataclass(frozen=True)
class Ranked:
    k: int
    v: int
    rank: int
    s: Optional[str]


BYS: list[Callable[[P], Any]] = [lambda e: e.v, lambda e: e.o, lambda e: e.s, lambda e: e.k - e.v]
RANKED: list[Callable[[P, int], Ranked]] = [
    lambda e, rank: Ranked(e.k, e.v, rank, e.s),
    lambda e, rank: Ranked(rank * 10, 0, rank, None),  # reads no field of the event
    lambda e, rank: Ranked(sq.coalesce(e.o, -1), e.v + rank, rank, e.s.upper()),
]


@st.composite
def window_kinds(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["snapshot", "tumbling", "hopping", "count", "session", "session max"]))
    if kind == "tumbling":
        return kind, draw(st.integers(1, 30))
    if kind == "hopping":
        return kind, (draw(st.integers(1, 30)), draw(st.integers(1, 30)))
    if kind == "count":
        return kind, draw(st.integers(1, 4))
    if kind == "session":
        return kind, draw(st.integers(1, 10))
    if kind == "session max":
        return kind, (draw(st.integers(1, 10)), draw(st.integers(1, 15)))
    return kind, None


def windows_of(q: Any, kind: str, arg: Any) -> Any:
    if kind == "tumbling":
        return q.tumbling_window(us(arg))
    if kind == "hopping":
        return q.hopping_window(us(arg[0]), us(arg[1]))
    if kind == "count":
        return q.count_window(arg)
    if kind == "session":
        return q.session_window(us(arg))
    if kind == "session max":
        return q.session_window(us(arg[0]), us(arg[1]))
    return q.snapshot_window()


@st.composite
def mostly_flushed_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings:
    """Mostly flushed, so that most windows are released and compared."""
    generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 3)),
                                          delay=us(draw(st.sampled_from([-1, 0, 3, 10]))),
                                          flush=draw(st.integers(0, 2)) > 0)
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


@st.composite
def top_k_queries(draw: st.DrawFn, source: sq.Stream[P]) -> sq.Stream[Any]:
    q = build(source, draw(pipelines()))
    kind = draw(window_kinds())
    style = draw(st.sampled_from(["window", "grouped", "group_apply"]))
    k, descending = draw(st.integers(1, 4)), draw(st.booleans())
    by, select = draw(st.sampled_from(BYS)), draw(st.sampled_from(RANKED))
    if style == "group_apply":
        def apply(s: sq.Stream[P]) -> sq.Stream[Ranked]:
            result: sq.Stream[Ranked] = windows_of(s, *kind).top_k(k, by, select, descending=descending)
            return result

        return q.group_apply(lambda e: e.k % 2, apply, lambda key, r: Ranked(key, r.v, r.rank, r.s))
    windowed = windows_of(q.group_by(lambda e: e.k % 3) if style == "grouped" else q, *kind)
    result: sq.Stream[Ranked] = windowed.top_k(k, by, select, descending=descending)
    return result


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_top_k_on_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    # some intervals never end: windows over them stop at the horizon once the CTI is INFINITY
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    at = data.draw(mostly_flushed_settings(), label="settings")
    source = sq.input("in", P, shape)
    q = data.draw(top_k_queries(source), label="query")
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    expected = sq.reference.run(q, {"in": ReferenceInput(items, at)}, output=output)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    df = frame(spark, P, shape, items, partitions=data.draw(st.integers(1, 3), label="partitions"))
    actual = bind(sq.Binder(spark), source, df, shape, at).run(q, output=output)
    assert actual == expected
    check_release(q, {"in": ReferenceInput(items, at)}, output, expected)


@dataclass(frozen=True)
class Sample:
    sensor: int
    value: int


@dataclass(frozen=True)
class TopSample:
    sensor: int
    value: int
    rank: int


SAMPLES = sq.input("samples", Sample, shape=sq.Shape.INTERVAL)
SAMPLE_ITEMS = [sq.Insert(7 * k, 7 * k + 3 + k % 11, Sample(k % 4, k % 13)) for k in range(300)]


@pytest.mark.parametrize("kind", tiered(["hopping", "snapshot"], deep={"snapshot"}))
def test_ungrouped_top_k_is_distributed_and_equals_reference(spark: SparkSession, kind: str) -> None:
    """An ungrouped window's members are ranked where they are gathered: no plan collapses the data
    into one partition, and the result over four partitions is the reference evaluator's."""
    windowed = (SAMPLES.hopping_window(us(40), us(15)) if kind == "hopping" else SAMPLES.snapshot_window())
    q = windowed.top_k(2, lambda e: e.value, lambda e, rank: TopSample(e.sensor, e.value, rank))
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
    binder = bind(sq.Binder(spark), SAMPLES, frame(spark, Sample, sq.Shape.INTERVAL, SAMPLE_ITEMS, partitions=4),
                  sq.Shape.INTERVAL, at)
    expected = sq.reference.run(q, {"samples": ReferenceInput(SAMPLE_ITEMS, at)})
    df = binder.to_dataframe(q)
    assert len(expected.events) > 100
    assert binder.run(q) == expected
    assert_distributed(physical_plan(df), of=f"the {kind} top_k")
