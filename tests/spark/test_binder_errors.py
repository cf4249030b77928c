"""``Binder.bind``/``run`` on Spark: every error path (``BindingError`` before any job runs,
``BadInputError`` for bad rows found at run time, ``bad_rows="drop"``), and what a run gives
back — time columns of either kind, ``INFINITY``, ``to_dataframe``, ``write``, ``collect`` and
payload values of every supported type (docs/time-model.md, docs/payloads.md, docs/binding.md)."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional, cast

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import streamql as sq
from support.frames import bind, frame

UTC = timezone.utc
INF = sq.INFINITY
INF_MICROS = 2**63 - 1


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class Count:
    n: int


@dataclass(frozen=True)
class Inner:
    label: str
    level: Optional[float]


@dataclass(frozen=True)
class Nested:
    n: int
    inner: Inner


@dataclass(frozen=True)
class Everything:
    flag: bool
    n: int
    x: float
    s: str
    raw: bytes
    amount: Decimal
    at: datetime
    span: timedelta
    id: uuid.UUID
    inner: Inner
    maybe_n: Optional[int]
    maybe_s: Optional[str]
    maybe_at: Optional[datetime]
    maybe_inner: Optional[Inner]


READINGS = sq.input("readings", Reading, shape=sq.Shape.INTERVAL)
POINTS = sq.input("readings", Reading, shape=sq.Shape.POINT)
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1000, flush=True))

READING_SCHEMA = "s long, e long, kind string, meter string, consumption double"


def at(second: float) -> datetime:
    return datetime(2009, 7, 15, 9, 0, tzinfo=UTC) + timedelta(seconds=second)


def _t(us: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def micros(t: datetime) -> int:
    return (t - datetime(1970, 1, 1, tzinfo=UTC)) // sq.TICK


def readings(spark: SparkSession, rows: list[tuple[Any, ...]], partitions: int = 1) -> DataFrame:
    """(start, end, kind, meter, consumption) rows with integer-microsecond times."""
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), READING_SCHEMA)


def bound(spark: SparkSession, df: DataFrame, **options: Any) -> sq.Binder:
    return sq.Binder(spark).bind(READINGS, df, start="s", end="e", kind="kind", **options)


# --- BindingError: found when binding, before any job runs ----------------------------------


def test_binding_errors_are_streamql_value_errors() -> None:
    assert issubclass(sq.BindingError, sq.StreamqlError)
    assert issubclass(sq.BindingError, ValueError)
    assert issubclass(sq.BadInputError, sq.StreamqlError)


def test_unbound_input_is_named(spark: SparkSession) -> None:
    with pytest.raises(sq.BindingError, match="the query reads inputs that are not bound: readings"):
        sq.Binder(spark).run(READINGS)
    other = sq.input("other", Count, shape=sq.Shape.POINT)
    df = spark.createDataFrame([(1, 5)], "s long, n long")
    binder = sq.Binder(spark).bind(other, df, start="s")
    with pytest.raises(sq.BindingError, match="not bound: readings"):
        binder.collect(READINGS.where(lambda e: e.consumption > 1))
    with pytest.raises(sq.BindingError, match="not bound: readings"):
        binder.to_dataframe(READINGS)


def test_unknown_columns_are_named_with_the_dataframe_columns(spark: SparkSession) -> None:
    df = readings(spark, [])
    columns = "; its columns are: s, e, kind, meter, consumption"
    binder = sq.Binder(spark)
    with pytest.raises(sq.BindingError, match=re.escape("input 'readings': start column 'ts' is not in the DataFrame" + columns)):
        binder.bind(READINGS, df, start="ts", end="e")
    with pytest.raises(sq.BindingError, match=re.escape("end column 'te' is not in the DataFrame" + columns)):
        binder.bind(READINGS, df, start="s", end="te")
    with pytest.raises(sq.BindingError, match=re.escape("kind column 'type' is not in the DataFrame" + columns)):
        binder.bind(READINGS, df, start="s", end="e", kind="type")
    with pytest.raises(sq.BindingError, match=re.escape("arrival column 'seq' is not in the DataFrame" + columns)):
        binder.bind(READINGS, df, start="s", end="e", arrival="seq")
    with pytest.raises(sq.BindingError, match=re.escape(
            "input 'readings': the DataFrame has no column 'consumption' for Reading.consumption; "
            "its columns are: s, e, kind, meter")):
        binder.bind(READINGS, df.drop("consumption"), start="s", end="e")


def test_column_type_that_cannot_hold_the_field(spark: SparkSession) -> None:
    df = spark.createDataFrame([], "s long, e long, meter string, consumption string")
    with pytest.raises(sq.BindingError, match=r"column 'consumption' is string, which cannot hold a float"):
        sq.Binder(spark).bind(READINGS, df, start="s", end="e")
    as_int = spark.createDataFrame([], "s long, e long, meter long, consumption double")
    with pytest.raises(sq.BindingError, match=r"column 'meter' is bigint, which cannot hold a str"):
        sq.Binder(spark).bind(READINGS, as_int, start="s", end="e")
    # a nested payload: the struct must have the nested fields
    nested = sq.input("nested", Nested, shape=sq.Shape.POINT)
    no_level = spark.createDataFrame([], "s long, n long, inner struct<label: string>")
    with pytest.raises(sq.BindingError, match=r"column 'inner' has no field 'level' for Inner.level"):
        sq.Binder(spark).bind(nested, no_level, start="s")
    flat = spark.createDataFrame([], "s long, n long, inner string")
    with pytest.raises(sq.BindingError, match=r"column 'inner' is string, which cannot hold the payload Inner"):
        sq.Binder(spark).bind(nested, flat, start="s")
    # narrower integer and float columns are fine: they convert without loss
    narrow = spark.createDataFrame([], "s int, e int, meter string, consumption int")
    sq.Binder(spark).bind(READINGS, narrow, start="s", end="e")


def test_timestamp_ntz_and_string_time_columns_say_how_to_convert(spark: SparkSession) -> None:
    ntz = spark.createDataFrame([(datetime(2009, 7, 15), datetime(2009, 7, 16), "m", 1.0)],
                                "s timestamp_ntz, e timestamp_ntz, meter string, consumption double")
    with pytest.raises(sq.BindingError, match=r"start column 's' must be a timestamp or integer microseconds; "
                                              r"it is TIMESTAMP_NTZ .*F\.to_utc_timestamp\(F\.col\('s'\)"):
        sq.Binder(spark).bind(READINGS, ntz, start="s", end="e")
    end_only = ntz.withColumn("s", F.lit(0).cast("long"))
    with pytest.raises(sq.BindingError, match=r"end column 'e' must be a timestamp .* TIMESTAMP_NTZ .*cast\('timestamp'\)"):
        sq.Binder(spark).bind(READINGS, end_only, start="s", end="e")
    text = spark.createDataFrame([("2009-07-15T09:00:00Z", 1, "m", 1.0)], "s string, e long, meter string, consumption double")
    with pytest.raises(sq.BindingError, match=r"start column 's' must be .* it is a string: parse it first, "
                                              r"e\.g\. F\.to_timestamp\(F\.col\('s'\)\)"):
        sq.Binder(spark).bind(READINGS, text, start="s", end="e")
    floats = spark.createDataFrame([(1.5, 2, "m", 1.0)], "s double, e long, meter string, consumption double")
    with pytest.raises(sq.BindingError, match=r"start column 's' must be a timestamp or integer microseconds; it is double"):
        sq.Binder(spark).bind(READINGS, floats, start="s", end="e")


def test_shape_and_end_column_must_agree(spark: SparkSession) -> None:
    df = readings(spark, [])
    with pytest.raises(sq.BindingError, match="'readings' is a POINT input: .* do not bind an end column"):
        sq.Binder(spark).bind(POINTS, df, start="s", end="e")
    with pytest.raises(sq.BindingError, match="'readings' is an INTERVAL input: bind its end column with end="):
        sq.Binder(spark).bind(READINGS, df, start="s")
    edges = sq.input("readings", Reading, shape=sq.Shape.EDGE)
    with pytest.raises(sq.BindingError, match="'readings' is an EDGE input: bind its edge column"):
        sq.Binder(spark).bind(edges, df, start="s", end="e")
    sq.Binder(spark).bind(edges, df.withColumn("edge", F.lit("START")), start="s", end="e", edge="edge")


def test_only_declared_inputs_and_dataframes_can_be_bound(spark: SparkSession) -> None:
    df = readings(spark, [])
    derived = READINGS.where(lambda e: e.consumption > 0)
    with pytest.raises(sq.BindingError, match=r"bind takes an input stream declared with sq.input\(...\), not a derived query"):
        sq.Binder(spark).bind(derived, df, start="s", end="e")
    with pytest.raises(sq.BindingError, match="input 'readings': bind needs a Spark DataFrame, got list"):
        sq.Binder(spark).bind(READINGS, [(0, 1, "m", 1.0)], start="s", end="e")  # type: ignore[arg-type]
    rdd = spark.sparkContext.parallelize([(0, 1, "m", 1.0)])
    with pytest.raises(sq.BindingError, match="input 'readings': bind needs a Spark DataFrame, got RDD"):
        sq.Binder(spark).bind(READINGS, cast(Any, rdd), start="s", end="e")
    with pytest.raises(sq.BindingError, match="Binder needs a SparkSession"):
        sq.Binder(cast(Any, df))


def test_bad_rows_option_and_kind_column_type(spark: SparkSession) -> None:
    df = readings(spark, [])
    with pytest.raises(sq.BindingError, match="bad_rows must be 'error' or 'drop', got 'skip'"):
        sq.Binder(spark).bind(READINGS, df, start="s", end="e", bad_rows="skip")  # type: ignore[arg-type]
    with pytest.raises(sq.BindingError, match="kind column 's' must be a string column holding INSERT/CTI"):
        sq.Binder(spark).bind(READINGS, df, start="s", end="e", kind="s")
    with pytest.raises(sq.BindingError, match="advance_time must be sq.AdvanceTimeSettings"):
        sq.Binder(spark).bind(READINGS, df, start="s", end="e",
                              advance_time=sq.AdvanceTimeGeneration(every_events=1))  # type: ignore[arg-type]


def test_query_must_read_the_input_as_it_was_bound(spark: SparkSession) -> None:
    binder = bound(spark, readings(spark, []))
    as_counts = sq.input("readings", Count, shape=sq.Shape.INTERVAL)
    with pytest.raises(sq.BindingError, match="input 'readings' is bound as Reading/INTERVAL but the query "
                                              "reads it as Count/INTERVAL"):
        binder.run(as_counts.select(lambda e: Count(e.n + 1)))
    with pytest.raises(sq.BindingError, match="bound as Reading/INTERVAL but the query reads it as Reading/POINT"):
        binder.run(POINTS)


def test_run_arguments_are_checked(spark: SparkSession) -> None:
    binder = bound(spark, readings(spark, []))
    with pytest.raises(sq.BindingError, match="output must be a sq.Shape"):
        binder.run(READINGS, output="POINT")  # type: ignore[arg-type]
    with pytest.raises(sq.BindingError, match=r"expected a query \(sq.Stream\)"):
        binder.run("readings")  # type: ignore[arg-type]
    with pytest.raises(sq.BindingError, match="write format must be parquet, json, csv, orc or delta, got 'xlsx'"):
        binder.write(READINGS, "/nonexistent", format="xlsx")


def test_csv_cannot_hold_a_nested_payload(spark: SparkSession, tmp_path: Path) -> None:
    nested = sq.input("nested", Nested, shape=sq.Shape.POINT)
    df = spark.createDataFrame([], "s long, n long, inner struct<label: string, level: double>")
    binder = sq.Binder(spark).bind(nested, df, start="s", advance_time=FLUSH)
    with pytest.raises(sq.BindingError, match="CSV cannot hold nested payloads"):
        binder.write(nested, str(tmp_path / "out"), format="csv")
    assert not (tmp_path / "out").exists()


# --- bad rows: found at run time ----------------------------------------------------------------

GOOD = (10, 20, "INSERT", "a", 1.0)


@pytest.mark.parametrize(("row", "reason"), [
    ((None, 20, "INSERT", "b", 2.0), "s is null"),
    ((15, 15, "INSERT", "b", 2.0), "e is not after s"),
    ((15, None, "INSERT", "b", 2.0), "e is null"),
    ((15, 25, "INSERT", None, 2.0), "meter is null but Reading.meter is not Optional"),
    ((15, 25, "DELETE", "b", 2.0), "kind is neither INSERT nor CTI: DELETE"),
])
def test_bad_row_raises_naming_the_reason(spark: SparkSession, row: tuple[Any, ...], reason: str) -> None:
    binder = bound(spark, readings(spark, [GOOD, row]), advance_time=FLUSH)
    with pytest.raises(sq.BadInputError) as raised:
        binder.run(READINGS)
    message = str(raised.value)
    # the reason, then the row itself
    assert message.startswith(f"input 'readings': bad row ({reason}, row {{"), message
    assert f"'s': {row[0]!r}, 'e': {row[1]!r}, 'kind': {row[2]!r}, 'meter': {row[3]!r}" in message
    assert message.endswith("bind with bad_rows='drop' to drop and count such rows")


def test_null_kind_is_a_bad_row(spark: SparkSession) -> None:
    binder = bound(spark, readings(spark, [GOOD, (15, 25, None, "b", 2.0)]), advance_time=FLUSH)
    with pytest.raises(sq.BadInputError, match=re.escape("kind is neither INSERT nor CTI: null")):
        binder.run(READINGS)


def test_bad_rows_dropped_and_counted(spark: SparkSession) -> None:
    rows = [
        GOOD,
        (None, 20, "INSERT", "b", 2.0),       # null start
        (15, 15, "INSERT", "b", 2.0),         # end == start
        (15, 12, "INSERT", "b", 2.0),         # end < start
        (15, 25, "INSERT", None, 2.0),        # null in a non-Optional field
        (15, 25, "DELETE", "b", 2.0),         # neither INSERT nor CTI
        (30, 40, "insert", "c", 3.0),         # kinds are case-insensitive
        (35, None, "CTI", None, None),        # a CTI row carries only its time
        (32, 45, "INSERT", "d", 4.0),         # late: dropped by the policy, not a bad row
    ]
    result = bound(spark, readings(spark, rows, partitions=2), bad_rows="drop").run(READINGS)
    # the CTI row at 35 releases what starts before it; no flush, so nothing else
    assert result.events == [sq.Event(_t(10), _t(20), Reading("a", 1.0)), sq.Event(_t(30), _t(40), Reading("c", 3.0))]
    assert (result.bad_rows, result.dropped, result.adjusted) == (5, 1, 0)
    assert result.final_cti == _t(35)


def test_no_settings_and_no_cti_releases_nothing(spark: SparkSession) -> None:
    df = readings(spark, [GOOD, (30, 40, "INSERT", "c", 3.0)])
    result = bound(spark, df).run(READINGS)
    assert result == sq.Result(events=[], edges=[], dropped=0, adjusted=0, bad_rows=0, final_cti=None)
    assert bound(spark, df).run(READINGS, output=sq.Shape.EDGE).edges == []
    # one CTI row is enough to release what starts before it
    with_cti = readings(spark, [GOOD, (30, 40, "INSERT", "c", 3.0), (30, None, "CTI", None, None)])
    assert bound(spark, with_cti).collect(READINGS) == [sq.Event(_t(10), _t(20), Reading("a", 1.0))]


# --- time columns ----------------------------------------------------------------------------------


def test_timestamp_and_microsecond_columns_give_the_same_result(spark: SparkSession) -> None:
    rows = [(at(0), at(30), "INSERT", "a", 1.0), (at(10), INF, "INSERT", "b", 2.0),
            (at(20.000001), at(20.000002), "INSERT", "c", 3.0), (at(25), None, "CTI", None, None),
            (at(5), at(40), "INSERT", "late", 4.0)]
    times = spark.createDataFrame(rows, "s timestamp, e timestamp, kind string, meter string, consumption double")
    in_micros = readings(spark, [(micros(s), None if e is None else (INF_MICROS if e == INF else micros(e)), k, m, c)
                                 for s, e, k, m, c in rows])
    adjust = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=100, flush=True),
                                    policy=sq.AdvanceTimePolicy.ADJUST)
    from_times = bound(spark, times, advance_time=adjust).run(READINGS)
    from_micros = bound(spark, in_micros, advance_time=adjust).run(READINGS)
    assert from_times == from_micros
    # datetime.max in a timestamp end column is INFINITY; the late event's start moves to the CTI 25 s
    assert from_times.events == [
        sq.Event(at(0), at(30), Reading("a", 1.0)),
        sq.Event(at(10), INF, Reading("b", 2.0)),
        sq.Event(at(20.000001), at(20.000002), Reading("c", 3.0)),
        sq.Event(at(25), at(40), Reading("late", 4.0)),
    ]
    assert (from_times.dropped, from_times.adjusted, from_times.final_cti) == (0, 1, INF)


def test_timestamps_in_other_zones_are_instants(spark: SparkSession) -> None:
    paris = timezone(timedelta(hours=2))
    rows = [(datetime(2009, 7, 15, 11, 0, tzinfo=paris), "m", 1.0)]
    df = spark.createDataFrame(rows, "s timestamp, meter string, consumption double")
    points = sq.Binder(spark).bind(POINTS, df, start="s", advance_time=FLUSH).collect(POINTS)
    assert points == [sq.Event(at(0), at(0) + sq.TICK, Reading("m", 1.0))]
    assert points[0].start.tzinfo == UTC


# --- results: to_dataframe, write, collect ----------------------------------------------------------

RESULT_ROWS = [(micros(at(0)), micros(at(30)), "INSERT", "a", 1.5), (micros(at(10)), micros(at(12)), "INSERT", "b,c", -2.0),
               (micros(at(20)), micros(at(21)), "INSERT", "d", 3.25)]


def test_to_dataframe_columns_and_values(spark: SparkSession) -> None:
    q = READINGS.where(lambda e: e.consumption != 3.25)
    out = bound(spark, readings(spark, RESULT_ROWS), advance_time=FLUSH).to_dataframe(q)
    assert out.columns == ["start", "end", "meter", "consumption"]
    assert [f.dataType for f in out.schema.fields] == [T.TimestampType(), T.TimestampType(), T.StringType(), T.DoubleType()]
    rows = sorted(tuple(r) for r in out.select(F.unix_micros("start"), F.unix_micros("end"), "meter", "consumption").collect())
    assert rows == [(micros(at(0)), micros(at(30)), "a", 1.5), (micros(at(10)), micros(at(12)), "b,c", -2.0)]
    # shown in UTC: the session time zone is UTC, so the text is the UTC wall time
    text = sorted(r[0] for r in out.select(F.date_format("start", "yyyy-MM-dd HH:mm:ss.SSSSSS")).collect())
    assert text == ["2009-07-15 09:00:00.000000", "2009-07-15 09:00:10.000000"]


def test_to_dataframe_shows_an_open_end_as_datetime_max(spark: SparkSession) -> None:
    df = readings(spark, [(micros(at(0)), INF_MICROS, "INSERT", "open", 1.0)])
    out = bound(spark, df, advance_time=FLUSH).to_dataframe(READINGS)
    assert [r[0] for r in out.select(F.date_format("end", "yyyy-MM-dd HH:mm:ss.SSSSSS")).collect()] == [
        "9999-12-31 23:59:59.999999"]
    assert [r[0] for r in out.select(F.unix_micros("end")).collect()] == [micros(INF)]


def _read_back(spark: SparkSession, out: DataFrame, path: str, fmt: str) -> list[tuple[Any, ...]]:
    back = spark.read.schema(out.schema).format(fmt).option("header", "true").load(path)
    return sorted(tuple(r) for r in back.select(F.unix_micros("start"), F.unix_micros("end"), "meter", "consumption").collect())


def test_write_then_read_gives_the_to_dataframe_rows(spark: SparkSession, tmp_path: Path) -> None:
    binder = bound(spark, readings(spark, RESULT_ROWS, partitions=2), advance_time=FLUSH)
    q = READINGS.where(lambda e: e.meter != "d")
    out = binder.to_dataframe(q)
    expected = sorted(tuple(r) for r in out.select(F.unix_micros("start"), F.unix_micros("end"), "meter", "consumption").collect())
    assert expected == [(micros(at(0)), micros(at(30)), "a", 1.5), (micros(at(10)), micros(at(12)), "b,c", -2.0)]
    for fmt in ("parquet", "json", "csv"):
        result = binder.write(q, str(tmp_path / fmt), format=fmt)
        # the events went to the files: the result carries the counts and the final CTI only
        assert result == sq.Result(events=[], edges=[], dropped=0, adjusted=0, bad_rows=0, final_cti=INF)
        assert _read_back(spark, out, str(tmp_path / fmt), fmt) == expected, fmt


def test_write_keeps_microseconds(spark: SparkSession, tmp_path: Path) -> None:
    binder = bound(spark, readings(spark, [(micros(at(0.000001)), micros(at(0.000003)), "INSERT", "a", 1.0)]),
                   advance_time=FLUSH)
    out = binder.to_dataframe(READINGS)
    for fmt in ("json", "csv"):
        binder.write(READINGS, str(tmp_path / fmt), format=fmt)
        assert _read_back(spark, out, str(tmp_path / fmt), fmt) == [
            (micros(at(0.000001)), micros(at(0.000003)), "a", 1.0)], fmt


def test_parquet_holds_microsecond_timestamps_that_pyarrow_reads(spark: SparkSession, tmp_path: Path) -> None:
    # INT96, Spark's default, reads in pyarrow and pandas as nanoseconds: the open end would come
    # back as a date in 1816 (docs/decisions.md, "Parquet timestamps")
    if tuple(int(p) for p in spark.version.split(".")[:2]) < (4, 2):
        pytest.skip("a write's spark.sql.parquet.outputTimestampType takes effect from Spark 4.2 on")
    import pyarrow.parquet as pq

    binder = bound(spark, readings(spark, [(micros(at(0.000001)), INF_MICROS, "INSERT", "open", 1.0),
                                           (micros(at(5)), micros(at(6)), "INSERT", "a", 2.0)]), advance_time=FLUSH)
    binder.write(READINGS, str(tmp_path / "out"), format="parquet")
    table = pq.read_table(str(tmp_path / "out"))
    assert [str(table.schema.field(c).type) for c in ("start", "end")] == ["timestamp[us, tz=UTC]"] * 2
    rows = sorted(zip(table.column("start").to_pylist(), table.column("end").to_pylist()))
    assert rows == [(at(0.000001), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)), (at(5), at(6))]


def test_collect_is_run_events(spark: SparkSession) -> None:
    binder = bound(spark, readings(spark, RESULT_ROWS), advance_time=FLUSH)
    q = READINGS.select(lambda e: Reading(e.meter.upper(), e.consumption * 2))
    collected = binder.collect(q)
    assert collected == binder.run(q).events
    assert collected == [sq.Event(at(0), at(30), Reading("A", 3.0)), sq.Event(at(10), at(12), Reading("B,C", -4.0)),
                         sq.Event(at(20), at(21), Reading("D", 6.5))]


# --- payload values through Spark ---------------------------------------------------------------------

EVERYTHING = [
    Everything(True, 2**63 - 1, 1.5, "héllo ✓", b"\x00\xff", Decimal("-12.345"),
               datetime(2009, 7, 15, 11, 13, 33, 317000, tzinfo=timezone(timedelta(hours=2))),
               timedelta(days=-1, microseconds=7), uuid.UUID("12345678-1234-5678-1234-567812345678"),
               Inner("x", 0.25), 5, "s", datetime(2020, 2, 29, tzinfo=UTC), Inner("y", None)),
    Everything(False, -2**63, -0.0, "", b"", Decimal("123456789.000000000000000001"),
               datetime(1970, 1, 1, tzinfo=UTC), timedelta(0), uuid.UUID(int=0),
               Inner("", None), None, None, None, None),
]


def test_payload_types_round_trip(spark: SparkSession) -> None:
    source = sq.input("everything", Everything, shape=sq.Shape.INTERVAL)
    items: list[sq.Insert[Everything]] = [sq.Insert(1, 5, EVERYTHING[0]), sq.Insert(2, 3, EVERYTHING[1])]
    df = frame(spark, Everything, sq.Shape.INTERVAL, items, partitions=2)
    result = bind(sq.Binder(spark), source, df, sq.Shape.INTERVAL, FLUSH).run(source)
    assert result.events == [sq.Event(_t(1), _t(5), EVERYTHING[0]), sq.Event(_t(2), _t(3), EVERYTHING[1])]
    first = result.events[0].payload
    assert first.at.tzinfo == UTC and first.at == datetime(2009, 7, 15, 9, 13, 33, 317000, tzinfo=UTC)
    assert isinstance(first.raw, bytes) and isinstance(first.id, uuid.UUID) and isinstance(first.amount, Decimal)
    assert isinstance(first.maybe_inner, Inner) and first.maybe_inner.level is None
    assert result == sq.reference.run(source, {"everything": sq.reference.ReferenceInput(items, FLUSH)})
