"""Live hopping and tumbling windows on partial aggregates (``streamql.spark.streaming.partials``):
in micro-batches they release, after every step, exactly what the reference releases over the
input so far, and they carry one row per open window per group, never an input event."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.streaming.partials import incremental_window
from support.incremental import StreamInput, cuts, expected_after, flushing, run_in_steps
from support.streams import P, SELECTS, SPARK_EXAMPLES, WHERES, inputs, side_by_side, us
from support.depth import spark_examples


@dataclass(frozen=True)
class Stats:
    k: int
    n: int
    total: Optional[int]
    mean: Optional[float]
    low: Optional[int]
    high: Optional[int]


def stats(key: int, w: Any) -> Stats:
    return Stats(key, w.count(), w.sum(lambda e: e.o), w.avg(lambda e: e.o), w.min(lambda e: e.v),
                 w.max(lambda e: e.o))


@st.composite
def chains(draw: st.DrawFn, q: sq.Stream[P]) -> sq.Stream[P]:
    """Operators that map each event on their own and cannot open one."""
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["where", "select", "to_point", "shift_back"]))
        if kind == "where":
            q = WHERES[draw(st.integers(0, len(WHERES) - 1))](q)
        elif kind == "select":
            q = SELECTS[draw(st.integers(0, len(SELECTS) - 1))](q)
        elif kind == "to_point":
            q = q.to_point()
        else:
            q = q.shift(-us(draw(st.integers(0, 10))))
    return q


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(5, least=1))
@given(data=st.data())
def test_windows_on_partials_equal_reference_after_every_micro_batch(spark: SparkSession, data: st.DataObject) -> None:
    source = sq.input("in", P, sq.Shape.POINT)
    q = data.draw(chains(source), label="chain")
    size = us(data.draw(st.integers(1, 30), label="size"))
    hop = size if data.draw(st.booleans(), label="tumbling") else us(data.draw(st.integers(1, 30), label="hop"))
    query: sq.Stream[Any]
    if data.draw(st.booleans(), label="grouped"):
        query = q.group_by(lambda e: e.k % 3).hopping_window(size, hop).select(lambda w: stats(w.key, w))
    else:
        query = q.hopping_window(size, hop).select(lambda w: stats(0, w))
    assert incremental_window(query.node) is not None
    note(f"query tree: {query.node!r}")
    items = data.draw(side_by_side(inputs(sq.Shape.POINT)), label="items")
    sides = {"in": StreamInput(source, P, sq.Shape.POINT, items, data.draw(flushing(), label="settings"))}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    released, carried = run_in_steps(spark, query, sides, data.draw(cuts(len(items)), label="cuts"), output)
    assert released == expected_after(query, sides, len(items), True, output)
    assert carried.events == {} and carried.released == {} and set(carried.partials) == {"window"}


@pytest.mark.slow  # bounded state: the deep tier's (the default tier's budget)
def test_the_state_is_the_open_windows(spark: SparkSession) -> None:
    # points every 10 us over 3 keys, a CTI at every event; windows of 30 us every 10 us: after a
    # step only the windows the CTI has not reached the end of are carried, three per key at most
    source = sq.input("in", P, sq.Shape.POINT)
    query = source.group_by(lambda e: e.k % 3).hopping_window(us(30), us(10)).select(lambda w: stats(w.key, w))
    items = [sq.Insert(10 * i, 10 * i + 1, P(i, i, "x", i)) for i in range(60)]
    settings_ = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    sides = {"in": StreamInput(source, P, sq.Shape.POINT, items, settings_)}
    released, carried = run_in_steps(spark, query, sides, [0, 20, 40], sq.Shape.INTERVAL, check_every_step=False)
    assert released == expected_after(query, sides, len(items), True, sq.Shape.INTERVAL)
    assert carried.partials["window"].count() == 0  # flushed: every window released
    partway, carried = run_in_steps(spark, query, {"in": StreamInput(
        source, P, sq.Shape.POINT, items, settings_.without_flush())}, [0, 20, 40], sq.Shape.INTERVAL,
        check_every_step=False)
    # the CTI is at the last start (590): the windows [570, 600), [580, 610), [590, 620) are open
    assert sorted(r["_sq_window"] for r in carried.partials["window"].select("_sq_window").distinct().collect()) \
        == [57, 58, 59]
    assert carried.partials["window"].count() <= 9


@dataclass(frozen=True)
class MeterCount:
    meter: str
    n: int


def test_a_running_window_query_with_micro_batches_before_the_first_cti(spark: SparkSession, tmp_path: Path) -> None:
    # a CTI every 4 readings: the first micro-batches (one reading each) have no CTI, and Spark
    # proves their release empty (no observed metrics); the query runs on and releases what batch does
    from support.json_readings import EVERY_4, READINGS, SCHEMA, put, rows

    def counts(readings: sq.Stream[Any]) -> sq.Stream[MeterCount]:
        return readings.group_by(lambda e: e.meter).tumbling_window(timedelta(seconds=20)).select(
            lambda w: MeterCount(w.key, w.count()))

    source = tmp_path / "in"
    everything = rows(0, 10)
    for number, batch in enumerate([everything[0:1], everything[1:2], everything[2:10]]):
        put(source, number, batch)
        # the file source takes files in modification-time order
        stamp = time.time() - 100 + number
        os.utime(source / f"part-{number:04d}.json", (stamp, stamp))
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    running = sq.Binder(spark).bind(READINGS, stream, start="ts", advance_time=EVERY_4).start(
        counts(READINGS), sink=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), feed=False)
    running.process_all_available()
    running.stop()
    assert [p.released for p in running.progress][:2] == [0, 0]
    # the scan, the sink, the state (no feed)
    assert all(p.jobs is not None and p.jobs <= 3 for p in running.progress[:3]), [p.jobs for p in running.progress]
    data = spark.createDataFrame(everything, SCHEMA)
    expected = sq.Binder(spark).bind(READINGS, data, start="ts", advance_time=EVERY_4).collect(counts(READINGS))
    got = spark.read.parquet(str(tmp_path / "out")).select("start", "end", "meter", "n").collect()
    assert sorted(tuple(r) for r in got) == sorted(
        (e.start.replace(tzinfo=None), e.end.replace(tzinfo=None), e.payload.meter, e.payload.n) for e in expected)
    assert sum(p.released for p in running.progress) == len(expected) > 0
