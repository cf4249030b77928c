"""Compilation of operator nodes to DataFrame plans, one function per node class.

Every stream is a ``Flow``: a DataFrame with ``_sq_start``, ``_sq_end`` (microseconds),
``_sq_closed`` (the whole event is stable), ``_sq_head`` (start and payload are stable), the
group-key columns of enclosing ``group_apply``s, and the payload fields as top-level columns;
together with the stream's final CTI and its greatest finite CTI.
"""
from __future__ import annotations

from functools import singledispatch
from typing import Mapping

import attrs
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamql.expr.nodes import Expr, Literal
from streamql.query import nodes
from streamql.spark.expressions import compile_expr, construct_columns
from streamql.spark.ingress import CLOSED, END, HEAD, START
from streamql.time import INFINITY_MICROS, MAX_MICROS, MAX_SPAN_MICROS, MIN_MICROS, duration_micros

LIFETIME = (START, END, CLOSED, HEAD)
#: the key of the group's stream inside a ``group_apply`` sub-query in a compilation environment
GROUP = ""


@attrs.frozen
class Flow:
    """A stream at some operator's output: its plan, final CTI, greatest finite CTI and the
    group-key columns it carries (innermost last)."""

    frame: DataFrame = attrs.field(eq=False)
    cti: int | None
    finite_cti: int | None
    keys: tuple[str, ...] = ()

    def derived(self, node: nodes.Node, frame: DataFrame) -> Flow:
        """``frame`` with the CTIs of ``node`` (a one-input operator with a static CTI rule)."""
        return Flow(frame, node.output_cti((self.cti,)), node.output_cti((self.finite_cti,)), self.keys)


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
def compile_node(node: nodes.Node, env: Mapping[str, Flow]) -> Flow:
    """The plan of ``node`` given the flows of the inputs (by name; ``GROUP`` inside a group)."""
    raise NotImplementedError(f"{type(node).__name__} does not run on Spark yet")


@compile_node.register
def _input(node: nodes.Input, env: Mapping[str, Flow]) -> Flow:
    return env[node.name]


def by_name(index: int, name: str) -> Column:
    """One-input operators keep the payload fields as top-level columns."""
    return F.col(name)


def _column(expr: Expr) -> Column:
    return compile_expr(expr, by_name)


@compile_node.register
def _where(node: nodes.Where, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    return source.derived(node, source.frame.filter(F.coalesce(_column(node.predicate), F.lit(False))))


@compile_node.register
def _select(node: nodes.Select, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    columns = construct_columns(node.projection, by_name)
    return source.derived(node, source.frame.select(*LIFETIME, *source.keys,
                                                    *[c.alias(name) for name, c in columns]))


def duration_column(expr: Expr) -> Column:
    """A TIMEDELTA expression as microseconds (a constant stays a literal)."""
    if isinstance(expr, Literal):
        return F.lit(duration_micros(expr.value))
    interval = _column(expr)
    # a day-time interval added to the epoch gives its length in microseconds, exactly
    return F.unix_micros(F.timestamp_micros(F.lit(0)) + interval)


@compile_node.register
def _alter_duration(node: nodes.AlterDuration, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    end = shifted(F.col(START), duration_column(node.duration))
    # the end follows the start: the event is stable once its start and payload are
    df = source.frame.withColumn(END, end).withColumn(CLOSED, F.col(HEAD))
    return source.derived(node, df.filter(F.col(END).isNotNull() & (F.col(END) > F.col(START))))


@compile_node.register
def _alter_lifetime(node: nodes.AlterLifetime, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    moved = duration_micros(node.start_shift)
    start = shifted(F.col(START), moved)
    if node.duration is None:
        end, closed = shifted(F.col(END), moved), F.col(CLOSED)
    else:
        end, closed = shifted(start, duration_micros(node.duration)), F.col(HEAD)
    df = source.frame.select(start.alias(START), end.alias(END), closed.alias(CLOSED), HEAD, *source.keys,
                             *_fields(node))
    return source.derived(node, df.filter((F.col(END) > F.col(START)) & (F.col(START) < F.lit(INFINITY_MICROS))))


@compile_node.register
def _to_point(node: nodes.ToPoint, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    df = source.frame.filter(F.col(START) < F.lit(INFINITY_MICROS))
    return source.derived(node, df.select(F.col(START), shifted(F.col(START), 1).alias(END),
                                          F.col(HEAD).alias(CLOSED), HEAD, *source.keys, *_fields(node)))
