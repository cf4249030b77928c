"""Partitioned inputs in a live run (docs/partitioned-inputs.md): a run over any split of the
input into micro-batches, each taking every partition's next rows in order (the storage order of
a random interleaving, cut anywhere), releases what the batch run releases — the counts included;
a running query's progress reports each partition's CTI, and its late sink the partition of each
record."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import streamql as sq
from streamql.spark.streaming.frontier import frontier_window
from streamql.spark.streaming.step import empty_carried, planned, step
from streamql.time import from_micros
from support.depth import PARTS, spark_examples
from support.incremental import collected_step, ordered
from support.partitions import (UNDECLARED, bind_partitioned, interleavings, partitioned_frame,
                                partitioned_side_by_side)
from support.streams import P, SPACING, SPARK_EXAMPLES, advance_settings, build, pipelines


def run_in_steps(spark: SparkSession, q: sq.Stream[Any], source: sq.Stream[Any], shape: sq.Shape,
                 rows: list[tuple[int, int, Any]], cuts: list[int], settings_: sq.AdvanceTimeSettings | None,
                 partitions: list[int], arrival: bool, output: sq.Shape) -> tuple[list[Any], Any]:
    """``q`` over micro-batches ``rows[cuts[i]:cuts[i+1]]`` with the incremental step, then a final
    step; what it released and the final carried state."""
    def bound(part: list[tuple[int, int, Any]]) -> Any:
        df = partitioned_frame(spark, shape, part, spark_partitions=2)
        return bind_partitioned(sq.Binder(spark), source, df, shape, settings_, partitions, arrival=arrival)

    binder = bound(rows[:1])
    plan = planned(q.node, dict(binder.bindings), (output,))
    carried = empty_carried(plan)
    released: list[Any] = []
    bounds = list(cuts)
    for batch, (lo, hi) in enumerate(zip(bounds, bounds[1:] + [len(rows)])):
        new = {"x": bound(rows[lo:hi]).bindings["x"].source}
        outcome = step(spark, plan, carried, new, batch)
        now, carried = collected_step(outcome, q, output)
        released += now
        carried = attrs.evolve(carried, events={n: df.localCheckpoint(eager=False) for n, df in carried.events.items()},
                               pending={n: df.localCheckpoint(eager=False) for n, df in carried.pending.items()},
                               released={n: df.localCheckpoint(eager=False) for n, df in carried.released.items()})
        outcome.unpersist()
    final = step(spark, plan, carried, {}, len(bounds), final=True)
    now, last = collected_step(final, q, output)
    released += now
    state = last.state
    final.unpersist()
    return ordered(released, q), state


@pytest.mark.slow
@settings(SPARK_EXAMPLES, max_examples=spark_examples(10, least=1))
@given(shape=st.sampled_from(list(sq.Shape)), data=st.data(), settings_=advance_settings(), ops=pipelines(),
       output=st.sampled_from(list(sq.Shape)), arrival=st.booleans(), undeclared=st.integers(0, 1))
def test_any_split_releases_what_the_batch_run_releases(
        spark: SparkSession, shape: sq.Shape, data: st.DataObject, settings_: sq.AdvanceTimeSettings | None,
        ops: list[tuple[str, Any]], output: sq.Shape, arrival: bool, undeclared: int) -> None:
    check_any_split(spark, shape, data, settings_, ops, output, arrival, undeclared, snapshot=False)


@pytest.mark.slow  # three times the other's examples: a clipped frontier needs CTIs inside intervals in every partition
@settings(SPARK_EXAMPLES, max_examples=spark_examples(30, least=1))
@given(shape=st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), data=st.data(), settings_=advance_settings(),
       ops=pipelines(), output=st.sampled_from(list(sq.Shape)), arrival=st.booleans())
def test_a_grouped_snapshot_over_any_split_releases_what_the_batch_run_releases(
        spark: SparkSession, shape: sq.Shape, data: st.DataObject, settings_: sq.AdvanceTimeSettings | None,
        ops: list[tuple[str, Any]], output: sq.Shape, arrival: bool) -> None:
    check_any_split(spark, shape, data, settings_, ops, output, arrival, 0, snapshot=True)


def check_any_split(spark: SparkSession, shape: sq.Shape, data: st.DataObject, settings_: sq.AdvanceTimeSettings | None,
                    ops: list[tuple[str, Any]], output: sq.Shape, arrival: bool, undeclared: int,
                    snapshot: bool) -> None:
    """Any split of a partitioned input's rows into micro-batches releases what the batch run
    releases; ``snapshot``: the query ends in a grouped snapshot window, carried on its frontier."""
    parts = data.draw(partitioned_side_by_side(shape, open_ends=True))
    if snapshot:
        # the union's CTI is the least of its partitions': CTI rows in each, falling inside intervals
        # too (generated CTIs fall on a start), so that a step's frontier is clipped
        for items in parts.values():
            for at, time in data.draw(st.lists(st.tuples(st.integers(0, len(items)), st.integers(0, 120)),
                                               min_size=1, max_size=3), label="cti rows"):
                items.insert(at, sq.Cti(time + SPACING * (at * PARTS // (len(items) + 1))))
    rows = data.draw(interleavings(parts))
    for i in range(undeclared):
        rows.insert(data.draw(st.integers(0, len(rows))), (UNDECLARED, i, sq.Insert(40, 41, P(1, 1, "a", None))))
    points = data.draw(st.lists(st.integers(0, len(rows)), min_size=1, max_size=3))
    cuts = [0] + sorted(points)
    note(f"rows {rows}, cuts {cuts}")
    source = sq.input("x", P, shape)
    q = build(source, ops)
    if snapshot:  # over POINT or INTERVAL partitions, on its carried frontier (streamql.spark.streaming.frontier)
        q = q.group_by(lambda e: e.k % 3).snapshot_window().select(
            lambda w: P(w.key, w.count(), "x", w.sum(lambda e: e.o)))
    # the batch run: the live run's final step flushes only where the settings flush, as a batch run does
    df = partitioned_frame(spark, shape, rows, spark_partitions=2)
    binder = bind_partitioned(sq.Binder(spark), source, df, shape, settings_, sorted(parts), arrival=arrival)
    batch = binder.run(q, output)
    live, state = run_in_steps(spark, q, source, shape, rows, cuts, settings_, sorted(parts), arrival, output)
    expected = batch.edges if output is sq.Shape.EDGE else batch.events
    assert live == expected
    assert (state.dropped, state.adjusted, state.bad_rows) == (batch.dropped, batch.adjusted, batch.bad_rows)


def test_a_grouped_snapshot_over_partitions_carries_its_frontier(spark: SparkSession) -> None:
    """Partition 0: [0, 10), [5, 20), then a CTI row at 12; partition 1: [2, 4), then a CTI row at
    12 (one group). The partitions' union has the CTI 12 after the first micro-batch: [0, 2),
    [2, 4), [4, 5), [5, 10) are released and [5, 20) is carried as [10, 20), the group's last
    endpoint before 12 being 10. The second micro-batch adds [15, 25) to partition 0 and CTI rows at
    INFINITY: [10, 15), [15, 20), [20, 25) follow, what the batch run releases."""
    shape = sq.Shape.INTERVAL
    rows: list[tuple[int, int, Any]] = [
        (0, 0, sq.Insert(0, 10, P(1, 1, "a", 1))), (1, 0, sq.Insert(2, 4, P(1, 2, "a", 2))),
        (0, 1, sq.Insert(5, 20, P(1, 3, "a", 3))), (0, 2, sq.Cti(12)), (1, 1, sq.Cti(12)),
        (0, 3, sq.Insert(15, 25, P(1, 4, "a", 4))), (0, 4, sq.Cti(sq.INFINITY)), (1, 2, sq.Cti(sq.INFINITY))]
    source = sq.input("x", P, shape)
    q = source.group_by(lambda e: e.k).snapshot_window().select(
        lambda w: P(w.key, w.count(), "x", w.sum(lambda e: e.o)))
    binder = bind_partitioned(sq.Binder(spark), source, partitioned_frame(spark, shape, rows, spark_partitions=2),
                              shape, None, [0, 1], arrival=False)
    assert frontier_window(planned(q.node, dict(binder.bindings), (sq.Shape.INTERVAL,)).query) is not None
    batch = binder.run(q, sq.Shape.INTERVAL)
    live, _ = run_in_steps(spark, q, source, shape, rows, [0, 5], None, [0, 1], False, sq.Shape.INTERVAL)
    assert live == batch.events
    assert [(e.start.microsecond, e.end.microsecond, e.payload.v) for e in live] == [
        (0, 2, 1), (2, 4, 2), (4, 5, 1), (5, 10, 2), (10, 15, 1), (15, 20, 2), (20, 25, 1)]


SCHEMA = T.StructType([T.StructField("ts", T.LongType()), T.StructField("kind", T.StringType()),
                       T.StructField("part", T.IntegerType()), T.StructField("offset", T.LongType()),
                       T.StructField("k", T.LongType()), T.StructField("v", T.LongType()),
                       T.StructField("s", T.StringType()), T.StructField("o", T.LongType())])


def put(directory: Path, number: int, batch: list[dict[str, Any]]) -> None:
    """One JSON file, written whole (under a hidden name, then renamed)."""
    directory.mkdir(parents=True, exist_ok=True)
    hidden = directory / f".part-{number:04d}.json"
    hidden.write_text("".join(json.dumps(r) + "\n" for r in batch))
    os.rename(hidden, directory / f"part-{number:04d}.json")


def readings(part: int, offsets: range, times: list[int]) -> list[dict[str, Any]]:
    return [{"ts": t, "kind": "INSERT", "part": part, "offset": o, "k": t, "v": 0, "s": "a", "o": None}
            for o, t in zip(offsets, times)]


@pytest.mark.slow
def test_progress_reports_each_partitions_cti_and_late_records_their_partition(spark: SparkSession,
                                                                                tmp_path: Path) -> None:
    x = sq.input("x", P, sq.Shape.POINT)
    source, sink, late, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "late", tmp_path / "ck"
    # partition 0 is fast (CTI 30), partition 1 slow (CTI 15) with a late reading at 3
    put(source, 0, readings(0, range(3), [10, 20, 30]) + readings(1, range(3), [5, 15, 3]))
    settings_ = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    binder = sq.Binder(spark).bind(x, spark.readStream.schema(SCHEMA).json(str(source)), start="ts", kind="kind",
                                   arrival="offset", partition="part", partitions=[0, 1], advance_time=settings_)
    running = binder.start(x, sink=str(sink), checkpoint=str(checkpoint), late_sink=str(late))
    try:
        running.process_all_available()
        last = running.last_progress
        assert last is not None
        assert last.partition_ctis == {"x": {0: from_micros(30), 1: from_micros(15)}}
        assert last.input_ctis == {"x": from_micros(15)}
        assert last.input_rows == {"x": 6}
        assert last.dropped == 1
    finally:
        running.stop(flush=False)
    records = spark.read.parquet(str(late)).collect()
    assert [(r["input"], r["partition"], r["arrival"], r["action"]) for r in records] == [("x", "1", 2, "dropped")]
    released = sorted(r["k"] for r in spark.read.parquet(str(sink)).collect())
    assert released == [5, 10]
