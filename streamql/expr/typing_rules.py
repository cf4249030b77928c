"""Static typing of expression nodes: which operand types each operator accepts.

Errors are raised when the query is built and name the operator and the operands, e.g.
``operator '>' cannot compare str (e.meter) with int (5)``.
"""
from __future__ import annotations

from streamql.errors import ExpressionError
from streamql.expr.nodes import Expr
from streamql.payload import Kind, ValueType

NUMERIC = frozenset({Kind.INT, Kind.FLOAT, Kind.DECIMAL})
ORDERED = frozenset({Kind.INT, Kind.FLOAT, Kind.DECIMAL, Kind.STR, Kind.BYTES, Kind.DATETIME,
                     Kind.TIMEDELTA, Kind.BOOL, Kind.UUID})


def _describe(e: Expr) -> str:
    return f"{e.type} ({e.show()})"


def _nullable(*operands: Expr) -> bool:
    return any(o.type.nullable or o.type.kind is Kind.NULL for o in operands)


def _numeric_result(op: str, left: Expr, right: Expr) -> Kind | None:
    kinds = {left.type.kind, right.type.kind}
    if not kinds <= NUMERIC:
        return None
    if kinds == {Kind.INT}:
        return Kind.FLOAT if op == "/" else Kind.INT
    if Kind.DECIMAL in kinds:
        if op in ("*", "/"):
            raise ExpressionError(
                f"operator {op!r} on Decimal ({left.show()} {op} {right.show()}) is not offered: Spark's "
                "decimal(38, 18) arithmetic would round the result to 6 decimal places; use float fields "
                "if binary floating point is precise enough")
        if Kind.FLOAT in kinds or op in ("//", "%"):
            return None  # Python refuses Decimal with float; floor division of decimals is not offered
        return Kind.DECIMAL
    return Kind.FLOAT


_TEMPORAL: dict[tuple[str, Kind, Kind], Kind] = {
    ("+", Kind.DATETIME, Kind.TIMEDELTA): Kind.DATETIME,
    ("+", Kind.TIMEDELTA, Kind.DATETIME): Kind.DATETIME,
    ("+", Kind.TIMEDELTA, Kind.TIMEDELTA): Kind.TIMEDELTA,
    ("-", Kind.DATETIME, Kind.TIMEDELTA): Kind.DATETIME,
    ("-", Kind.DATETIME, Kind.DATETIME): Kind.TIMEDELTA,
    ("-", Kind.TIMEDELTA, Kind.TIMEDELTA): Kind.TIMEDELTA,
    ("*", Kind.TIMEDELTA, Kind.INT): Kind.TIMEDELTA,
    ("*", Kind.INT, Kind.TIMEDELTA): Kind.TIMEDELTA,
    ("+", Kind.STR, Kind.STR): Kind.STR,
}


def binary_type(op: str, left: Expr, right: Expr) -> ValueType:
    """The result type of ``left op right``; raises ``ExpressionError`` when they do not fit."""
    lk, rk = left.type.kind, right.type.kind
    nullable = _nullable(left, right)
    if op in ("&", "|"):
        if {lk, rk} <= {Kind.BOOL, Kind.NULL}:
            return ValueType(Kind.BOOL, nullable)
        raise ExpressionError(
            f"operator {op!r} combines conditions (bool), not {_describe(left)} and {_describe(right)}"
        )
    if op in ("==", "!=", "<", "<=", ">", ">="):
        if Kind.NULL in (lk, rk):
            raise ExpressionError(
                f"operator {op!r} with None is never true in SQL semantics; use sq.is_null(x) "
                f"or ~sq.is_null(x) (in {left.show()} {op} {right.show()})"
            )
        comparable = (lk == rk and lk in ORDERED) or ({lk, rk} <= NUMERIC)
        if not comparable:
            raise ExpressionError(f"operator {op!r} cannot compare {_describe(left)} with {_describe(right)}")
        return ValueType(Kind.BOOL, nullable)
    if Kind.BOOL in (lk, rk):
        raise ExpressionError(
            f"operator {op!r} does not apply to bool: {_describe(left)} {op} {_describe(right)}; "
            "use sq.if_(cond, 1, 0) to turn a condition into a number"
        )
    if Kind.NULL in (lk, rk):
        other = right if lk is Kind.NULL else left
        return other.type.with_nullable(True)
    kind = _TEMPORAL.get((op, lk, rk)) or _numeric_result(op, left, right)
    if kind is None:
        raise ExpressionError(f"operator {op!r} does not apply to {_describe(left)} and {_describe(right)}")
    # division by zero gives null (as SQL's try_divide), so these results may be null
    return ValueType(kind, nullable or op in ("/", "//", "%"))


def unary_type(op: str, operand: Expr) -> ValueType:
    kind = operand.type.kind
    if op == "not":
        if kind is Kind.BOOL:
            return operand.type
        raise ExpressionError(f"operator '~' negates a condition (bool), not {_describe(operand)}")
    if kind in NUMERIC or kind is Kind.TIMEDELTA:
        return operand.type
    name = "-" if op == "neg" else op
    raise ExpressionError(f"operator {name!r} does not apply to {_describe(operand)}")


def common_type(what: str, operands: list[Expr]) -> ValueType:
    """The type several branches share (``sq.if_``, ``sq.coalesce``): same kind, or numbers."""
    typed = [o for o in operands if o.type.kind is not Kind.NULL]
    if not typed:
        raise ExpressionError(f"{what}: at least one operand must not be the literal None")
    kinds = {o.type.kind for o in typed}
    nullable = any(o.type.nullable for o in operands) or len(typed) < len(operands)
    if len(kinds) == 1:
        first = typed[0].type
        if first.kind is Kind.STRUCT and len({o.type.schema for o in typed}) > 1:
            raise ExpressionError(f"{what}: operands are different payload types: "
                                  + ", ".join(_describe(o) for o in typed))
        return first.with_nullable(nullable)
    if kinds <= {Kind.INT, Kind.FLOAT}:
        return ValueType(Kind.FLOAT, nullable)
    if kinds <= {Kind.INT, Kind.DECIMAL}:
        return ValueType(Kind.DECIMAL, nullable)
    raise ExpressionError(f"{what}: operands have different types: " + ", ".join(_describe(o) for o in typed))


def assignable(target: ValueType, source: ValueType) -> bool:
    """Whether a value of ``source`` type may be stored in a field of ``target`` type."""
    if source.kind is Kind.NULL:
        return target.nullable
    if source.kind is Kind.STRUCT or target.kind is Kind.STRUCT:
        return source.kind is target.kind and source.schema == target.schema
    if source.kind is target.kind:
        return True
    return (source.kind, target.kind) in {(Kind.INT, Kind.FLOAT), (Kind.INT, Kind.DECIMAL)}
