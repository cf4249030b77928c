"""Python evaluation of expression nodes with SQL null semantics (the specification the Spark
compilation is tested against): null in, null out; ``&``/``|`` are three-valued; division by
zero gives null; ``//`` and ``%`` floor as Python does."""
from __future__ import annotations

import decimal
import operator
from typing import Any, Callable, Mapping, Sequence

from streamql.expr.nodes import LEAVES, Binary, Call, Construct, Expr, GetField, Literal, Param, Unary
from streamql.payload import Kind, ValueType

_WHITESPACE = " \t\n\r\f\v"

_UNARY: dict[str, Callable[[Any], Any]] = {"neg": operator.neg, "not": operator.not_, "abs": abs}

_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}


def evaluate(expr: Expr, args: Sequence[Any], leaves: Mapping[Expr, Any] | None = None) -> Any:
    """The value of ``expr`` for the payloads ``args`` (one per lambda parameter); ``leaves`` gives
    the values of a window projection's aggregates and group key, and of top_k's rank."""
    if isinstance(expr, LEAVES):
        if leaves is None or expr not in leaves:
            raise TypeError(f"{expr.show()} has no value here")
        return leaves[expr]
    if isinstance(expr, Param):
        return args[expr.index]
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, GetField):
        base = evaluate(expr.base, args, leaves)
        return None if base is None else getattr(base, expr.name)
    if isinstance(expr, Unary):
        value = evaluate(expr.operand, args, leaves)
        if value is None:
            return None
        return _UNARY[expr.op](value)
    if isinstance(expr, Binary):
        return _binary(expr, evaluate(expr.left, args, leaves), evaluate(expr.right, args, leaves))
    if isinstance(expr, Call):
        return _call(expr, [evaluate(a, args, leaves) for a in expr.args])
    if isinstance(expr, Construct):
        values = [coerce(f.type, evaluate(a, args, leaves)) for f, a in zip(expr.schema.fields, expr.args)]
        return expr.schema.construct(values)
    raise TypeError(f"unknown expression node {expr!r}")


def _binary(expr: Binary, left: Any, right: Any) -> Any:
    op = expr.op
    if op == "&":
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    if op == "|":
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    if left is None or right is None:
        return None
    if op in ("/", "//", "%"):
        if right == 0:
            return None
        if op == "/":
            if expr.type.kind is Kind.FLOAT:
                return float(left) / float(right)
            return left / right
        return left // right if op == "//" else left % right
    return coerce(expr.type, _ARITHMETIC[op](left, right))


def _call(expr: Call, values: list[Any]) -> Any:
    fn = expr.fn
    if fn == "is_null":
        return values[0] is None
    if fn == "coalesce":
        return coerce(expr.type, next((v for v in values if v is not None), None))
    if fn in ("greatest", "least"):
        present = [v for v in values if v is not None]
        if not present:
            return None
        return coerce(expr.type, max(present) if fn == "greatest" else min(present))
    if fn == "if":
        return coerce(expr.type, values[1] if values[0] is True else values[2])
    if fn == "is_in":
        x = values[0]
        if x is None:
            return None
        if any(v is not None and x == v for v in expr.values):
            return True
        return None if any(v is None for v in expr.values) else False
    if any(v is None for v in values):
        return None
    s = values[0]
    if fn == "lower":
        return s.lower()
    if fn == "upper":
        return s.upper()
    if fn == "strip":
        return s.strip(_WHITESPACE)
    if fn == "startswith":
        return s.startswith(values[1])
    if fn == "endswith":
        return s.endswith(values[1])
    if fn == "length":
        return len(s)
    if fn == "slice":
        return s[expr.values[0]:expr.values[1]]
    if fn == "char_at":
        i = expr.values[0]
        return s[i] if -len(s) <= i < len(s) else None
    if fn == "round":
        return _round(s, expr.values[0] if expr.values else None, expr.type)
    raise TypeError(f"unknown function {fn!r}")


def _round(value: Any, digits: int | None, vtype: ValueType) -> Any:
    """Rounds half to even. A float is rounded as the decimal it prints as (``round(0.35, 1)`` is
    0.4, where Python's ``round`` sees the binary value just below 0.35 and gives 0.3): this is what
    Spark's ``bround`` does, and what a reader of the query expects."""
    if isinstance(value, float) and digits is not None:
        exact = decimal.Decimal(repr(value))
        quantum = decimal.Decimal(1).scaleb(-digits)
        return float(exact.quantize(quantum, rounding=decimal.ROUND_HALF_EVEN))
    if isinstance(value, decimal.Decimal):
        quantum = decimal.Decimal(1).scaleb(-(digits or 0))
        return value.quantize(quantum, rounding=decimal.ROUND_HALF_EVEN)
    return coerce(vtype, round(value, digits) if digits is not None else round(value))


def coerce(vtype: ValueType, value: Any) -> Any:
    """Widens an int to the float or Decimal a field or a common type asks for."""
    if value is None or isinstance(value, bool):
        return value
    if vtype.kind is Kind.FLOAT and isinstance(value, int):
        return float(value)
    if vtype.kind is Kind.DECIMAL and isinstance(value, int):
        return decimal.Decimal(value)
    return value
