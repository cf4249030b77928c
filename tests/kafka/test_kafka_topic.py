"""A Kafka topic of four partitions on a real broker (tests/kafka/conftest.py), bound as a
partitioned input: a live query over ``readStream.format("kafka")``, a few offsets per
micro-batch, releases what a batch run over ``read.format("kafka")`` of the same topic releases —
and what the reference evaluator releases for the topic's partitions —, stopped and started again
or killed with SIGKILL and started again it loses and repeats nothing, and its late records name
the partition and offset of the readings they are."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from support import kafka_topic as kt
from support.kafka_broker import Broker

pytestmark = pytest.mark.kafka

#: readings per partition in a topic
PER_PARTITION = 36
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def naive(t: datetime) -> datetime:
    return t.astimezone(timezone.utc).replace(tzinfo=None)


def batch_rows(spark: SparkSession, broker: Broker, topic: str) -> list[tuple[Any, ...]]:
    events = kt.bind(spark, kt.read(spark, broker.bootstrap, topic)).collect(kt.QUERY)
    return sorted((naive(e.start), naive(e.end), e.payload.meter, e.payload.count, e.payload.total) for e in events)


def late_rows(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    """The late records at ``path`` (a late sink) as (partition, offset, action, start, meter)."""
    return sorted(tuple(r) for r in spark.read.parquet(path).select(
        "partition", "arrival", "action", "start", "payload.meter").collect())


def batch_late_rows(spark: SparkSession, broker: Broker, topic: str) -> list[tuple[Any, ...]]:
    late = kt.bind(spark, kt.read(spark, broker.bootstrap, topic)).late(kt.QUERY)
    return sorted(tuple(r) for r in late.select("partition", "arrival", "action", "start", "payload.meter").collect())


def test_the_topic_has_four_partitions_one_far_behind_and_readings_out_of_order(
        spark: SparkSession, broker: Broker, topic: str) -> None:
    kt.produce(spark, broker.bootstrap, topic, kt.records(0, PER_PARTITION))
    rows = kt.parsed(kt.read(spark, broker.bootstrap, topic)).collect()
    by_partition: dict[int, list[Any]] = {}
    for row in sorted(rows, key=lambda r: (r.partition, r.offset)):
        by_partition.setdefault(row.partition, []).append(row)
    assert sorted(by_partition) == [0, 1, 2, 3]
    for partition, readings in by_partition.items():
        assert [r.offset for r in readings] == list(range(PER_PARTITION))
        # the keys spread the meters: two meters a partition, each in one partition only
        assert {r.meter for r in readings} == {f"m{partition}", f"m{partition + 4}"}
        times = [r.ts for r in readings]
        assert times != sorted(times), "no reading out of order in the partition"
    assert max(r.ts for r in by_partition[3]) < min(r.ts for r in by_partition[0])  # far behind


def test_a_live_query_over_the_topic_releases_what_the_batch_run_and_the_reference_release(
        spark: SparkSession, broker: Broker, topic: str, tmp_path: Path) -> None:
    kt.produce(spark, broker.bootstrap, topic, kt.records(0, PER_PARTITION))
    sink, late_sink = tmp_path / "out", tmp_path / "late"
    running = kt.bind(spark, kt.read_stream(spark, broker.bootstrap, topic, per_trigger=30)).start(
        kt.QUERY, sink=str(sink), checkpoint=str(tmp_path / "ck"), late_sink=str(late_sink))
    running.process_all_available()
    running.stop()
    expected = batch_rows(spark, broker, topic)
    assert kt.released_rows(spark, str(sink)) == expected
    # several micro-batches of at most 30 offsets: 144 records, then the flush
    progress = running.progress
    assert len(progress) >= 5 and sum(p.input_rows["readings"] for p in progress) == 4 * PER_PARTITION
    assert sum(p.released for p in progress) == len(expected)
    # each partition's CTI: the input's is the least, partition 3's (a second behind the others)
    for p in progress[:-1]:
        ctis = p.partition_ctis["readings"]
        assert sorted(ctis) == [0, 1, 2, 3] and ctis[3] is not None, ctis
        assert p.input_ctis["readings"] == ctis[3] < min(ctis[0], ctis[1], ctis[2])
    assert progress[-1].input_ctis["readings"] == sq.INFINITY  # the flush
    # the batch run is the reference evaluator's over the topic's partitions, each in offset order
    records = sorted(kt.parsed(kt.read(spark, broker.bootstrap, topic)).collect(), key=lambda r: (r.partition, r.offset))
    partitions: dict[int | str, list[InputItem[kt.Reading]]] = {
        p: [sq.Insert(EPOCH + timedelta(microseconds=r.ts), EPOCH + timedelta(microseconds=r.ts) + sq.TICK,
                      kt.Reading(r.meter, r.consumption)) for r in records if r.partition == p]
        for p in range(kt.PARTITIONS)}
    spec = sq.reference.run(kt.QUERY, {"readings": sq.reference.PartitionedInput(partitions, kt.SETTINGS)})
    assert sorted((naive(e.start), naive(e.end), e.payload.meter, e.payload.count, e.payload.total)
                  for e in spec.events) == expected
    # the late records: the live run's are the batch run's, each names the partition and offset
    # of a reading of the topic older than its partition's CTI
    live_late = late_rows(spark, str(late_sink))
    assert live_late == batch_late_rows(spark, broker, topic)
    assert live_late and all(action == "dropped" for _, _, action, _, _ in live_late)
    at = {(str(r.partition), r.offset): r for r in records}  # a late record's partition: its value as a string
    for partition, offset, _, start, meter in live_late:
        reading = at[(partition, offset)]
        assert (reading.meter, EPOCH + timedelta(microseconds=reading.ts)) == (meter, start.replace(tzinfo=timezone.utc))
    # and some readings out of order were accepted (not older than their partition's CTI)
    disordered = sum(1 for p in range(kt.PARTITIONS) for j in range(PER_PARTITION) if j % 6 == 5)
    assert len(live_late) < disordered


def test_a_query_stopped_and_started_again_loses_and_repeats_nothing(
        spark: SparkSession, broker: Broker, topic: str, tmp_path: Path) -> None:
    sink, late_sink, checkpoint = str(tmp_path / "out"), str(tmp_path / "late"), str(tmp_path / "ck")
    kt.produce(spark, broker.bootstrap, topic, kt.records(0, PER_PARTITION // 2))
    binder = kt.bind(spark, kt.read_stream(spark, broker.bootstrap, topic, per_trigger=25))
    first = binder.start(kt.QUERY, sink=sink, checkpoint=checkpoint, late_sink=late_sink)
    first.process_all_available()
    first.stop(flush=False)  # a pause: no final CTI
    kt.produce(spark, broker.bootstrap, topic, kt.records(PER_PARTITION // 2, PER_PARTITION // 2))
    second = binder.start(kt.QUERY, sink=sink, checkpoint=checkpoint, late_sink=late_sink)
    second.process_all_available()
    second.stop()
    assert kt.released_rows(spark, sink) == batch_rows(spark, broker, topic)
    assert late_rows(spark, late_sink) == batch_late_rows(spark, broker, topic)
    # the second run went on from the first one's micro-batches
    assert second.progress[0].batch == first.progress[-1].batch + 1


def test_a_query_killed_mid_run_and_started_again_loses_and_repeats_nothing(
        spark: SparkSession, broker: Broker, topic: str, connector: list[str], tmp_path: Path) -> None:
    kt.produce(spark, broker.bootstrap, topic, kt.records(0, PER_PARTITION))
    sink, late_sink, checkpoint = tmp_path / "out", tmp_path / "late", tmp_path / "ck"
    child = subprocess.Popen([sys.executable, kt.__file__, broker.bootstrap, topic, str(sink), str(late_sink),
                              str(checkpoint), ",".join(connector)], env=dict(os.environ),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # kill the child (and its JVM) once two micro-batches are committed and Spark has planned
        # one more (its offsets are written) that streamql has not committed: that step is under way
        states = checkpoint / "streamql"

        def in_a_step() -> bool:
            done = {int(p.name[len("state-"):]) for p in states.glob("state-*")}
            planned = [int(p.name) for p in (checkpoint / "spark" / "offsets").glob("[0-9]*")]
            return len(done) >= 2 and max(planned, default=-1) >= 2 and max(planned) not in done

        deadline = time.time() + 300
        while time.time() < deadline and not in_a_step() and child.poll() is None:
            time.sleep(0.05)
        assert child.poll() is None, "the streaming job ended by itself"
        assert len(list(states.glob("state-*"))) >= 2, "the streaming job made no progress"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    running = kt.bind(spark, kt.read_stream(spark, broker.bootstrap, topic, per_trigger=20)).start(
        kt.QUERY, sink=str(sink), checkpoint=str(checkpoint), late_sink=str(late_sink))
    running.process_all_available()
    running.stop()
    assert kt.released_rows(spark, str(sink)) == batch_rows(spark, broker, topic)
    assert late_rows(spark, str(late_sink)) == batch_late_rows(spark, broker, topic)
    assert running.progress[0].batch >= 2  # the restarted run went on from the killed one's micro-batches
