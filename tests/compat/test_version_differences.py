"""What differs between Spark versions and touches streamql (docs/compatibility.md), each checked
on the session's own version: the same query gives the same Result — or the same error — on every
supported PySpark. Run in the compatibility group on every version (``.ci/matrix``) and in the
default tier on the newest."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.time import from_micros
from streamql.spark.compat import pyspark_version
from streamql.spark.runtime.connect import is_connect
from support.frames import frame

pytestmark = pytest.mark.compat

BIG = 2**62


@dataclass(frozen=True)
class N:
    k: str
    v: int


SOURCE = sq.input("n", N, sq.Shape.POINT)
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))


def _items(*values: int) -> list[Any]:
    return [sq.Insert(from_micros(i), from_micros(i + 1), N("a", v)) for i, v in enumerate(values)]


def _bound(spark: SparkSession, items: list[Any]) -> sq.Binder:
    return sq.Binder(spark).bind(SOURCE, frame(spark, N, sq.Shape.POINT, items, partitions=1), start="start",
                                 kind="kind", advance_time=FLUSH)


def _ansi(spark: SparkSession) -> str | None:
    return spark.conf.get("spark.sql.ansi.enabled", None)


@pytest.mark.parametrize("ansi", ["false", "true"])
def test_an_overflowing_long_is_an_error_whatever_the_sessions_ansi_mode(spark: SparkSession, ansi: str) -> None:
    """A 64-bit overflow in a payload expression fails the run, as in Spark 4's default ANSI mode,
    also where the session runs without it (Spark 3.5's default): never a wrapped-around value. The
    session's own setting is left as it was."""
    before = _ansi(spark)
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        q = SOURCE.select(lambda e: N(e.k, e.v * 4 + e.v))
        ok = _bound(spark, _items(3, 5)).run(q)
        assert ok == sq.reference.run(q, {"n": sq.reference.ReferenceInput(_items(3, 5), FLUSH)})
        with pytest.raises(Exception, match="(?i)overflow"):
            _bound(spark, _items(3, BIG)).run(q)
        assert _ansi(spark) == ansi
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before or "true")


@pytest.mark.parametrize("ansi", ["false", "true"])
def test_an_overflowing_sum_is_an_error_whatever_the_sessions_ansi_mode(spark: SparkSession, ansi: str) -> None:
    before = _ansi(spark)
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        q = SOURCE.tumbling_window(timedelta(microseconds=10)).select(lambda w: N("sum", w.sum(lambda e: e.v)))
        with pytest.raises(Exception, match="(?i)overflow"):
            _bound(spark, _items(BIG, BIG, BIG)).run(q)
        assert _ansi(spark) == ansi
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before or "true")


def test_a_running_query_over_spark_connect_on_pyspark_3_5_is_a_named_error(spark: SparkSession, tmp_path: Any) -> None:
    """PySpark 3.5's Spark Connect client fills no ``Observation`` in, which every step of a running
    query reads: ``start`` refuses, naming the version and the feature (4.x runs it:
    tests/connect/test_connect_session.py)."""
    if not is_connect(spark) or pyspark_version() >= (4, 0):
        pytest.skip("a Spark Connect session of PySpark 3.5 only")
    (tmp_path / "in").mkdir()
    stream = spark.readStream.schema("start long, kind string, k string, v long").json(str(tmp_path / "in"))
    binder = sq.Binder(spark).bind(SOURCE, stream, start="start", kind="kind")
    with pytest.raises(sq.BindingError, match=r"PySpark 4\.0 or later.*PySpark 3\.5.*observed metrics"):
        binder.start(SOURCE, sink=str(tmp_path / "sink"), checkpoint=str(tmp_path / "checkpoint"))


def test_parquet_timestamps_are_microseconds_from_spark_4_2_and_where_the_session_asks_before(
        spark: SparkSession, tmp_path: Any) -> None:
    """streamql's parquet writes ask for 64-bit microseconds (``PARQUET_OPTIONS``): Spark takes that
    write option from 4.2 on; before, the session's ``spark.sql.parquet.outputTimestampType`` decides
    — INT96 by default, which pyarrow reads as nanoseconds — and a user who sets it gets
    microseconds (docs/binding.md, docs/decisions.md "Parquet timestamps")."""
    import pyarrow.parquet as pq

    binder = _bound(spark, _items(1, 2))
    expected = [(from_micros(0), from_micros(1)), (from_micros(1), from_micros(2))]

    def written(name: str) -> tuple[list[str], list[tuple[Any, Any]]]:
        binder.write(SOURCE, str(tmp_path / name), format="parquet")
        table = pq.read_table(str(tmp_path / name))
        return ([str(table.schema.field(c).type) for c in ("start", "end")],
                sorted(zip(table.column("start").to_pylist(), table.column("end").to_pylist())))

    micros = ["timestamp[us, tz=UTC]"] * 2
    key = "spark.sql.parquet.outputTimestampType"
    before = spark.conf.get(key, None)
    if tuple(int(p) for p in spark.version.split(".")[:2]) >= (4, 2):
        spark.conf.set(key, "INT96")  # the write's own option wins over the session's
        try:
            assert written("asked") == (micros, expected)
        finally:
            spark.conf.set(key, before) if before is not None else spark.conf.unset(key)
        return
    assert before in (None, "INT96"), "the test expects the session's default"
    types, _ = written("default")
    assert types == ["timestamp[ns]"] * 2  # INT96
    spark.conf.set(key, "TIMESTAMP_MICROS")
    try:
        assert written("asked") == (micros, expected)
    finally:
        spark.conf.unset(key)
