"""Partitioned inputs on Spark (docs/partitioned-inputs.md): a batch run releases what the
reference evaluator releases for ``sq.reference.PartitionedInput`` — on random inputs of every
shape, both policies, CTI rows, with or without an arrival column, rows whose partition value is
not declared (bad rows), and the partitions' rows interleaved at random in storage (which changes
nothing: the interleaving is random per example, the reference never sees it); the hand-worked
example (a fast partition's CTIs do not drop a slow one's events, a quiet partition holds release
back); late records carry the partition; bind's checks before any job; the jobs a run takes."""
from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.errors import BadInputError, BindingError
from streamql.spark.runtime.jobs import counting_jobs
from streamql.time import from_micros
from support.depth import spark_examples, tiered
from support.partitions import (UNDECLARED, bind_partitioned, interleavings, partitioned, partitioned_frame,
                                partitioned_side_by_side)
from support.streams import P, SPARK_EXAMPLES, advance_settings, build, pipelines

EVERY_EVENT = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))
x = sq.input("x", P, sq.Shape.POINT)


def pt(t: int) -> sq.Insert[P]:
    return sq.Insert(t, t + 1, P(t, t, "a", None))


FAST = [pt(10), pt(20), pt(30)]
SLOW = [pt(5), pt(15)]


def fast_then_slow() -> list[tuple[int, int, Any]]:
    return [(0, i, item) for i, item in enumerate(FAST)] + [(1, i, item) for i, item in enumerate(SLOW)]


@pytest.mark.parametrize("arrival", tiered([False, True], deep={"True"}))
def test_a_fast_partition_does_not_drop_a_slow_ones_events(spark: SparkSession, arrival: bool) -> None:
    df = partitioned_frame(spark, sq.Shape.POINT, fast_then_slow(), spark_partitions=2)
    binder = bind_partitioned(sq.Binder(spark), x, df, sq.Shape.POINT, EVERY_EVENT, [0, 1], arrival=arrival)
    result = binder.run(x)
    assert (result.dropped, result.final_cti) == (0, from_micros(15))
    assert [e.payload.k for e in result.events] == [5, 10]
    # stored the other way round (each partition's rows still in their order): the same
    slow_first = sorted(fast_then_slow(), key=lambda r: -r[0])
    stored = partitioned_frame(spark, sq.Shape.POINT, slow_first, spark_partitions=2)
    again = bind_partitioned(sq.Binder(spark), x, stored, sq.Shape.POINT, EVERY_EVENT, [0, 1], arrival=arrival).run(x)
    assert (again.events, again.dropped, again.final_cti) == (result.events, result.dropped, result.final_cti)
    # a declared partition with no rows holds the input's CTI back
    quiet = bind_partitioned(sq.Binder(spark), x, df, sq.Shape.POINT, EVERY_EVENT, [0, 1, 2], arrival=arrival)
    assert quiet.run(x).final_cti is None


def test_late_records_and_undeclared_rows_carry_their_partition(spark: SparkSession) -> None:
    rows = [(0, 0, pt(10)), (1, 0, pt(5)), (1, 1, pt(3)), (UNDECLARED, 0, pt(7))]
    df = partitioned_frame(spark, sq.Shape.POINT, rows, spark_partitions=2)
    binder = bind_partitioned(sq.Binder(spark), x, df, sq.Shape.POINT, EVERY_EVENT, [0, 1], arrival=True)
    result = binder.run(x, late=True)
    assert (result.dropped, result.bad_rows) == (1, 1)
    assert [(r.partition, r.arrival, r.action) for r in result.late] == [(1, 1, "dropped"), (9, 0, "bad_row")]
    assert "not a declared partition" in (result.late[1].reason or "")
    frame = binder.late(x).select("partition", "action").collect()
    assert sorted((r["partition"], r["action"]) for r in frame) == [("1", "dropped"), ("9", "bad_row")]
    strict = bind_partitioned(sq.Binder(spark), x, df, sq.Shape.POINT, EVERY_EVENT, [0, 1], arrival=True,
                              bad_rows="error")
    with pytest.raises(BadInputError, match="undeclared partition.*part 9 is not a declared partition"):
        strict.run(x)


def test_bind_checks_the_columns_before_any_job(spark: SparkSession) -> None:
    df = partitioned_frame(spark, sq.Shape.POINT, fast_then_slow())
    binder = sq.Binder(spark)
    with counting_jobs(spark, "bind checks") as count:
        with pytest.raises(BindingError, match="partition= needs partitions="):
            binder.bind(x, df, start="start", kind="kind", partition="part")
        with pytest.raises(BindingError, match="partitions= needs partition="):
            binder.bind(x, df, start="start", kind="kind", partitions=[0, 1])
        with pytest.raises(BindingError, match="no column 'shard' for the partition"):
            binder.bind(x, df, start="start", kind="kind", partition="shard", partitions=[0])
        with pytest.raises(BindingError, match="takes ints; got 'a'"):
            binder.bind(x, df, start="start", kind="kind", partition="part", partitions=["a"])
        with pytest.raises(BindingError, match="declares 1 more than once"):
            binder.bind(x, df, start="start", kind="kind", partition="part", partitions=[1, 1])
        # a payload field named like another column: after a join, "kind" appears twice
        other = df.select(F.col("part").alias("p2"), F.col("kind"))
        joined = df.join(other, df["part"] == other["p2"])
        with pytest.raises(BindingError, match="column 'kind' \\(the kind\\) appears 2 times"):
            binder.bind(x, joined, start="start", kind="kind")
        twice_start = df.join(df.select(F.col("start"), F.col("part").alias("p3")), "start")
        assert twice_start.columns.count("start") == 1  # a join on the column keeps one
        doubled = df.crossJoin(df.select("k"))
        with pytest.raises(BindingError, match="column 'k' \\(the payload field P.k\\) appears 2 times"):
            binder.bind(x, doubled, start="start", kind="kind")
    if count.jobs is not None:
        assert count.jobs == 0


@pytest.mark.slow
def test_jobs_of_a_partitioned_run(spark: SparkSession) -> None:
    """A partitioned run's jobs: the first summary passes of all partitions in one job, then the
    final one; no more than a run of the same rows without partitions takes, plus none per
    partition (measured: docs/partitioned-inputs.md)."""
    rows = [(p, i, pt(10 * i + p)) for p in range(4) for i in range(20)]
    df = partitioned_frame(spark, sq.Shape.POINT, rows, spark_partitions=3)
    flushed = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    binder = bind_partitioned(sq.Binder(spark), x, df, sq.Shape.POINT, flushed, [0, 1, 2, 3], arrival=True)
    plain = sq.Binder(spark).bind(x, df, start="start", kind="kind", arrival="arrival", advance_time=flushed)
    binder.run(x), plain.run(x)  # warm
    with counting_jobs(spark, "partitioned") as partitioned_jobs:
        result = binder.run(x)
    with counting_jobs(spark, "plain") as plain_jobs:
        plain.run(x)
    assert len(result.events) == 80
    print(f"jobs: partitioned {partitioned_jobs.jobs}, plain {plain_jobs.jobs}")
    if partitioned_jobs.jobs is not None and plain_jobs.jobs is not None:
        assert partitioned_jobs.jobs <= plain_jobs.jobs + 1


def comparable(result: sq.Result[Any]) -> tuple[Any, ...]:
    late = sorted(((r.partition, r.arrival, r.action, r.kind, r.start, r.end, r.cti, r.new_start, r.new_end)
                   for r in result.late), key=repr)
    return result.events, result.edges, result.dropped, result.adjusted, result.bad_rows, result.final_cti, late


@pytest.mark.slow
@settings(SPARK_EXAMPLES, max_examples=spark_examples(20))
@given(shape=st.sampled_from(list(sq.Shape)), data=st.data(), settings_=advance_settings(), ops=pipelines(),
       output=st.sampled_from(list(sq.Shape)), arrival=st.booleans(), undeclared=st.integers(0, 2),
       spark_partitions=st.integers(1, 3))
def test_batch_releases_what_the_reference_releases(
        spark: SparkSession, shape: sq.Shape, data: st.DataObject, settings_: sq.AdvanceTimeSettings | None,
        ops: list[tuple[str, Any]], output: sq.Shape, arrival: bool, undeclared: int, spark_partitions: int) -> None:
    parts = data.draw(partitioned_side_by_side(shape, open_ends=True))
    rows = data.draw(interleavings(parts))
    # rows of a partition that is not declared: bad rows, wherever they are stored
    for i in range(undeclared):
        at = data.draw(st.integers(0, len(rows)))
        rows.insert(at, (UNDECLARED, i, pt(40 + i)))
    if arrival and data.draw(st.booleans()):
        # only the arrival column (each row's position in its partition) gives the order
        rows = data.draw(st.permutations(rows))
    note(f"rows in storage order: {rows}")
    source = sq.input("x", P, shape)
    q = build(source, ops)
    expected = sq.reference.run(q, {"x": partitioned(parts, settings_, "drop")}, output, late=True)
    df = partitioned_frame(spark, shape, rows, spark_partitions=spark_partitions)
    binder = bind_partitioned(sq.Binder(spark), source, df, shape, settings_, sorted(parts), arrival=arrival)
    got = binder.run(q, output, late=True)
    bad = [r for r in got.late if r.partition == UNDECLARED]
    assert len(bad) == undeclared and all(r.action == "bad_row" for r in bad)
    got = attrs.evolve(got, bad_rows=got.bad_rows - undeclared,
                       late=[r for r in got.late if r.partition != UNDECLARED])
    assert comparable(got) == comparable(expected)
