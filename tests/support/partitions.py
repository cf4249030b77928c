"""Partitioned inputs for the property tests (docs/partitioned-inputs.md): the items of each
declared partition in its own arrival order, the same as one input per partition, and how the
partitions' rows can be interleaved in storage."""
from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Sequence

from hypothesis import strategies as st

import streamql as sq
from streamql.reference import PartitionedInput, ReferenceInput
from support.streams import P, edge_items, inputs, side_by_side


@st.composite
def partitioned_items(draw: st.DrawFn, shape: sq.Shape, open_ends: bool = False,
                      count: int | None = None) -> dict[int, list[Any]]:
    """One to three declared partitions (0, 1, 2; ``count`` of them if given), each with its own
    items in arrival order (any of them may be empty: a quiet partition)."""
    count = draw(st.integers(1, 3)) if count is None else count
    if shape is sq.Shape.EDGE:
        return {p: draw(edge_items()) for p in range(count)}
    return {p: draw(inputs(shape, open_ends)) for p in range(count)}


@st.composite
def partitioned_side_by_side(draw: st.DrawFn, shape: sq.Shape, open_ends: bool = False) -> dict[int, list[Any]]:
    """``PARTS`` draws of ``partitioned_items`` with the same partitions, laid side by side in time
    (``side_by_side``, tests/support/depth.py): what a Spark property test's example checks."""
    count = draw(st.integers(1, 3))
    parts: dict[int, list[Any]] = draw(side_by_side(partitioned_items(shape, open_ends, count)))
    return parts


@st.composite
def interleavings(draw: st.DrawFn, parts: Mapping[int, Sequence[Any]]) -> list[tuple[int, int, Any]]:
    """Every partition's items as (partition, position in it, item), interleaved at random: each
    partition's items stay in their order."""
    left = {p: list(enumerate(items)) for p, items in parts.items() if items}
    out: list[tuple[int, int, Any]] = []
    while left:
        p = draw(st.sampled_from(sorted(left)))
        position, item = left[p].pop(0)
        out.append((p, position, item))
        if not left[p]:
            del left[p]
    return out


def as_union(source: Callable[[str], sq.Stream[P]], parts: Mapping[int, Sequence[Any]],
             settings: sq.AdvanceTimeSettings | None, bad_rows: Literal["error", "drop"] = "error"
             ) -> tuple[sq.Stream[P], dict[str, ReferenceInput[Any]]]:
    """The union of one input per partition (``x<p>``), each with ``settings``, and their inputs."""
    names = [f"x{p}" for p in parts]
    streams = [source(n) for n in names]
    union = streams[0].union(*streams[1:])
    return union, {f"x{p}": ReferenceInput(items, settings, bad_rows)
                   for p, items in parts.items()}


def partitioned(parts: Mapping[int, Sequence[Any]], settings: sq.AdvanceTimeSettings | None,
                bad_rows: Literal["error", "drop"] = "error") -> PartitionedInput[Any]:
    given: dict[int | str, Sequence[Any]] = {p: items for p, items in parts.items()}
    return PartitionedInput(given, settings, bad_rows)


#: the partition value of ``partitioned_frame``'s rows that are not declared
UNDECLARED = 9


def partitioned_frame(spark: Any, shape: sq.Shape, rows: Sequence[tuple[int, int, Any]], *, spark_partitions: int = 3,
                      column: str = "part") -> Any:
    """A DataFrame of ``rows`` (partition, position in it, item) in this storage order: ``start``,
    ``end``, ``kind``, ``arrival`` (the position in its partition, as a Kafka offset), the payload
    (``P``), ``edge`` for an EDGE input, and the partition column ``column``."""
    from pyspark.sql import types as T

    from streamql.payload import schema_of
    from streamql.spark.base.schema import spark_type, spark_value
    from streamql.spark.runtime.connect import is_connect
    from streamql.time import to_micros

    schema = schema_of(P)
    edges = shape is sq.Shape.EDGE
    fields = [T.StructField("start", T.LongType()), T.StructField("end", T.LongType()),
              T.StructField("kind", T.StringType()), T.StructField("arrival", T.LongType())]
    fields += [T.StructField(f.name, spark_type(f.type), True) for f in schema.fields]
    fields += [T.StructField("edge", T.StringType())] if edges else []
    fields.append(T.StructField(column, T.IntegerType()))
    out: list[tuple[Any, ...]] = []
    for partition, position, item in rows:
        if isinstance(item, sq.Cti):
            row: tuple[Any, ...] = (to_micros(item.time), None, "CTI", position) + (None,) * len(schema.fields)
            row += (None,) if edges else ()
        else:
            values = tuple(spark_value(f.type, getattr(item.payload, f.name)) for f in schema.fields)
            end = None if isinstance(item, sq.StartEdge) else to_micros(item.end)
            row = (to_micros(item.start), end, "INSERT", position) + values
            if edges:
                row += ("START" if isinstance(item, sq.StartEdge) else "END",)
        out.append(row + (partition,))
    if is_connect(spark):
        return spark.createDataFrame(out, T.StructType(fields))
    rdd = spark.sparkContext.parallelize(out, max(1, spark_partitions))
    return spark.createDataFrame(rdd, T.StructType(fields))


def bind_partitioned(binder: sq.Binder, stream: sq.Stream[Any], df: Any, shape: sq.Shape,
                     settings: sq.AdvanceTimeSettings | None, partitions: Sequence[int], *, arrival: bool,
                     bad_rows: Literal["error", "drop"] = "drop") -> sq.Binder:
    return binder.bind(stream, df, start="start", end=None if shape is sq.Shape.POINT else "end",
                       edge="edge" if shape is sq.Shape.EDGE else None, kind="kind",
                       arrival="arrival" if arrival else None, partition="part", partitions=list(partitions),
                       advance_time=settings, bad_rows=bad_rows)
