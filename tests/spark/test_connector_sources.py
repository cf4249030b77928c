"""A batch run reads a connector's source once (streamql/spark/runtime/sources.py): a source that
gives each Spark job other rows — here a Python data source whose rows grow each time a job plans
it, as a Kafka topic being written does with ``endingOffsets=latest`` — still gives the run one set
of rows, the set it had when the run began, and the run releases what the reference evaluator
releases for it."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.runtime.sources import rereads_source
from streamql.time import from_micros

datasource = pytest.importorskip("pyspark.sql.datasource", reason="Python data sources came with PySpark 4.0")


@dataclass(frozen=True)
class Reading:
    meter: str
    value: int


@dataclass(frozen=True)
class Total:
    meter: str
    total: int


READINGS = sq.input("readings", Reading)
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2, flush=True))
QUERY = (READINGS.group_by(lambda e: e.meter).tumbling_window(timedelta(microseconds=40))
         .select(lambda w: Total(w.key, w.sum(lambda e: e.value))))
#: the rows of the growing source
FIRST = 6


def rows(n: int) -> list[tuple[int, str, int]]:
    """(ts, meter, value) as the ``n``-th job to read the source (from 0) reads them: ``FIRST + 3 n``
    rows, 10 us apart, the later ones appended."""
    return [(10 * i, f"m{i % 2}", i) for i in range(FIRST + 3 * n)]


class Growing(datasource.DataSource):  # type: ignore[misc, name-defined]
    """Rows that grow by three each time a job reads the source (its ``counter`` file counts the
    reads; one partition: one read a job)."""

    @classmethod
    def name(cls) -> str:
        return "streamql_test_growing"

    def schema(self) -> str:
        return "ts long, meter string, value long"

    def reader(self, schema: Any) -> Any:
        return GrowingReader(self.options["counter"])


class GrowingReader(datasource.DataSourceReader):  # type: ignore[misc, name-defined]
    def __init__(self, counter: str) -> None:
        self.counter = Path(counter)

    def read(self, partition: Any) -> Iterator[tuple[int, str, int]]:
        done = int(self.counter.read_text()) if self.counter.exists() else 0
        self.counter.write_text(str(done + 1))
        yield from rows(done)


@pytest.fixture
def growing(spark: SparkSession, tmp_path: Path) -> Any:
    spark.dataSource.register(Growing)
    return spark.read.format("streamql_test_growing").option("counter", str(tmp_path / "reads")).load()


def test_the_source_gives_each_job_other_rows(spark: SparkSession, growing: Any) -> None:
    first, second = growing.count(), growing.count()
    assert second == first + 3


def test_a_batch_run_reads_it_once_and_releases_what_the_reference_releases(spark: SparkSession, growing: Any,
                                                                           tmp_path: Path) -> None:
    reads = tmp_path / "reads"
    before = int(reads.read_text()) if reads.exists() else 0
    result = sq.Binder(spark).bind(READINGS, growing, start="ts", advance_time=SETTINGS).run(QUERY)
    # the rows as the run's first job read them: every later job read those, not the source
    items = [sq.Insert(from_micros(ts), from_micros(ts + 1), Reading(meter, value))
             for ts, meter, value in rows(before)]
    expected = sq.reference.run(QUERY, {"readings": sq.reference.ReferenceInput(items, SETTINGS)})
    assert sorted(map(repr, result.events)) == sorted(map(repr, expected.events))
    assert result.final_cti == expected.final_cti
    assert int(reads.read_text()) == before + 1  # the source was read once


def test_sources_that_read_the_same_rows_in_every_job_are_read_as_they_are(spark: SparkSession,
                                                                             growing: Any, tmp_path: Path) -> None:
    local = spark.createDataFrame(rows(0), "ts long, meter string, value long")
    local.write.parquet(str(tmp_path / "files"))
    files = spark.read.parquet(str(tmp_path / "files"))
    assert not rereads_source(local)
    assert not rereads_source(files.where("value > 1").select("ts", "meter", "value"))
    assert not rereads_source(spark.range(3))
    assert rereads_source(growing)
    assert rereads_source(files.unionByName(growing))
