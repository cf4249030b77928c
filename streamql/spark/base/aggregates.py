"""Aggregates on Spark: the value each aggregate reads from an event, and the aggregate of a
window's member rows (the ``groupBy`` form used by hopping and count windows, and by snapshot
windows for user-defined aggregates).

Built-ins are Spark's own aggregate functions. A user-defined aggregate gathers its window's
``(start, end, value)`` triples on the executors, sorts them (the reference evaluator's order:
start, end, value with nulls first) and folds them in an Arrow-optimised Python UDF, one call per
window. ``top_k`` gathers its window's members the same way (the internal aggregate ``MEMBERS``:
the array of the members' values, in no order) and ranks them with array functions.
"""
from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any, Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from streamql.expr.nodes import Aggregate
from streamql.payload import Kind
from streamql.spark.base.expressions import compile_expr
from streamql.spark.base.schema import spark_type
from streamql.spark.compat import checked_long, checks_overflow_itself
from streamql.time import from_micros


#: the internal aggregate whose value is the array of a window's member values (``top_k``)
MEMBERS = "members"


def gathers(a: Aggregate) -> bool:
    """Whether an aggregate needs every member's value in one place: user-defined aggregates and
    ``MEMBERS`` (every window kind gathers them where it gathers a user aggregate's)."""
    return a.fn in ("user", MEMBERS)


def value_name(index: int) -> str:
    """The column holding the ``index``-th aggregate's argument for each event."""
    return f"_sq_v{index}"


def result_name(index: int) -> str:
    """The column holding the ``index``-th aggregate's value for each window."""
    return f"_sq_agg{index}"


def value_columns(aggregates: Sequence[Aggregate], resolve: Callable[[int, str], Column]) -> list[Column]:
    """Each aggregate's argument as a column of the event rows (``count`` reads none)."""
    return [compile_expr(a.arg, resolve).alias(value_name(i)) for i, a in enumerate(aggregates) if a.arg is not None]


def member_aggregates(indexed: Sequence[tuple[int, Aggregate]], start: Column, end: Column) -> list[Column]:
    """One column ``result_name(i)`` per aggregate ``i`` over a window's member rows (grouped by
    window), whose ``value_name(i)`` columns hold the arguments and ``start``/``end`` the lifetimes
    clipped to the window."""
    columns = []
    for i, a in indexed:
        value = F.col(value_name(i))
        if a.fn == "count":
            column = F.count(F.lit(1))
        elif a.fn == "sum":
            column = F.sum(value)
            if checks_overflow_itself() and a.type.kind is Kind.INT:  # Spark 3.5: see compat.ansi_mode
                column = checked_long(F.sum(value.cast("decimal(38,0)")), column, "a sum")
        elif a.fn == "avg":
            column = F.avg(value.cast("double"))
        elif a.fn == "min":
            column = F.min(value)
        elif a.fn == "max":
            column = F.max(value)
        elif a.fn == "user":
            column = fold_user_aggregate(a, F.collect_list(F.struct(start.alias("s"), end.alias("e"),
                                                                    transferable(a, value).alias("v"))))
        elif a.fn == MEMBERS:  # the value is a struct, never null: collect_list keeps every member
            column = F.collect_list(value)
        else:
            raise ValueError(f"unknown aggregate {a.fn!r}")
        columns.append(column.alias(result_name(i)))
    return columns


def transferable(a: Aggregate, value: Column) -> Column:
    """Times travel to Python as microseconds: Arrow's conversion of timestamps inside arrays
    depends on session settings, a long does not."""
    assert a.arg is not None
    kind = a.arg.type.kind
    if kind is Kind.DATETIME:
        return F.unix_micros(value)
    if kind is Kind.TIMEDELTA:
        return F.unix_micros(F.timestamp_micros(F.lit(0)) + value)
    return value


def fold_user_aggregate(a: Aggregate, gathered: Column) -> Column:
    """The user aggregate's result over an array of ``struct(s, e, v)`` (any order)."""
    assert a.arg is not None
    ordered = F.array_sort(gathered)  # struct order: s, then e, then v with nulls first
    return _fold_udf(a)(F.transform(ordered, lambda x: x["v"]), F.transform(ordered, lambda x: x["s"]),
                        F.transform(ordered, lambda x: x["e"]))


def _fold_udf(a: Aggregate) -> Callable[..., Column]:
    assert a.arg is not None
    aggregate, kind, result = a.user, a.arg.type.kind, a.type

    def to_python(v: Any) -> Any:
        if v is None:
            return None
        if kind is Kind.DATETIME:
            return from_micros(v)
        if kind is Kind.TIMEDELTA:
            return timedelta(microseconds=v)
        if kind is Kind.UUID:
            return uuid.UUID(v)
        if kind is Kind.BYTES:
            return bytes(v)
        return v

    def to_spark(r: Any) -> Any:
        if r is not None and result.kind is Kind.UUID:
            return str(r)
        return r

    def fold(values: list[Any], starts: list[int], ends: list[int]) -> Any:
        items = [(to_python(v), from_micros(s), from_micros(e)) for v, s, e in zip(values, starts, ends)]
        return to_spark(aggregate.fold(items))

    return F.udf(fold, spark_type(result), useArrow=True)
