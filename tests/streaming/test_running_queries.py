"""Queries running on Structured Streaming (Binder.start): file-directory sources, the sink's
micro-batch partitions, stop and restart with the same checkpoint, a micro-batch that Spark runs
again, several streaming inputs with a static one, and chains of running queries."""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

import pytest
from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.running import MICRO_BATCH
from streamql.spark.runtime.connect import is_connect
from support.json_readings import EVERY_4, READINGS, SCHEMA, Price, Priced, averages, put, rows, sink_rows
from support.streaming_job import Average, Reading


def static(spark: SparkSession, batch: Sequence[dict[str, Any]]) -> DataFrame:
    return spark.createDataFrame([(r["ts"], r["meter"], r["consumption"]) for r in batch], SCHEMA).coalesce(1)


def batch_rows(events: Sequence[sq.Event[Any]]) -> list[tuple[Any, ...]]:
    def naive(t: datetime) -> datetime:  # the sink's timestamps come back in the session's zone (UTC)
        return t.astimezone(timezone.utc).replace(tzinfo=None)
    return sorted((naive(e.start), naive(e.end), *e.payload.__dict__.values()) for e in events)


@pytest.mark.connect  # also in the Spark Connect group (tests/connect)
def test_a_file_directory_query_releases_what_the_batch_run_releases(spark: SparkSession, tmp_path: Path) -> None:
    data = rows(0, 36)
    source = tmp_path / "in"
    put(source, 0, data[:10])
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    running = sq.Binder(spark).bind(READINGS, stream, start="ts", advance_time=EVERY_4).start(
        averages(READINGS), sink=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"))
    running.process_all_available()
    put(source, 1, data[10:25])
    running.process_all_available()
    put(source, 2, data[25:])
    running.process_all_available()
    running.stop()
    expected = sq.Binder(spark).bind(READINGS, static(spark, data), start="ts", advance_time=EVERY_4).collect(
        averages(READINGS))
    assert sink_rows(spark, tmp_path / "out") == batch_rows(expected)
    progress = running.progress
    # three micro-batches of files, then the final one that the flush released
    assert [p.input_rows["readings"] for p in progress] == [10, 15, 11, 0]
    assert sum(p.released for p in progress) == len(expected)
    ctis = [p.input_ctis["readings"] for p in progress]
    assert ctis == sorted(ctis) and ctis[-1] == sq.INFINITY and progress[-1].output_cti == sq.INFINITY
    # every micro-batch that released something has its own partition in the sink
    partitions = sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(MICRO_BATCH))
    assert partitions == [f"{MICRO_BATCH}={p.batch}" for p in progress if p.released]
    assert running.result().final_cti == sq.INFINITY
    if tuple(int(p) for p in spark.version.split(".")[:2]) >= (4, 2):
        # readable outside Spark: microseconds, not INT96 (docs/decisions.md, "Parquet timestamps")
        import pyarrow.parquet as pq

        table = pq.read_table(str(tmp_path / "out"))
        assert [str(table.schema.field(c).type) for c in ("start", "end")] == ["timestamp[us, tz=UTC]"] * 2
        assert sorted(zip(table.column("start").to_pylist(), table.column("end").to_pylist())) == sorted(
            (e.start, e.end) for e in expected)


@pytest.mark.slow
@pytest.mark.connect  # also in the Spark Connect group (tests/connect)
def test_a_query_stopped_and_started_again_continues_where_it_stopped(spark: SparkSession, tmp_path: Path) -> None:
    data = rows(0, 40)
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    put(source, 0, data[:13])
    binder = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                   advance_time=EVERY_4)
    first = binder.start(averages(READINGS), sink=str(sink), checkpoint=str(checkpoint))
    first.process_all_available()
    first.stop(flush=False)  # a pause: no final CTI
    put(source, 1, data[13:27])
    second = binder.start(averages(READINGS), sink=str(sink), checkpoint=str(checkpoint))
    second.process_all_available()
    put(source, 2, data[27:])
    second.process_all_available()
    second.stop()
    expected = sq.Binder(spark).bind(READINGS, static(spark, data), start="ts", advance_time=EVERY_4).collect(
        averages(READINGS))
    assert sink_rows(spark, sink) == batch_rows(expected)
    # the second run went on from the first one's micro-batch numbers and CTI
    assert [p.batch for p in second.progress] == [1, 2, 3]
    with pytest.raises(sq.BindingError, match="stopped with flush: its output is complete"):
        binder.start(averages(READINGS), sink=str(sink), checkpoint=str(checkpoint))
    with pytest.raises(sq.BindingError, match=r"belongs to another query \(readings: Reading/POINT -> "
                                              r"Average\(meter, average\) as INTERVAL\+EDGE\)"):
        binder.start(READINGS.where(lambda e: e.consumption > 1), sink=str(sink), checkpoint=str(checkpoint))


@pytest.mark.slow
def test_a_micro_batch_run_again_after_a_crash_writes_nothing_twice(spark: SparkSession, tmp_path: Path) -> None:
    data = rows(0, 30)
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    put(source, 0, data)
    running = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                    advance_time=EVERY_4).start(averages(READINGS), sink=str(sink),
                                                                checkpoint=str(checkpoint))
    running.process_all_available()
    running.stop(flush=False)
    before = sink_rows(spark, sink)
    assert before
    runner = running._runner
    # Spark runs micro-batch 0 again (its commit was lost): the committed state makes it a no-op
    runner.run_batch(static(spark, data), 0)
    assert sink_rows(spark, sink) == before
    # the crash came after the sink was written but before the state: the step runs again, the
    # sink partition that exists stays as it is, and the state is written as it would have been
    state = checkpoint / "streamql" / "state-000000000000"
    kept = json.loads((state / "meta.json").read_text())["state"]
    shutil.rmtree(state)
    runner.run_batch(static(spark, data), 0)
    assert sink_rows(spark, sink) == before
    assert json.loads((state / "meta.json").read_text())["state"] == kept


@pytest.mark.slow  # the deep tier (the default tier's budget): the file-directory query stays the smoke test
def test_two_streaming_inputs_and_a_static_one_in_one_query(spark: SparkSession, tmp_path: Path) -> None:
    """Readings arrive in two directories (two meters' feeds), joined with static tariff intervals
    that are read whole in the first micro-batch."""
    east, west = sq.input("east", Reading), sq.input("west", Reading)
    tariffs = sq.input("tariffs", Price, sq.Shape.INTERVAL)
    q = (east.union(west).alter_duration(timedelta(seconds=5))
         .join(tariffs, None, lambda r, t: Priced(r.meter, t.item, r.consumption * t.price)))
    day = datetime(2026, 1, 1, tzinfo=timezone.utc)
    tariff_rows = [(day, day + timedelta(minutes=3), "peak", 2.0), (day + timedelta(minutes=3), sq.INFINITY, "off", 0.5)]
    tariff_df = spark.createDataFrame(tariff_rows, "start timestamp, end timestamp, item string, price double")
    data = rows(0, 40)
    east_rows, west_rows = [r for r in data if r["meter"] == "m1"], [r for r in data if r["meter"] == "m2"]
    flush_every_2 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2, flush=True))
    until_east = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("east"))

    def bound(e: DataFrame, w: DataFrame) -> sq.Binder:
        return (sq.Binder(spark).bind(east, e, start="ts", advance_time=flush_every_2)
                .bind(west, w, start="ts", advance_time=flush_every_2)
                .bind(tariffs, tariff_df, start="start", end="end", advance_time=until_east))

    e_dir, w_dir = tmp_path / "east", tmp_path / "west"
    put(e_dir, 0, east_rows[:20])
    put(w_dir, 0, west_rows[:20])
    running = bound(spark.readStream.schema(SCHEMA).json(str(e_dir)),
                    spark.readStream.schema(SCHEMA).json(str(w_dir))).start(q, sink=str(tmp_path / "out"),
                                                                            checkpoint=str(tmp_path / "ck"))
    running.process_all_available()
    running.stop()
    expected = bound(static(spark, east_rows), static(spark, west_rows)).collect(q)
    assert expected and sink_rows(spark, tmp_path / "out") == batch_rows(expected)


#: the first query of a chain of running queries
BUSY = READINGS.where(lambda e: e.consumption > 2.0)


def start_busy(spark: SparkSession, source: Path, tmp_path: Path) -> sq.RunningQuery[Reading]:
    """``BUSY`` running over the JSON files in ``source`` (sink ``out1``), its first micro-batch done."""
    first = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                  advance_time=EVERY_4).start(BUSY, sink=str(tmp_path / "out1"),
                                                              checkpoint=str(tmp_path / "ck1"), name="busy")
    first.process_all_available()
    return first


@pytest.mark.slow
def test_a_chain_of_three_running_queries_releases_what_the_composed_query_releases(
        spark: SparkSession, tmp_path: Path) -> None:
    data = rows(0, 30)
    source = tmp_path / "in"
    put(source, 0, data[:12])
    first = start_busy(spark, source, tmp_path)
    # the second and third queries read the running ones: Binder.start binds those inputs itself
    second = sq.Binder(spark).start(averages(first.as_stream()), sink=str(tmp_path / "out2"),
                                    checkpoint=str(tmp_path / "ck2"), name="busy_averages")
    third = sq.Binder(spark).start(second.as_stream().where(lambda a: a.average >= 4.0).shift(timedelta(seconds=1)),
                                   sink=str(tmp_path / "out3"), checkpoint=str(tmp_path / "ck3"), name="high")
    for part in (1, 2):
        for running in (second, third):
            running.process_all_available()
        put(source, part, data[12 * part:12 * part + 12])
        first.process_all_available()
    first.stop()  # the final INFINITY CTI flows down the chain
    for running in (second, third):
        running.process_all_available()
        running.stop()
    composed = averages(BUSY).where(lambda a: a.average >= 4.0).shift(timedelta(seconds=1))
    expected = sq.Binder(spark).bind(READINGS, static(spark, data), start="ts", advance_time=EVERY_4).collect(composed)
    assert expected and sink_rows(spark, tmp_path / "out3") == batch_rows(expected)
    assert third.result().final_cti == sq.INFINITY


def forty_operators(q: sq.Stream[Reading]) -> sq.Stream[Reading]:
    """Twenty shifts by a second and twenty ``alter_lifetime``s back by one, with a ``where``
    among them: a plan of over a hundred DataFrame calls, deeper than a Spark Connect client could
    copy into a checkpoint command (docs/architecture.md#plans-grow-linearly)."""
    for i in range(20):
        q = q.shift(timedelta(seconds=1)).alter_lifetime(timedelta(seconds=-1))
        if i == 10:
            q = q.where(lambda e: e.consumption != 3.0)
    return q


@pytest.mark.slow
@pytest.mark.connect  # also in the Spark Connect group (tests/connect)
def test_a_running_query_of_forty_operators_over_another_releases_what_the_composed_query_releases(
        spark: SparkSession, tmp_path: Path) -> None:
    if not is_connect(spark):
        pytest.skip("runs in the Spark Connect group, whose client refused such deep plans; on a classic session "
                    "the chain of three running queries composes them")
    data = rows(0, 24)
    source = tmp_path / "in"
    put(source, 0, data[:12])
    first = start_busy(spark, source, tmp_path)
    second = sq.Binder(spark).start(averages(forty_operators(first.as_stream())), sink=str(tmp_path / "out2"),
                                    checkpoint=str(tmp_path / "ck2"), name="busy_averages")
    second.process_all_available()
    put(source, 1, data[12:])
    first.process_all_available()
    second.process_all_available()
    first.stop()  # the final INFINITY CTI flows on
    second.process_all_available()
    second.stop()
    composed = averages(forty_operators(BUSY))
    expected = sq.Binder(spark).bind(READINGS, static(spark, data), start="ts", advance_time=EVERY_4).collect(composed)
    assert expected and sink_rows(spark, tmp_path / "out2") == batch_rows(expected)
    assert second.result().final_cti == sq.INFINITY


def test_recorded_phases_account_for_each_step_s_jobs_and_are_off_by_default(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    if is_connect(spark):  # the runner went to the server when the query started
        pytest.skip("record_phases reaches steps that run in this process (a classic session)")
    data = rows(0, 20)
    source = tmp_path / "in"
    put(source, 0, data[:10])
    running = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                    advance_time=EVERY_4).start(averages(READINGS), sink=str(tmp_path / "out"),
                                                                checkpoint=str(tmp_path / "ck"))
    running.process_all_available()
    running.record_phases()
    put(source, 1, data[10:])
    running.process_all_available()
    running.stop(flush=False)
    off, on = running.progress
    assert off.phases == {}
    # the phases of a live step, and every job it ran charged to exactly one of them (a grouped
    # snapshot on its carried frontier reads no retention floor from the data)
    assert {"scan summary", "compile", "sink write", "state write", "other"} <= set(on.phases)
    assert "retention floors" not in on.phases
    assert on.phases["sink write"][1] == on.phases["state write"][1] == 1
    assert on.jobs == sum(jobs or 0 for _, jobs in on.phases.values()) and on.jobs == off.jobs
    assert 0 < sum(seconds for seconds, _ in on.phases.values()) <= on.seconds
