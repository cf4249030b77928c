"""Many queries in one running query (``Binder.start_many``): one Structured Streaming query, one
checkpoint, one sink per query; every micro-batch scans each input once for all of them, and each
query releases — micro-batch by micro-batch, across a restart — what ``start`` of it alone releases."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
from pyspark.sql import SparkSession

import streamql as sq
import streamql.spark.ingress.imports
from streamql.spark.ingress.scan import run_ingress
from support.json_readings import EVERY_4, READINGS, SCHEMA, averages, put, rows
from support.streaming_job import Average

busy = READINGS.where(lambda e: e.consumption > 2.0)
QUERIES: dict[str, sq.Stream[Any]] = {
    "averages": averages(READINGS),
    "busy": busy,
    "busy_averages": averages(busy),  # shares the prefix of "busy"
    "high": averages(busy).where(lambda a: a.average >= 4.0),
}
PARTS = [(0, 10), (10, 25), (25, 36)]  # the readings of each file


def all_rows(spark: SparkSession, sink: Path) -> list[tuple[Any, ...]]:
    """The sink's rows with their micro-batch."""
    if not sink.exists():
        return []
    return sorted(tuple(r) for r in spark.read.parquet(str(sink)).collect())


def replay(tmp_path: Path, label: str, start: Callable[[sq.Binder, Path], sq.RunningQuery[Any]],
           spark: SparkSession) -> list[sq.RunningQuery[Any]]:
    """The files of ``PARTS`` arriving one by one; after the second the query is paused and
    started again with the same checkpoint; after the last it stops with the flush."""
    source = tmp_path / label / "in"
    source.mkdir(parents=True)
    data = rows(0, PARTS[-1][1])
    binder = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                   advance_time=EVERY_4)
    runs = []
    for number, (first, end) in enumerate(PARTS):
        put(source, number, data[first:end])
        if number in (0, 2):
            runs.append(start(binder, tmp_path / label))
        runs[-1].process_all_available()
        if number == 1:
            runs[-1].stop(flush=False)  # a pause: the next start continues from the checkpoint
    runs[-1].stop()
    return runs


@pytest.mark.slow
def test_each_query_releases_what_it_releases_alone_across_a_restart(spark: SparkSession, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[str] = []

    def counting(b: Any, *args: Any, **kwargs: Any) -> Any:
        scans.append(b.name)
        return run_ingress(b, *args, **kwargs)

    monkeypatch.setattr(streamql.spark.ingress.imports, "run_ingress", counting)

    def many(binder: sq.Binder, where: Path) -> sq.RunningQuery[Any]:
        return binder.start_many(QUERIES, sinks={name: str(where / name) for name in QUERIES},
                                 checkpoint=str(where / "ck"), name="meters")

    runs = replay(tmp_path, "many", many, spark)
    batches = [p.batch for run in runs for p in run.progress if p.query == "busy"]
    assert batches == [0, 1, 2, 3]  # three files, then the flush
    # one scan of the readings per micro-batch for the four queries
    assert scans == ["readings"] * len(batches)
    monkeypatch.undo()
    # two of the queries run alone through the same replay (one reads the readings, one ends a
    # chain that shares the prefix of "busy" and "busy_averages"): the same rows, micro-batch by
    # micro-batch; every query's final result is the batch run's over all the readings
    for name in ("averages", "high"):
        def alone(binder: sq.Binder, where: Path, q: sq.Stream[Any] = QUERIES[name]) -> sq.RunningQuery[Any]:
            return binder.start(q, sink=str(where / "out"), checkpoint=str(where / "ck"))

        single = replay(tmp_path, name, alone, spark)
        assert all_rows(spark, tmp_path / "many" / name) == all_rows(spark, tmp_path / name / "out"), name
        assert ([(p.batch, p.released, p.output_cti, p.input_ctis) for run in runs for p in run.progress
                 if p.query == name]
                == [(p.batch, p.released, p.output_cti, p.input_ctis) for run in single for p in run.progress]), name
        assert runs[-1].result(name) == single[-1].result()
    data = rows(0, PARTS[-1][1])
    static = sq.Binder(spark).bind(READINGS, spark.createDataFrame(
        [(r["ts"], r["meter"], r["consumption"]) for r in data], SCHEMA).coalesce(1), start="ts", advance_time=EVERY_4)
    for name, q in QUERIES.items():
        fields = len(dataclasses.fields(q.payload_type))
        released = sorted(r[:2 + fields] for r in all_rows(spark, tmp_path / "many" / name))
        assert released == sorted((e.start.replace(tzinfo=None), e.end.replace(tzinfo=None),
                                   *dataclasses.astuple(e.payload)) for e in static.collect(q)), name
    assert all_rows(spark, tmp_path / "many" / "high")  # it released something


@pytest.mark.slow  # the deep tier (the default tier's budget)
def test_as_stream_names_the_query(spark: SparkSession, tmp_path: Path) -> None:
    source = tmp_path / "in"
    data = rows(0, 24)
    put(source, 0, data[:12])
    binder = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                   advance_time=EVERY_4)
    queries: dict[str, sq.Stream[Any]] = {"busy": busy, "averages": averages(READINGS)}
    running = binder.start_many(queries, sinks={n: str(tmp_path / n) for n in queries}, checkpoint=str(tmp_path / "ck"),
                                name="pair")
    with pytest.raises(sq.BindingError, match=r"running query 'pair' runs several queries: name one of 'busy', "
                                              r"'averages'"):
        running.as_stream()
    with pytest.raises(sq.BindingError, match=r"runs no query named 'nope'; its queries are 'busy', 'averages'"):
        running.as_stream("nope")
    consumer = sq.Binder(spark).start(averages(running.as_stream("busy")), sink=str(tmp_path / "downstream"),
                                      checkpoint=str(tmp_path / "ck-downstream"))
    running.process_all_available()
    put(source, 1, data[12:])
    running.process_all_available()
    running.stop()
    consumer.process_all_available()
    consumer.stop()
    composed = sq.Binder(spark).bind(READINGS, spark.createDataFrame(
        [(r["ts"], r["meter"], r["consumption"]) for r in data], SCHEMA).coalesce(1), start="ts",
        advance_time=EVERY_4).collect(averages(busy))
    got = sorted(r[:4] for r in all_rows(spark, tmp_path / "downstream"))
    assert composed and got == sorted((e.start.replace(tzinfo=None), e.end.replace(tzinfo=None), e.payload.meter,
                                       e.payload.average) for e in composed)
    assert isinstance(composed[0].payload, Average)


def test_start_many_checks_sinks_names_and_checkpoints(spark: SparkSession, tmp_path: Path) -> None:
    source = tmp_path / "in"
    put(source, 0, rows(0, 8))
    binder = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                   advance_time=EVERY_4)
    queries: dict[str, sq.Stream[Any]] = {"busy": busy, "averages": averages(READINGS)}
    with pytest.raises(sq.BindingError, match=r"start_many: the keys of sinks must be the query names \('busy', "
                                              r"'averages'\); no sink for 'averages'"):
        binder.start_many(queries, sinks={"busy": str(tmp_path / "busy")}, checkpoint=str(tmp_path / "ck"))
    with pytest.raises(sq.BindingError, match=r"^query 'a/b': a query name of start_many names its directory"):
        binder.start_many({"a/b": busy}, sinks={"a/b": str(tmp_path / "x")}, checkpoint=str(tmp_path / "ck"))
    with pytest.raises(sq.BindingError, match=r"^query 'other': the query reads an input that is not bound: 'other'"):
        binder.start_many({"busy": busy, "other": sq.input("other", Average)},
                          sinks={"busy": str(tmp_path / "b"), "other": str(tmp_path / "o")},
                          checkpoint=str(tmp_path / "ck"))
    running = binder.start_many(queries, sinks={n: str(tmp_path / n) for n in queries}, checkpoint=str(tmp_path / "ck"))
    running.process_all_available()
    running.stop(flush=False)
    with pytest.raises(sq.BindingError, match=r"belongs to the queries 'averages', 'busy'; these are 'busy': start "
                                              r"the same queries"):
        binder.start_many({"busy": busy}, sinks={"busy": str(tmp_path / "busy")}, checkpoint=str(tmp_path / "ck"))
    with pytest.raises(sq.BindingError, match=r"belongs to queries started with start_many"):
        binder.start(busy, sink=str(tmp_path / "busy"), checkpoint=str(tmp_path / "ck"))
    shutil.rmtree(tmp_path / "ck")
