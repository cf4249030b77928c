"""The release rule on Spark (docs/ctis-and-release.md#stability-and-the-release-rule): which events
of the query's output are released, given the output CTI at the end of the run."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from streamql.errors import BindingError
from streamql.events import EdgeKind, Shape
from streamql.payload import PayloadSchema
from streamql.spark.base.columns import CLOSED, END, START
from streamql.spark.base.schema import PARQUET_OPTIONS
from streamql.spark.operators.flow import shifted
from streamql.time import INFINITY_MICROS, MAX_MICROS

EDGE_KIND, EDGE_TIME = "_sq_edge", "_sq_time"


def release(events: DataFrame, cti: int | None, output: Shape, payload: list[str]) -> DataFrame:
    """Released intervals (``_sq_start``, ``_sq_end`` + payload) for INTERVAL and POINT output;
    released edges (``_sq_edge``, ``_sq_time``, ``_sq_start`` + payload) for EDGE output."""
    before_cti = F.col(START) < F.lit(cti) if cti is not None else F.lit(False)
    if output is Shape.INTERVAL:
        return events.filter(F.col(CLOSED) & before_cti).select(START, END, *payload)
    if output is Shape.POINT:
        return events.filter(before_cti).select(START, shifted(F.col(START), 1).alias(END), *payload)
    started = events.filter(before_cti)
    starts = started.select(F.lit(EdgeKind.START.value).alias(EDGE_KIND), F.col(START).alias(EDGE_TIME),
                            START, *payload)
    ends = (started.filter(F.col(CLOSED) & (F.col(END) != F.lit(INFINITY_MICROS)))
            .select(F.lit(EdgeKind.END.value).alias(EDGE_KIND), F.col(END).alias(EDGE_TIME), START, *payload))
    return starts.unionByName(ends)


def user_columns(released: DataFrame, payload: list[str]) -> DataFrame:
    """Released intervals as users see them: ``start``, ``end`` (UTC timestamps; an open end is
    ``9999-12-31 23:59:59.999999``), then the payload fields."""
    end = F.when(F.col(END) == F.lit(INFINITY_MICROS), F.lit(MAX_MICROS + 1)).otherwise(F.col(END))
    return released.select(F.timestamp_micros(F.col(START)).alias("start"), F.timestamp_micros(end).alias("end"),
                           *payload)


def writer_options(format: str, schema: PayloadSchema, what: str) -> dict[str, str]:
    """The options for writing released events of ``schema`` as ``format``, after checking that
    the format can hold them (``what``: "write" or "sink", for the error)."""
    if format not in ("parquet", "json", "csv", "orc", "delta"):
        raise BindingError(f"{what} format must be parquet, json, csv, orc or delta, got {format!r}")
    if format == "csv" and any(f.type.schema is not None for f in schema.fields):
        raise BindingError("CSV cannot hold nested payloads: select flat fields first or write parquet/json")
    options = dict(PARQUET_OPTIONS) if format == "parquet" else {}
    if format in ("csv", "json"):  # their default timestamp format drops the microseconds
        options["timestampFormat"] = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"
    if format == "csv":
        options["header"] = "true"
    return options
