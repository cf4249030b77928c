"""A batch input that reads several files without an arrival column: Spark reads the files largest
first, not by name, and that order is the input's arrival order, so ``Binder.bind`` warns
(``ArrivalOrderWarning``) where the order decides CTIs (docs/binding.md#arrival-order-and-files).
The warning is true: the same files in time order, bound without an arrival column, drop events."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.errors import ArrivalOrderWarning


@dataclass(frozen=True)
class Tick:
    n: int


TICKS = sq.input("ticks", Tick, sq.Shape.POINT)
EVERY_EVENT = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))

#: three files written in time order (day 0, 1, 2), the second the largest
SIZES = (10, 500, 100)
DAY = 1_000_000


def days(spark: SparkSession, path: Path, sizes: tuple[int, ...] = SIZES) -> DataFrame:
    """One parquet file per day, written in time order, read back as one directory."""
    for day, size in enumerate(sizes):
        (spark.range(size).select((F.lit(day * DAY) + F.col("id") * 10).alias("ts"), F.col("id").cast("int").alias("n"))
         .coalesce(1).write.mode("append").parquet(str(path)))
    return spark.read.parquet(str(path))


def bound(source: DataFrame, **options: object) -> sq.Binder:
    return sq.Binder(source.sparkSession).bind(TICKS, source, start="ts", **options)  # type: ignore[arg-type]


def caught(binding: object) -> list[str]:
    """The messages of the ``ArrivalOrderWarning``s that calling ``binding`` issues."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        binding()  # type: ignore[operator]
    return [str(w.message) for w in seen if issubclass(w.category, ArrivalOrderWarning)]


def test_several_files_without_an_arrival_column_warn_and_their_events_are_late(spark: SparkSession,
                                                                                tmp_path: Path) -> None:
    source = days(spark, tmp_path / "days")
    messages = caught(lambda: bound(source, advance_time=EVERY_EVENT))
    assert len(messages) == 1
    assert messages[0].startswith("input 'ticks' reads 3 files and has no arrival column"), messages[0]
    assert "the largest first" in messages[0]
    # what it warns of: day 1 (the largest file) is read first, so days 0 and 2 come after its CTIs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArrivalOrderWarning)
        result = bound(source, advance_time=EVERY_EVENT).run(TICKS)
    assert result.dropped > 0
    # the remedy the warning names: an arrival column (here the times: the data arrived in time order)
    remedied = caught(lambda: bound(source.withColumn("arrival", F.col("ts")), advance_time=EVERY_EVENT,
                                    arrival="arrival"))
    assert remedied == []
    result = bound(source.withColumn("arrival", F.col("ts")), advance_time=EVERY_EVENT, arrival="arrival").run(TICKS)
    assert result.dropped == 0 and len(result.events) == sum(SIZES)


@pytest.mark.parametrize("case", ["one file", "rows of a DataFrame", "no CTIs"])
def test_no_warning_where_the_file_order_cannot_make_events_late(spark: SparkSession, tmp_path: Path,
                                                                 case: str) -> None:
    if case == "one file":
        source, options = days(spark, tmp_path / "one", (300,)), {"advance_time": EVERY_EVENT}
    elif case == "rows of a DataFrame":
        source, options = spark.createDataFrame([(i * 10, i) for i in range(20)], "ts long, n int"), {
            "advance_time": EVERY_EVENT}
    else:
        source, options = days(spark, tmp_path / "days"), {}
    assert caught(lambda: bound(source, **options)) == []
