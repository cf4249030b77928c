"""Readings written as JSON files into a directory, one file per micro-batch, and the sliding
average over them: the shared setup of the Structured Streaming tests (``Binder.start`` and
``Binder.start_many``)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

from pyspark.sql import types as T

import streamql as sq
from streamql.running import MICRO_BATCH
from support.streaming_job import Average, Reading

SCHEMA = T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("meter", T.StringType()),
                       T.StructField("consumption", T.DoubleType())])
EVERY_4 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4, flush=True))
READINGS = sq.input("readings", Reading)


def averages(readings: sq.Stream[Reading]) -> sq.Stream[Average]:
    return (readings.alter_duration(timedelta(seconds=25)).group_by(lambda e: e.meter).snapshot_window()
            .select(lambda w: Average(w.key, w.avg(lambda e: e.consumption))))


def rows(first: int, count: int) -> list[dict[str, Any]]:
    """Readings every 10 s from ``first``, alternating meters, a consumption that varies."""
    return [{"ts": datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=10 * i),
             "meter": "m1" if i % 2 else "m2", "consumption": float((i * 7) % 11)} for i in range(first, first + count)]


def put(directory: Path, number: int, batch: Sequence[dict[str, Any]]) -> None:
    """Writes one JSON file whole: under a hidden name (the file source skips it), then renamed."""
    directory.mkdir(parents=True, exist_ok=True)
    hidden = directory / f".part-{number:04d}.json"
    hidden.write_text("".join(json.dumps({**r, "ts": r["ts"].isoformat()}) + "\n" for r in batch))
    os.rename(hidden, directory / f"part-{number:04d}.json")


@dataclass(frozen=True)
class Price:
    """A static input's payload beside the readings (a running query joining it)."""

    item: str
    price: float


@dataclass(frozen=True)
class Priced:
    meter: str
    item: str
    cost: float


def sink_rows(spark: Any, sink: Path) -> list[tuple[Any, ...]]:
    """The rows a running query's parquet sink holds, without its micro-batch column, sorted
    (``spark``: a session of either kind)."""
    return sorted(tuple(r) for r in spark.read.parquet(str(sink)).drop(MICRO_BATCH).collect())
