"""Turns reference-evaluator inputs into bound Spark DataFrames, so that one test input runs
through both the reference evaluator and the Spark binder."""
from __future__ import annotations

import random
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import streamql as sq
from streamql.payload import schema_of
from streamql.spark.schema import spark_type, spark_value
from streamql.time import to_micros


def frame(spark: SparkSession, payload: type[Any], shape: sq.Shape, items: Sequence[Any], *,
          partitions: int = 3, arrival: bool = False, seed: int = 0, first_arrival: int = 0,
          shuffled: bool = True) -> DataFrame:
    """A DataFrame with ``start``/``end`` (integer microseconds), ``kind``, ``arrival`` and the payload
    columns, in arrival order across ``partitions`` partitions — or, with ``arrival=True``, with an
    ``arrival`` column and rows shuffled so that only that column gives the order (``shuffled=False``:
    left in arrival order, which the binder then finds needs no numbering).

    For ``Shape.EDGE`` items (``sq.StartEdge``, ``sq.EndEdge``, ``sq.Cti``) an ``edge`` column follows
    the payload: ``"START"`` (with a null ``end``) or ``"END"``, null on CTI rows. ``first_arrival``:
    the arrival value of the first item (a micro-batch continues its stream's clock)."""
    schema = schema_of(payload)
    edges = shape is sq.Shape.EDGE
    fields = [T.StructField("start", T.LongType()), T.StructField("end", T.LongType()),
              T.StructField("kind", T.StringType()), T.StructField("arrival", T.LongType())]
    fields += [T.StructField(f.name, spark_type(f.type), True) for f in schema.fields]
    if edges:
        fields.append(T.StructField("edge", T.StringType()))
    rows: list[tuple[Any, ...]] = []
    for position, item in enumerate(items, start=first_arrival):
        if isinstance(item, sq.Cti):
            row = (to_micros(item.time), None, "CTI", position) + (None,) * len(schema.fields)
            rows.append(row + (None,) if edges else row)
            continue
        values = tuple(spark_value(f.type, getattr(item.payload, f.name)) for f in schema.fields)
        if isinstance(item, sq.StartEdge):
            rows.append((to_micros(item.start), None, "INSERT", position) + values + ("START",))
        elif isinstance(item, sq.EndEdge):
            rows.append((to_micros(item.start), to_micros(item.end), "INSERT", position) + values + ("END",))
        else:
            rows.append((to_micros(item.start), to_micros(item.end), "INSERT", position) + values)
    if arrival and shuffled:
        random.Random(seed).shuffle(rows)
    rdd = spark.sparkContext.parallelize(rows, max(1, partitions))
    return spark.createDataFrame(rdd, T.StructType(fields))


def bind(binder: sq.Binder, stream: sq.Stream[Any], df: DataFrame, shape: sq.Shape,
         settings: sq.AdvanceTimeSettings | None, *, arrival: bool = False,
         bad_rows: str = "error") -> sq.Binder:
    return binder.bind(
        stream, df, start="start", end=None if shape is sq.Shape.POINT else "end",
        edge="edge" if shape is sq.Shape.EDGE else None, kind="kind",
        arrival="arrival" if arrival else None, advance_time=settings,
        bad_rows="drop" if bad_rows == "drop" else "error",
    )
