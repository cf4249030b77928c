"""A step releases what the release rule releases minus what earlier steps released
(``streamql.spark.streaming.step._released_again``). Every row released before starts before the
run's ``RunState.released_below``, so only the rows starting before it go through the multiset
difference; the rest are released as they are. Checked by hand, against the whole multiset
difference on random rows (hypothesis), and for a checkpoint written before the bound was kept."""
from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from streamql.events import Shape
from streamql.spark.base.columns import CLOSED, END, START
from streamql.spark.operators.release import release
from streamql.spark.streaming.state import InputState, RunState
from streamql.spark.streaming.step import _released_again, _released_below
from streamql.time import INFINITY_MICROS
from support.depth import examples
from support.streams import SPARK_EXAMPLES

SCHEMA = f"{START} long, {END} long, {CLOSED} boolean, k string"
RELEASED = f"{START} long, {END} long, k string"


def candidates(spark: SparkSession, rows: list[tuple[int, int, bool, str]]) -> DataFrame:
    return spark.createDataFrame(rows, SCHEMA)


def rows_of(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in df.collect())


def released_now(spark: SparkSession, rows: list[tuple[int, int, bool, str]], cti: int,
                 before: list[tuple[int, int, str]] | None, below: int | None) -> DataFrame:
    sets = {} if before is None else {Shape.INTERVAL.name: spark.createDataFrame(before, RELEASED)}
    return _released_again(Shape.INTERVAL, candidates(spark, rows), None, cti=cti, payload=["k"], before=sets,
                           below=below)


def test_only_rows_starting_before_the_bound_are_taken_from_what_was_released(spark: SparkSession) -> None:
    rows = [(1, 5, True, "a"), (1, 5, True, "a"), (1, 5, True, "b"),  # two copies of a released row
            (3, 8, False, "a"),  # not closed: the release rule keeps it back
            (5, 7, True, "b"),  # released before, just before the bound
            (6, 9, True, "a"),  # at the bound: new whatever was released
            (7, 9, True, "c"),
            (12, 14, True, "a")]  # at or after the CTI: not released yet
    before = [(1, 5, "a"), (5, 7, "b"), (6, 9, "a")]  # (6, 9, a) cannot have been released: it stands for a wrong set
    got = released_now(spark, rows, 10, before, below=6)
    # one copy of (1, 5, a) was released before, the other is released now; (6, 9, a) starts at the
    # bound, so it is not looked up among the rows released before
    assert rows_of(got) == Counter([(1, 5, "a"), (1, 5, "b"), (6, 9, "a"), (7, 9, "c")])
    # with no bound known (a checkpoint written before it was kept) the whole difference is taken
    whole = released_now(spark, rows, 10, before, below=INFINITY_MICROS)
    assert rows_of(whole) == Counter([(1, 5, "a"), (1, 5, "b"), (7, 9, "c")])
    # nothing released before: the release rule's rows
    assert rows_of(released_now(spark, rows, 10, None, below=None)) == rows_of(whole) + Counter(
        [(1, 5, "a"), (5, 7, "b"), (6, 9, "a")])


def test_the_difference_shuffles_only_the_rows_before_the_bound(spark: SparkSession) -> None:
    got = released_now(spark, [(1, 5, True, "a"), (7, 9, True, "c")], 10, [(1, 5, "a")], below=6)
    plan = got._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("Generate replicaterows") == 1
    # the union's other side: the rows at or after the bound, released without the difference
    assert f"({START}#" in plan and "< 6)" in plan and ">= 6)" in plan, plan


def test_the_steps_observation_is_on_one_side_of_the_union_and_sees_every_candidate(spark: SparkSession) -> None:
    rows = [(1, 5, True, "a"), (7, 9, True, "c"), (8, 20, False, "a")]
    frame = candidates(spark, rows)
    seen = Observation()
    observed = frame.observe(seen, F.count(F.lit(1)).alias("rows"), F.min(START).alias("least"))
    before = {Shape.INTERVAL.name: spark.createDataFrame([(1, 5, "a")], RELEASED)}
    got = _released_again(Shape.INTERVAL, frame, observed, cti=10, payload=["k"], before=before, below=6)
    # a Spark Connect 4.1 client refuses a plan with one observation in both branches of a union
    assert got._jdf.queryExecution().optimizedPlan().toString().count("CollectMetrics") == 1
    assert rows_of(got) == Counter([(7, 9, "c")])
    assert seen.get == {"rows": 3, "least": 1}


rows_drawn = st.lists(st.tuples(st.integers(0, 12), st.integers(1, 4), st.booleans(), st.sampled_from("ab")),
                      max_size=14).map(lambda rs: [(s, s + d, closed, k) for s, d, closed, k in rs])


@settings(SPARK_EXAMPLES, max_examples=examples(20))
@given(rows=rows_drawn, cti=st.integers(0, 14), below=st.integers(0, 14), data=st.data())
def test_the_release_equals_the_whole_multiset_difference(spark: SparkSession, rows: list[tuple[int, int, bool, str]],
                                                          cti: int, below: int, data: st.DataObject) -> None:
    # what was released before: any rows starting before the bound, copies of the candidates or not
    copies = st.sampled_from([(s, e, k) for s, e, _, k in rows] or [(0, 1, "a")])
    others = st.tuples(st.integers(0, 12), st.integers(1, 16), st.sampled_from("ab"))
    drawn = data.draw(st.lists(st.one_of(copies, others), max_size=8), label="before")
    before = [r for r in drawn if r[0] < below]
    releasable = release(candidates(spark, rows), cti, Shape.INTERVAL, ["k"])
    expected = releasable.exceptAll(spark.createDataFrame(before, RELEASED)) if before else releasable
    assert rows_of(released_now(spark, rows, cti, before, below)) == rows_of(expected)


def test_the_bound_is_the_greatest_output_cti_and_an_older_checkpoint_has_none() -> None:
    assert _released_below(None, None) is None  # nothing released yet
    assert _released_below(None, 40) == 40
    assert _released_below(40, None) == 40  # a step without an output CTI releases nothing
    assert _released_below(40, 30) == 40  # it never goes down
    assert _released_below(40, 55) == 55
    state = RunState(inputs={"readings": InputState()}, released_below=55)
    assert RunState.from_json(state.to_json()) == state
    old = state.to_json().replace(', "released_below": 55', "")
    assert "released_below" not in old
    # a checkpoint written before the bound was kept: any released row may start anywhere
    assert RunState.from_json(old).released_below == INFINITY_MICROS
