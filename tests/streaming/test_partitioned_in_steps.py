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
from streamql.spark.streaming.step import empty_carried, planned, step
from streamql.time import from_micros
from support.depth import spark_examples
from support.incremental import collected_step, ordered
from support.partitions import UNDECLARED, bind_partitioned, interleavings, partitioned_frame, partitioned_items
from support.streams import P, SPARK_EXAMPLES, advance_settings, build, pipelines


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
    parts = data.draw(partitioned_items(shape, open_ends=True))
    rows = data.draw(interleavings(parts))
    for i in range(undeclared):
        rows.insert(data.draw(st.integers(0, len(rows))), (UNDECLARED, i, sq.Insert(40, 41, P(1, 1, "a", None))))
    points = data.draw(st.lists(st.integers(0, len(rows)), min_size=1, max_size=3))
    cuts = [0] + sorted(points)
    note(f"rows {rows}, cuts {cuts}")
    source = sq.input("x", P, shape)
    q = build(source, ops)
    # the batch run: the live run's final step flushes only where the settings flush, as a batch run does
    df = partitioned_frame(spark, shape, rows, spark_partitions=2)
    binder = bind_partitioned(sq.Binder(spark), source, df, shape, settings_, sorted(parts), arrival=arrival)
    batch = binder.run(q, output)
    live, state = run_in_steps(spark, q, source, shape, rows, cuts, settings_, sorted(parts), arrival, output)
    expected = batch.edges if output is sq.Shape.EDGE else batch.events
    assert live == expected
    assert (state.dropped, state.adjusted, state.bad_rows) == (batch.dropped, batch.adjusted, batch.bad_rows)


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
