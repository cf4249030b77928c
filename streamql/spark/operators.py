"""Compilation of operator nodes to DataFrame plans, one function per node class.

Every stream is a DataFrame with ``_sq_start``, ``_sq_end`` (microseconds), ``_sq_closed``
(the end is stable) and the payload fields as top-level columns.
"""
from __future__ import annotations

from functools import singledispatch
from typing import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamql.expr.nodes import Expr, Literal
from streamql.query import nodes
from streamql.spark.expressions import compile_expr, construct_columns
from streamql.spark.ingress import CLOSED, END, START
from streamql.time import INFINITY_MICROS, MAX_MICROS, MAX_SPAN_MICROS, MIN_MICROS, duration_micros

LIFETIME = (START, END, CLOSED)


def shifted(t: Column, d: Column | int) -> Column:
    """Saturating ``t + d`` (``streamql.time.shift`` as a Column): INFINITY stays, overflow saturates.

    ``d`` is clamped to the span of representable times first, so ``t + d`` fits in a long."""
    delta = F.lit(d) if isinstance(d, int) else F.greatest(F.least(d, F.lit(MAX_SPAN_MICROS)),
                                                           F.lit(-MAX_SPAN_MICROS))
    moved = t + delta
    return (F.when(t == F.lit(INFINITY_MICROS), F.lit(INFINITY_MICROS))
            .when(moved > F.lit(MAX_MICROS), F.lit(INFINITY_MICROS))
            .otherwise(F.greatest(moved, F.lit(MIN_MICROS))))



def _fields(node: nodes.Node) -> list[str]:
    return [f.name for f in node.schema.fields]


@singledispatch
def compile_node(node: nodes.Node, inputs: Mapping[str, DataFrame]) -> DataFrame:
    raise NotImplementedError(f"{type(node).__name__} does not run on Spark yet")


@compile_node.register
def _input(node: nodes.Input, inputs: Mapping[str, DataFrame]) -> DataFrame:
    return inputs[node.name]


def _by_name(index: int, name: str) -> Column:
    """One-input operators keep the payload fields as top-level columns."""
    return F.col(name)


def _column(expr: Expr) -> Column:
    return compile_expr(expr, _by_name)


@compile_node.register
def _where(node: nodes.Where, inputs: Mapping[str, DataFrame]) -> DataFrame:
    df = compile_node(node.source, inputs)
    return df.filter(F.coalesce(_column(node.predicate), F.lit(False)))


@compile_node.register
def _select(node: nodes.Select, inputs: Mapping[str, DataFrame]) -> DataFrame:
    df = compile_node(node.source, inputs)
    columns = construct_columns(node.projection, _by_name)
    return df.select(*LIFETIME, *[c.alias(name) for name, c in columns])


def duration_column(expr: Expr) -> Column:
    """A TIMEDELTA expression as microseconds (a constant stays a literal)."""
    if isinstance(expr, Literal):
        return F.lit(duration_micros(expr.value))
    interval = _column(expr)
    # a day-time interval added to the epoch gives its length in microseconds, exactly
    return F.unix_micros(F.timestamp_micros(F.lit(0)) + interval)


@compile_node.register
def _alter_duration(node: nodes.AlterDuration, inputs: Mapping[str, DataFrame]) -> DataFrame:
    df = compile_node(node.source, inputs)
    end = shifted(F.col(START), duration_column(node.duration))
    df = df.withColumn(END, end).withColumn(CLOSED, F.lit(True))
    return df.filter(F.col(END).isNotNull() & (F.col(END) > F.col(START)))


@compile_node.register
def _alter_lifetime(node: nodes.AlterLifetime, inputs: Mapping[str, DataFrame]) -> DataFrame:
    df = compile_node(node.source, inputs)
    moved = duration_micros(node.start_shift)
    start = shifted(F.col(START), moved)
    if node.duration is None:
        end, closed = shifted(F.col(END), moved), F.col(CLOSED)
    else:
        end, closed = shifted(start, duration_micros(node.duration)), F.lit(True)
    df = df.select(start.alias(START), end.alias(END), closed.alias(CLOSED), *_fields(node))
    return df.filter((F.col(END) > F.col(START)) & (F.col(START) < F.lit(INFINITY_MICROS)))


@compile_node.register
def _to_point(node: nodes.ToPoint, inputs: Mapping[str, DataFrame]) -> DataFrame:
    df = compile_node(node.source, inputs).filter(F.col(START) < F.lit(INFINITY_MICROS))
    return df.select(F.col(START), shifted(F.col(START), 1).alias(END), F.lit(True).alias(CLOSED), *_fields(node))
