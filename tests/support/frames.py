"""Turns reference-evaluator inputs into bound Spark DataFrames, so that one test input runs
through both the reference evaluator and the Spark binder."""
from __future__ import annotations

import random
from typing import Any, Sequence

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import streamql as sq
from streamql.spark.runtime.connect import is_connect
from streamql.payload import schema_of
from streamql.spark.base.schema import spark_type, spark_value
from streamql.time import to_micros


@attrs.frozen
class NullCti:
    """A CTI row whose time is null: bad input that only a bound DataFrame can hold (the reference
    evaluator's ``sq.Cti`` needs a time); on Spark a ``"bad_row"`` record of kind ``"CTI"``."""


def _micros(t: Any) -> int | None:
    """A time as its column holds it: a null stays null (a bad row)."""
    return None if t is None else to_micros(t)


def frame(spark: SparkSession, payload: type[Any], shape: sq.Shape, items: Sequence[Any], *,
          partitions: int = 3, arrival: bool = False, seed: int = 0, first_arrival: int = 0,
          shuffled: bool = True) -> DataFrame:
    """A DataFrame with ``start``/``end`` (integer microseconds), ``kind``, ``arrival`` and the payload
    columns, in arrival order across ``partitions`` partitions — or, with ``arrival=True``, with an
    ``arrival`` column and rows shuffled so that only that column gives the order (``shuffled=False``:
    left in arrival order, which the binder then finds needs no numbering).

    For ``Shape.EDGE`` items (``sq.StartEdge``, ``sq.EndEdge``, ``sq.Cti``) an ``edge`` column follows
    the payload: ``"START"`` (with a null ``end``) or ``"END"``, null on CTI rows. ``first_arrival``:
    the arrival value of the first item (a micro-batch continues its stream's clock). A time of
    ``None`` is a null (a bad row); a ``NullCti`` a CTI row with a null time."""
    schema = schema_of(payload)
    edges = shape is sq.Shape.EDGE
    fields = [T.StructField("start", T.LongType()), T.StructField("end", T.LongType()),
              T.StructField("kind", T.StringType()), T.StructField("arrival", T.LongType())]
    fields += [T.StructField(f.name, spark_type(f.type), True) for f in schema.fields]
    if edges:
        fields.append(T.StructField("edge", T.StringType()))
    rows: list[tuple[Any, ...]] = []
    for position, item in enumerate(items, start=first_arrival):
        if isinstance(item, (sq.Cti, NullCti)):
            row: tuple[Any, ...] = (None if isinstance(item, NullCti) else to_micros(item.time), None, "CTI", position)
            row += (None,) * len(schema.fields)
            rows.append(row + (None,) if edges else row)
            continue
        values = tuple(spark_value(f.type, getattr(item.payload, f.name)) for f in schema.fields)
        if isinstance(item, sq.StartEdge):
            rows.append((_micros(item.start), None, "INSERT", position) + values + ("START",))
        elif isinstance(item, sq.EndEdge):
            rows.append((_micros(item.start), _micros(item.end), "INSERT", position) + values + ("END",))
        else:
            rows.append((_micros(item.start), _micros(item.end), "INSERT", position) + values)
    if arrival and shuffled:
        random.Random(seed).shuffle(rows)
    if is_connect(spark):
        # a Spark Connect client sends its rows as one local relation, which the binder checkpoints
        # on the server (runtime/connect.py): the partitions are Spark's, in the rows' order
        return spark.createDataFrame(rows, T.StructType(fields))
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


#: a CTI time before every CTI the shared strategies can give an input (CTI rows and event starts
#: are at or after 0; generation delays are at most 10 ticks)
EARLIEST_CTI = -1000


def imported_after_importer(payload: type[Any], shape: sq.Shape, items: Sequence[Any],
                            settings: sq.AdvanceTimeSettings | None, importer_items: Sequence[Any]) -> list[Any]:
    """The items of an input whose CTIs another input imports, as the reference evaluator must see
    them when neither input is bound with an ``arrival`` column: the importer's own events are taken
    to arrive before every imported CTI (docs/ctis-and-release.md#the-arrival-clock), so on the
    reference's one clock (list positions)
    this input's items come after all of the importer's. CTI rows at ``EARLIEST_CTI``, before every
    CTI the input has, fill the first positions and change nothing — unless the input never has a
    CTI at all: then nothing is imported, the order does not matter and the items stay as they are."""
    alone = sq.input("source", payload, shape)
    result = sq.reference.run(alone, {"source": sq.reference.ReferenceInput(items, settings, "drop")})
    if result.final_cti is None:
        return list(items)
    return [sq.Cti(EARLIEST_CTI) for _ in importer_items] + list(items)


def run_in_shapes(binder: sq.Binder, q: sq.Stream[Any], *shapes: sq.Shape) -> list[sq.Result[Any]]:
    """``[binder.run(q, output=s) for s in shapes]`` from one scan of the inputs and one computation
    of the output events: the hand-worked cases check every output shape, each shape's release
    (``_Execution.released``) reading the same events, kept in memory after the first shape's job
    — the others' jobs plan and run the release alone, not the query again. (Through the binder's
    internals: ``run`` scans and computes once per call.)"""
    from streamql.binder import _collected

    execution = binder._execute(q)
    if len(shapes) > 1:
        events = execution.events.persist()
        execution = attrs.evolve(execution, events=events, persisted=[*execution.persisted, events])
    try:
        return [_collected(execution, shape) for shape in shapes]
    finally:
        execution.unpersist()
