"""Why events of a stream are late (docs/streaming.md, "Why events of a stream are late"): Spark's
file source takes files by modification time, so a file whose arrival values are earlier can come
in a later micro-batch than a file with later ones; its events are then late by the CTIs the
earlier micro-batch committed. The running query counts them as the reference evaluator does on
the rows in the order Spark took them, and says why: ``Progress.arrival_went_back`` names the
input and the arrival values that went back, the late records give it as their reason, and an
``sq.errors.ArrivalOrderWarning`` is issued."""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

import streamql as sq
from streamql.errors import ArrivalOrderWarning
from streamql.payload import schema_of
from streamql.running import MICRO_BATCH, ArrivalWentBack, _progress_json, _progress_of, went_back_message
from streamql.spark.ingress.late import late_records
from streamql.spark.streaming.state import InputState, RunState
from streamql.spark.streaming.step import Plan, _arrival_went_back, empty_carried, step
from support.frames import bind, frame
from support.json_readings import EVERY_4, READINGS, averages, rows
from support.streaming_job import Reading
from support.streams import P

#: the readings with their arrival value (``arr``: the order they were produced in)
SCHEMA = T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("meter", T.StringType()),
                       T.StructField("consumption", T.DoubleType()), T.StructField("arr", T.LongType())])


def produced(count: int) -> list[dict[str, Any]]:
    """Readings every 10 s with arrival values 0, 1, ... in the order they were produced."""
    return [{**r, "arr": i} for i, r in enumerate(rows(0, count))]


def write(directory: Path, name: str, batch: list[dict[str, Any]], modified: float) -> None:
    """One JSON file whole (written hidden, renamed), with the modification time ``modified``."""
    directory.mkdir(parents=True, exist_ok=True)
    hidden = directory / f".{name}"
    hidden.write_text("".join(json.dumps({**r, "ts": r["ts"].isoformat()}) + "\n" for r in batch))
    os.utime(hidden, (modified, modified))
    os.rename(hidden, directory / name)


def reference_late(taken: list[dict[str, Any]]) -> sq.Result[Any]:
    """The reference evaluator on the rows in the order Spark took them (list order = arrival order)."""
    items = [sq.Insert(r["ts"], r["ts"] + timedelta(microseconds=1), Reading(r["meter"], r["consumption"]))
             for r in taken]
    return sq.reference.run(averages(READINGS), {"readings": sq.reference.ReferenceInput(items, EVERY_4)}, late=True)


def naive(t: datetime | None) -> datetime | None:
    """A UTC time as Spark collects a timestamp (without its zone)."""
    return None if t is None else t.replace(tzinfo=None)


def test_a_file_taken_after_a_later_one_is_late_and_the_run_says_why(spark: SparkSession, tmp_path: Path) -> None:
    # two files written one after the other; the file source takes them by modification time, and
    # the second-written file (later arrival values) has the older one (as two files written
    # within one clock tick come in directory order): it comes in micro-batch 0, the first file's
    # readings in micro-batch 1, behind the CTI micro-batch 0 committed
    data = produced(12)
    source, late_sink = tmp_path / "in", tmp_path / "late"
    now = time.time()
    write(source, "readings-a.json", data[:6], now - 50)
    write(source, "readings-b.json", data[6:], now - 100)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    binder = sq.Binder(spark).bind(READINGS, stream, start="ts", arrival="arr", advance_time=EVERY_4)
    with pytest.warns(ArrivalOrderWarning, match=r"input 'readings' received rows with arrival values from 0, "
                                                 r"before 11"):
        running = binder.start(averages(READINGS), sink=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                                late_sink=str(late_sink), feed=False)
        running.process_all_available()
        running.stop(flush=False)  # (the flush drops nothing more: a step less)
    progress = running.progress
    assert [p.input_rows["readings"] for p in progress] == [6, 6]
    # the order Spark took them: file b (its rows by arrival value), then file a
    expected = reference_late(data[6:] + data[:6])
    assert expected.dropped > 0
    assert progress[-1].dropped == expected.dropped
    assert progress[0].arrival_went_back == {}
    assert progress[1].arrival_went_back == {"readings": ArrivalWentBack(least=0, greatest_before=11)}
    # the late records: the reference's (arrival values aside: its are list positions), each with the reason
    written = spark.read.parquet(str(late_sink)).collect()
    assert sorted((r["action"], r["start"], r["cti"], r["payload"]["meter"], r["arrival"]) for r in written) == \
        sorted((e.action, naive(e.start), naive(e.cti), e.payload.meter, (e.arrival or 0) - 6) for e in expected.late)
    assert {r[MICRO_BATCH] for r in written} == {1}
    assert all(r["reason"] is not None and r["reason"].startswith(
        "arrived in micro-batch 1 after arrival value 11 of an earlier micro-batch") for r in written)


@pytest.mark.slow
def test_files_taken_in_arrival_order_go_back_nowhere(spark: SparkSession, tmp_path: Path) -> None:
    # the same files, the first one's modification time older: nothing goes back, nothing is late
    data = produced(12)
    now = time.time()
    ordered = tmp_path / "ordered"
    write(ordered, "readings-a.json", data[:6], now - 100)
    write(ordered, "readings-b.json", data[6:], now - 50)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(ordered))
    running = sq.Binder(spark).bind(READINGS, stream, start="ts", arrival="arr", advance_time=EVERY_4).start(
        averages(READINGS), sink=str(tmp_path / "out2"), checkpoint=str(tmp_path / "ck2"), feed=False)
    running.process_all_available()
    running.stop()
    assert [p.arrival_went_back for p in running.progress] == [{}] * len(running.progress)
    assert running.progress[-1].dropped == reference_late(data).dropped == 0


def test_the_greatest_arrival_goes_on_in_the_state_and_equal_values_do_not_go_back() -> None:
    assert _arrival_went_back(None, None) == (None, None)
    assert _arrival_went_back(None, (3, 9)) == (None, 9)  # the first micro-batch
    assert _arrival_went_back(9, None) == (None, 9)  # no rows, or no arrival column
    assert _arrival_went_back(9, (9, 12)) == (None, 12)  # an equal arrival value is not before
    assert _arrival_went_back(9, (4, 7)) == (ArrivalWentBack(4, 9), 9)  # the greatest stays
    assert _arrival_went_back(9, (8, 20)) == (ArrivalWentBack(8, 9), 20)
    # a checkpoint written before the greatest arrival was kept loads, without one
    old = RunState(inputs={"readings": InputState()}).to_json().replace(', "arrival_max": null', "")
    assert "arrival_max" not in old
    assert RunState.from_json(old).inputs["readings"].arrival_max is None
    # the warning shows the values of a timestamp arrival column as times
    assert "from 2026-01-01T00:00:00+00:00, before 2026-01-01T00:01:00+00:00," in went_back_message(
        "q", "readings", 1, ArrivalWentBack(1_767_225_600_000_000, 1_767_225_660_000_000), timestamps=True)
    # a progress record as a Spark Connect server writes it for the client, and one written before
    record = sq.Progress(batch=1, input_rows={"readings": 3}, released=0, input_ctis={"readings": None},
                         output_cti=None, dropped=3, adjusted=0, bad_rows=0, state_rows=0, started=0.0, seconds=1.0,
                         arrival_went_back={"readings": ArrivalWentBack(0, 5)})
    assert _progress_of(_progress_json(record)) == record
    earlier = json.loads(_progress_json(record))
    del earlier["arrival_went_back"]
    assert _progress_of(json.dumps(earlier)) == attrs.evolve(record, arrival_went_back={})


@pytest.mark.slow
def test_an_edge_event_late_by_a_micro_batch_that_went_back_says_so_when_it_is_decided(spark: SparkSession) -> None:
    # micro-batch 1's arrival values (0-2) are before micro-batch 0's (10-12): a's end edge comes
    # behind the CTI 30 (ADJUST empties the event: dropped, decided now) and d's start edge is moved
    # to it, its record made in micro-batch 2, when its end edge comes (arrival 20: not back); b's
    # start edge was late in micro-batch 0 already, by the data (its record: no reason)
    source = sq.input("in", P, sq.Shape.EDGE)
    edge = sq.Shape.EDGE
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True),
                                policy=sq.AdvanceTimePolicy.ADJUST)
    a, b, c, d = (P(i, i, name, None) for i, name in enumerate("abcd"))
    batches: list[tuple[int, list[Any]]] = [
        (10, [sq.StartEdge(10, a), sq.StartEdge(5, b), sq.StartEdge(30, c)]),
        (0, [sq.EndEdge(5, 40, b), sq.EndEdge(10, 20, a), sq.StartEdge(2, d)]),
        (20, [sq.EndEdge(2, 50, d)])]
    binder = bind(sq.Binder(spark), source, frame(spark, P, edge, batches[0][1], arrival=True), edge, at, arrival=True)
    plan = Plan(source.node, {"in": binder.bindings["in"]}, (sq.Shape.INTERVAL,))
    carried = empty_carried(plan)
    records: list[sq.Late] = []
    went_back = []
    for batch, (first, items) in enumerate(batches):
        rows = frame(spark, P, edge, items, arrival=True, first_arrival=first, seed=batch)
        outcome = step(spark, plan, carried, {"in": rows}, batch, final=batch == len(batches) - 1)
        records += late_records("in", schema_of(P), outcome.late["in"].frame)
        went_back.append(dict(outcome.arrival_went_back))
        carried = outcome.carried
        outcome.unpersist()
    assert went_back == [{}, {"in": ArrivalWentBack(0, 12)}, {}]
    assert carried.state.inputs["in"].arrival_max == 20
    expected = sq.reference.run(source, {"in": sq.reference.ReferenceInput([i for _, b in batches for i in b], at)},
                                late=True).late
    assert sorted((r.action, r.kind, r.start, r.cti, r.payload.s) for r in records) == \
        sorted((r.action, r.kind, r.start, r.cti, r.payload.s) for r in expected)
    reasons = {r.payload.s: r.reason for r in records}
    assert reasons.keys() == {"a", "b", "d"}
    assert reasons["b"] is None
    assert reasons["a"] is not None and reasons["a"].startswith("arrived in micro-batch 1 after arrival value 12 ")
    assert reasons["d"] == reasons["a"]
