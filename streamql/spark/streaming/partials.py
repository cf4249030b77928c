"""Live hopping and tumbling windows that carry partial aggregates, not events (docs/streaming.md).

A streaming step re-evaluates most queries over the input events it keeps (``streamql.spark.
incremental``). A hopping or tumbling window over one POINT input — through operators that map
each event on its own (``where``, ``select``, ``to_point``, a shift that cannot open an event) —
whose ``select`` reads built-in aggregates that merge (``count``; ``sum`` and ``avg`` of numbers;
``min``; ``max``) needs none of its input events again:

- every event a step accepts is final at once (a point's lifetime is its start; one that came late
  was dropped or moved to the CTI by the scan), and so is its part in each window it is in;
- a window is stable, and released, once the input CTI reaches its end; no later event can join it
  (a later event starts at or after the CTI), so it is released exactly once;
- so a step merges its new events (each one a partial of its own) into the *partials* carried per
  (group, window) for the windows the CTI has not yet reached the end of — one aggregation, one
  shuffle —, releases the windows it now reaches, and carries the partials of the others: one row
  per open window per group.

What this path computes equals what the re-evaluating step computes (the batch-equals-streaming
tests run both); only the sums of floats may differ in their last bits, being added in another order.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from streamql.events import Shape
from streamql.expr.nodes import Aggregate, aggregates_of
from streamql.payload import Kind
from streamql.query import nodes, windows
from streamql.spark.base.aggregates import result_name, value_name

#: the aggregates whose partials merge
MERGEABLE = frozenset({"count", "sum", "avg", "min", "max"})
#: the rows of a (group, window) so far (a window with no aggregate still has its rows)
ROWS = "_sq_rows"
#: the name under which a step carries the partials (``Carried.partials``)
PARTIALS = "window"


def incremental_window(query: nodes.Node) -> windows.WindowAggregate | None:
    """``query`` if it is a hopping or tumbling window that can run on partial aggregates (see
    the module's text), else None."""
    if not isinstance(query, windows.WindowAggregate) or not isinstance(query.window, windows.HoppingWindow):
        return None
    if query.source.may_be_open:  # an open event is in windows not known yet
        return None
    source = nodes.input_through(query.source, (nodes.Where, nodes.Select, nodes.ToPoint, nodes.AlterLifetime))
    if source is None or source.shape is not Shape.POINT:
        return None
    for a in aggregates_of(query.projection):
        if a.fn not in MERGEABLE:
            return None
        if a.fn in ("sum", "avg") and (a.arg is None or a.arg.type.kind not in (Kind.INT, Kind.FLOAT)):
            return None  # a decimal sum's type grows with every merge
    return query


def _partial(i: int, part: str = "p") -> str:
    return f"_sq_{part}{i}"


def row_partials(aggregates: list[Aggregate]) -> list[Column]:
    """The partials of one member row (its ``value_name(i)`` columns): what ``merge_columns``
    merges with the partials carried (Spark combines them per task before the shuffle)."""
    columns = [F.lit(1).cast("long").alias(ROWS)]
    for i, a in enumerate(aggregates):
        value = F.col(value_name(i))
        if a.fn == "count":
            columns.append(F.lit(1).cast("long").alias(_partial(i)))
        elif a.fn == "sum":  # in the type Spark's sum gives: long for integers, double for floats
            assert a.arg is not None
            columns.append(value.cast("long" if a.arg.type.kind is Kind.INT else "double").alias(_partial(i)))
        elif a.fn == "avg":  # as Spark's avg: the sum of the values as doubles over their count
            columns += [value.cast("double").alias(_partial(i)),
                        F.when(value.isNotNull(), F.lit(1)).otherwise(F.lit(0)).cast("long").alias(_partial(i, "n"))]
        else:
            assert a.fn in ("min", "max"), a.fn
            columns.append(value.alias(_partial(i)))
    return columns


def merge_columns(aggregates: list[Aggregate]) -> list[Column]:
    """Partials merged (grouped by window): the same columns."""
    columns = [F.sum(ROWS).alias(ROWS)]
    for i, a in enumerate(aggregates):
        p = F.col(_partial(i))
        if a.fn in ("count", "sum"):
            columns.append(F.sum(p).alias(_partial(i)))
        elif a.fn == "avg":
            columns += [F.sum(p).alias(_partial(i)), F.sum(_partial(i, "n")).alias(_partial(i, "n"))]
        elif a.fn == "min":
            columns.append(F.min(p).alias(_partial(i)))
        else:
            columns.append(F.max(p).alias(_partial(i)))
    return columns


def result_columns(aggregates: list[Aggregate]) -> list[Column]:
    """Each aggregate's value (``result_name(i)``) from merged partials."""
    columns = []
    for i, a in enumerate(aggregates):
        p = F.col(_partial(i))
        if a.fn == "avg":
            n = F.col(_partial(i, "n"))
            value = F.when(n > 0, p / n.cast("double"))
        else:
            value = p
        columns.append(value.alias(result_name(i)))
    return columns


__all__ = ["MERGEABLE", "PARTIALS", "incremental_window", "merge_columns", "result_columns", "row_partials"]
