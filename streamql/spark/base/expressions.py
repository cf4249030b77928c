"""Compilation of expression nodes to native Spark Columns (no Python UDFs).

The semantics follow ``streamql.reference.expressions`` exactly: SQL null propagation,
division by zero gives null, ``//`` and ``%`` floor like Python, ``round`` rounds half to even.
"""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Callable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from streamql.expr.nodes import LEAVES, Binary, Call, Construct, Expr, GetField, Literal, Param, Unary
from streamql.payload import Kind, ValueType
from streamql.spark.base.schema import cast_type, spark_type
from streamql.spark.compat import checked_long, checks_overflow_itself
from streamql.time import to_micros

#: maps a lambda parameter index and a top-level field name to the column holding it
FieldResolver = Callable[[int, str], Column]

_WHITESPACE = " \t\n\r\f\v"


def compile_expr(expr: Expr, resolve: FieldResolver, leaves: Mapping[Expr, Column] | None = None) -> Column:
    """The Spark Column computing ``expr`` (scalars and nested payloads alike); ``leaves`` gives the
    columns holding a window projection's aggregates and group key, and top_k's rank."""
    if isinstance(expr, LEAVES):
        if leaves is None or expr not in leaves:
            raise TypeError(f"{expr.show()} has no column here")
        return leaves[expr]
    if isinstance(expr, Literal):
        return _literal(expr.value, expr.type)
    if isinstance(expr, GetField):
        if isinstance(expr.base, Param):
            return resolve(expr.base.index, expr.name)
        return compile_expr(expr.base, resolve, leaves).getField(expr.name)
    if isinstance(expr, Param):
        assert expr.type.schema is not None
        return F.struct(*[resolve(expr.index, f.name).alias(f.name) for f in expr.type.schema.fields])
    if isinstance(expr, Construct):
        return F.struct(*[c.alias(name) for name, c in construct_columns(expr, resolve, leaves)])
    if isinstance(expr, Unary):
        operand = compile_expr(expr.operand, resolve, leaves)
        if expr.op == "neg":
            return _checked(expr.type.kind, "-", F.lit(0), operand, -operand)
        if expr.op == "not":
            return ~operand
        return _checked(expr.type.kind, "+", F.lit(0), F.abs(operand), F.abs(operand))
    if isinstance(expr, Binary):
        return _binary(expr, compile_expr(expr.left, resolve, leaves), compile_expr(expr.right, resolve, leaves))
    if isinstance(expr, Call):
        return _call(expr, [compile_expr(a, resolve, leaves) for a in expr.args])
    raise TypeError(f"unknown expression node {expr!r}")


def construct_columns(expr: Expr, resolve: FieldResolver,
                      leaves: Mapping[Expr, Column] | None = None) -> list[tuple[str, Column]]:
    """The output columns of a payload-valued expression (the body of ``select``), each cast
    to its field's Spark type."""
    schema = expr.type.schema
    assert schema is not None
    if isinstance(expr, Construct):
        return [(f.name, compile_expr(a, resolve, leaves).cast(cast_type(f.type)))
                for f, a in zip(schema.fields, expr.args)]
    if isinstance(expr, Param):
        return [(f.name, resolve(expr.index, f.name)) for f in schema.fields]
    whole = compile_expr(expr, resolve, leaves)
    return [(f.name, whole.getField(f.name)) for f in schema.fields]


def _literal(value: Any, vtype: ValueType) -> Column:
    if value is None:
        return F.lit(None)
    if isinstance(value, datetime):
        return F.timestamp_micros(F.lit(to_micros(value)))
    if isinstance(value, uuid.UUID):
        return F.lit(str(value))
    if isinstance(value, bytes):
        return F.lit(bytearray(value)).cast("binary")
    return F.lit(value).cast(spark_type(vtype))


def _binary(expr: Binary, left: Column, right: Column) -> Column:
    op, kind = expr.op, expr.type.kind
    if op == "&":
        return left & right
    if op == "|":
        return left | right
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return {
            "==": left.__eq__, "!=": left.__ne__, "<": left.__lt__,
            "<=": left.__le__, ">": left.__gt__, ">=": left.__ge__,
        }[op](right)
    if op == "+":
        return F.concat(left, right) if kind is Kind.STR else _checked(kind, op, left, right, left + right)
    if op == "-":
        return _checked(kind, op, left, right, left - right)
    if op == "*":
        return _checked(kind, op, left, right, left * right)
    zero = right == 0
    if op == "/":
        if kind is Kind.FLOAT:
            left, right = left.cast("double"), right.cast("double")
        return F.when(zero, F.lit(None)).otherwise(left / right)
    if op == "%":
        return F.when(zero, F.lit(None)).otherwise(_python_mod(left, right))
    # op == "//"
    if kind is Kind.INT:
        exact = F.call_function("div", left - _python_mod(left, right), right)
        return F.when(zero, F.lit(None)).otherwise(exact)
    return F.when(zero, F.lit(None)).otherwise(_python_float_floordiv(left.cast("double"), right.cast("double")))


def _checked(kind: Kind, op: str, left: Column, right: Column, value: Column) -> Column:
    """``value``, a 64-bit overflow of an integer ``+``, ``-`` or ``*`` an error on Spark 3.5 too
    (``streamql.spark.compat.ansi_mode``: Spark 4 raises it itself)."""
    if kind is not Kind.INT or not checks_overflow_itself():
        return value
    a, b = left.cast("decimal(20,0)"), right.cast("decimal(20,0)")
    exact = {"+": a + b, "-": a - b, "*": a * b}[op]
    return checked_long(exact, value, f"an expression's {op}")


def _python_mod(left: Column, right: Column) -> Column:
    """Python's ``%``: the remainder takes the divisor's sign (Spark's ``%`` takes the dividend's,
    and ``pmod`` is never negative)."""
    remainder = left % right
    return F.when((remainder != 0) & ((remainder < 0) != (right < 0)), remainder + right).otherwise(remainder)


def _python_float_floordiv(left: Column, right: Column) -> Column:
    """Python's float ``//``, step by step as CPython's ``float_floor_div`` computes it (so that
    ``1.0 // 0.1 == 9.0``, where ``floor(1.0 / 0.1)`` would give 10.0)."""
    mod = left % right  # fmod
    adjust = (mod != 0) & ((right < 0) != (mod < 0))
    div = F.when(adjust, (left - mod) / right - 1.0).otherwise((left - mod) / right)
    floored = F.floor(div).cast("double")
    rounded = F.when(div - floored > 0.5, floored + 1.0).otherwise(floored)
    return F.when(div == 0, F.lit(0.0) * (left / right)).otherwise(rounded)


def _call(expr: Call, args: list[Column]) -> Column:
    fn, target = expr.fn, cast_type(expr.type)
    if fn == "is_null":
        return args[0].isNull()
    if fn == "coalesce":
        return F.coalesce(*[a.cast(target) for a in args])
    if fn == "greatest":
        return F.greatest(*[a.cast(target) for a in args])
    if fn == "least":
        return F.least(*[a.cast(target) for a in args])
    if fn == "if":
        return F.when(args[0], args[1].cast(target)).otherwise(args[2].cast(target))
    if fn == "is_in":
        present = [_literal(v, expr.args[0].type) for v in expr.values if v is not None]
        found = args[0].isin(*present) if present else F.lit(False)
        if any(v is None for v in expr.values):  # SQL: no match against a list holding null is null
            return F.when(args[0].isNull() | ~found, F.lit(None).cast("boolean")).otherwise(F.lit(True))
        return F.when(args[0].isNull(), F.lit(None).cast("boolean")).otherwise(found)
    s = args[0]
    if fn == "lower":
        return F.lower(s)
    if fn == "upper":
        return F.upper(s)
    if fn == "strip":
        # btrim: F.trim takes the characters to strip from Spark 4.0 only
        return F.call_function("btrim", s, F.lit(_WHITESPACE))
    if fn == "startswith":
        return s.startswith(args[1])
    if fn == "endswith":
        return s.endswith(args[1])
    if fn == "length":
        return F.char_length(s).cast("long")
    if fn == "slice":
        return _slice(s, expr.values[0], expr.values[1])
    if fn == "char_at":
        return _char_at(s, expr.values[0])
    if fn == "round":
        digits = expr.values[0] if expr.values else 0
        rounded = F.bround(s, digits)
        return rounded.cast(target)
    raise TypeError(f"unknown function {fn!r}")


def _slice_bound(length: Column, bound: int | None, default: Column) -> Column:
    if bound is None:
        return default
    if bound < 0:
        return F.greatest(length + F.lit(bound), F.lit(0))
    return F.least(F.lit(bound), length)


def _slice(s: Column, start: int | None, stop: int | None) -> Column:
    length = F.char_length(s)
    begin = _slice_bound(length, start, F.lit(0))
    end = _slice_bound(length, stop, length)
    return F.when(s.isNull(), F.lit(None)).otherwise(
        s.substr(begin + 1, F.greatest(end - begin, F.lit(0))))  # F.substring takes Columns from Spark 4.0


def _char_at(s: Column, index: int) -> Column:
    length = F.char_length(s)
    if index >= 0:
        return F.when(length > index, F.substring(s, index + 1, 1))
    return F.when(length >= -index, s.substr(length + F.lit(index + 1), F.lit(1)))
