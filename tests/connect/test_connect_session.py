"""What a Spark Connect session shows that a classic one does not (docs/spark-connect.md). These
tests run only in the Spark Connect group (``tests/connect/test_on_spark_connect.py``), whose test
session is a Spark Connect one; in any other run they are skipped."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pytest
from pyspark.serializers import CloudPickleSerializer

import streamql as sq
from conftest import CONNECT
from streamql.spark.compat import pyspark_version
from streamql.spark.runtime.connect import is_connect, is_session, parallelism
from streamql.spark.runtime.phases import recording
from streamql.spark.runtime import workers
from streamql.spark.runtime.workers import run_probe
from streamql.time import from_micros
from support.frames import frame
from support.json_readings import SCHEMA, Price, Priced, put, rows, sink_rows
from support.streaming_job import Reading as StreamReading

pytestmark = pytest.mark.skipif(not CONNECT, reason="runs in the Spark Connect group only (STREAMQL_SESSION=connect)")


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: float


READINGS = sq.input("readings", Reading, sq.Shape.POINT)
EVERY_4 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4))  # no flush: no final step
EVERY = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1, delay=timedelta(0)),
                               policy=sq.AdvanceTimePolicy.DROP)


def _items() -> list[Any]:
    return [sq.Insert(from_micros(t), from_micros(t + 1), Reading(m, w))
            for t, m, w in [(0, "a", 1.0), (5, "b", 2.0), (3, "a", 9.0), (12, "a", 4.0), (20, "b", 1.0)]]


def test_the_session_is_a_spark_connect_one(spark: Any) -> None:
    assert is_connect(spark) and is_session(spark)
    assert parallelism(spark) == 2  # local[2]
    assert sq.local_session(connect=True) is spark  # the active Connect session, as it is


def test_a_query_gives_the_reference_result_and_counts_no_jobs(spark: Any) -> None:
    q = READINGS.group_by(lambda r: r.meter).tumbling_window(timedelta(microseconds=10)).select(
        lambda w: Reading(w.key, w.sum(lambda r: r.watts)))
    items = _items()
    binder = sq.Binder(spark).bind(READINGS, frame(spark, Reading, sq.Shape.POINT, items), start="start",
                                   kind="kind", advance_time=EVERY)
    with recording(spark) as phases:
        result = binder.run(q, late=True)
    expected = sq.reference.run(q, {"readings": sq.reference.ReferenceInput(items, EVERY)}, late=True)
    assert result == expected
    assert result.dropped == 1 and len(result.late) == 1  # the reading at 3 came after the CTI at 5
    assert result.events  # windows were released
    assert phases.jobs is None and all(p.jobs is None for p in phases.by_name.values())
    assert "job" not in phases.table()


def test_the_workers_are_probed_through_the_server(spark: Any) -> None:
    probe = run_probe(spark)
    assert probe.failures == ()


def test_the_first_summary_pass_checks_the_workers_through_the_server(spark: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    binder = sq.Binder(spark).bind(READINGS, frame(spark, Reading, sq.Shape.POINT, _items()), start="start",
                                   kind="kind", advance_time=EVERY)
    q = READINGS.where(lambda r: r.watts > 1)
    monkeypatch.setattr(workers, "_checked", {})
    expected = binder.run(q)
    assert workers._checked == {f"connect/{spark.session_id}": None}  # checked by the summary pass
    # a module the workers lack: the BindingError of the probe, from the summary pass
    monkeypatch.setattr(workers, "_checked", {})
    monkeypatch.setattr(workers, "NEEDED", (*workers.NEEDED, "streamql_absent_module"))
    with pytest.raises(sq.BindingError) as caught:
        binder.run(q)
    message = str(caught.value)
    assert "cannot import streamql_absent_module (ModuleNotFoundError" in message
    assert "the Spark Connect server's" in message
    monkeypatch.setattr(workers, "_checked", {})
    with pytest.raises(sq.BindingError) as probed:
        workers.check_workers(spark)
    assert str(probed.value) == message
    monkeypatch.setattr(workers, "NEEDED", workers.NEEDED[:-1])
    monkeypatch.setattr(workers, "_checked", {})
    assert binder.run(q) == expected


def batch_rows(events: list[Any]) -> list[tuple[Any, ...]]:
    def naive(t: datetime) -> datetime:  # the sink's timestamps come back in the session's zone (UTC)
        return t.astimezone(timezone.utc).replace(tzinfo=None)
    return sorted((naive(e.start), naive(e.end), *e.payload.__dict__.values()) for e in events)


def _global_views(spark: Any) -> list[str]:
    return sorted(t.name for t in spark.catalog.listTables("global_temp") if t.name.startswith("streamql_"))


@pytest.mark.skipif(pyspark_version() < (4, 0), reason="PySpark 3.5's Connect client: running queries are refused "
                    "(tests/compat/test_version_differences.py)")
def test_a_running_query_reads_static_inputs_through_global_views_across_a_restart(spark: Any, tmp_path: Path) -> None:
    """Static inputs (rows the client sent, and files) are read in the server's foreachBatch session
    through global temporary views: the live run, stopped and started again, releases what the
    reference evaluator releases; the runner sent to the server names the views, and stop drops them."""
    readings = sq.input("readings", StreamReading)
    tariffs, later = sq.input("tariffs", Price, sq.Shape.INTERVAL), sq.input("later", Price, sq.Shape.INTERVAL)
    q = (readings.alter_duration(timedelta(seconds=5))
         .join(tariffs.union(later), None, lambda r, t: Priced(r.meter, t.item, r.consumption * t.price)))
    day = datetime(2026, 1, 1, tzinfo=timezone.utc)
    prices = "start timestamp, end timestamp, item string, price double"
    sent = spark.createDataFrame([(day, day + timedelta(minutes=3), "peak", 2.0)], prices)  # rows from the client
    files = tmp_path / "later-tariffs"
    spark.createDataFrame([(day + timedelta(minutes=3), sq.INFINITY, "off", 0.5)], prices).write.parquet(str(files))
    until_readings = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("readings"))

    def bound(source: Any) -> sq.Binder:
        return (sq.Binder(spark).bind(readings, source, start="ts", advance_time=EVERY_4)
                .bind(tariffs, sent, start="start", end="end", advance_time=until_readings)
                .bind(later, spark.read.parquet(str(files)), start="start", end="end", advance_time=until_readings))

    data = rows(0, 30)
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    put(source, 0, data[:17])
    binder = bound(spark.readStream.schema(SCHEMA).json(str(source)))
    first = binder.start(q, sink=str(sink), checkpoint=str(checkpoint))
    views = sorted(v.split(".")[1] for v in first._runner.views.values())
    assert len(views) == 2 and _global_views(spark) == views
    shipped = cast(Any, CloudPickleSerializer)().dumps(first._runner.run_batch)  # what foreachBatch sends the server
    assert all(v.encode() in shipped for v in views) and str(files).encode() not in shipped
    first.process_all_available()
    first.stop(flush=False)
    assert _global_views(spark) == []
    put(source, 1, data[17:])
    second = binder.start(q, sink=str(sink), checkpoint=str(checkpoint))  # the static inputs were read: views again
    assert len(_global_views(spark)) == 2
    second.process_all_available()
    second.stop()
    last = second.result().final_cti
    assert last is not None and last < sq.INFINITY
    assert _global_views(spark) == []
    tick = timedelta(microseconds=1)
    expected = sq.reference.run(q, {
        "readings": sq.reference.ReferenceInput(
            [sq.Insert(r["ts"], r["ts"] + tick, StreamReading(r["meter"], r["consumption"])) for r in data], EVERY_4),
        "tariffs": sq.reference.ReferenceInput([sq.Insert(day, day + timedelta(minutes=3), Price("peak", 2.0))],
                                               until_readings),
        "later": sq.reference.ReferenceInput([sq.Insert(day + timedelta(minutes=3), sq.INFINITY, Price("off", 0.5))],
                                             until_readings)})
    assert expected.events and sink_rows(spark, sink) == batch_rows(expected.events)
    result = second.result()
    assert (result.dropped, result.adjusted, result.bad_rows, result.final_cti) == \
        (expected.dropped, expected.adjusted, expected.bad_rows, expected.final_cti)
    assert [p.batch for p in second.progress] == [1]  # the restart went on from the first run's micro-batch
