"""Scalar expression nodes: immutable, hashable, each with its static ``ValueType``.

Nodes know nothing of streams or Spark: ``streamql.spark.base.expressions`` compiles them to
Spark Columns and ``streamql.reference.expressions`` evaluates them in Python.
"""
from __future__ import annotations

from typing import Any

import attrs

from streamql.payload import Kind, PayloadSchema, ValueType


@attrs.frozen(cache_hash=True)
class Expr:
    type: ValueType

    def show(self) -> str:
        raise NotImplementedError


@attrs.frozen(cache_hash=True)
class Param(Expr):
    """The ``index``-th argument of a traced lambda (its payload)."""

    index: int
    name: str = attrs.field(eq=False, hash=False)

    def show(self) -> str:
        return self.name


@attrs.frozen(cache_hash=True)
class GetField(Expr):
    base: Expr
    name: str

    def show(self) -> str:
        return f"{self.base.show()}.{self.name}"


@attrs.frozen(cache_hash=True)
class Literal(Expr):
    value: Any

    def show(self) -> str:
        return repr(self.value)


@attrs.frozen(cache_hash=True)
class Unary(Expr):
    op: str  # "neg", "not", "abs"
    operand: Expr

    def show(self) -> str:
        symbol = {"neg": "-", "not": "~"}.get(self.op)
        if symbol is None:
            return f"{self.op}({self.operand.show()})"
        return f"{symbol}{self.operand.show()}"


@attrs.frozen(cache_hash=True)
class Binary(Expr):
    op: str  # "+", "-", "*", "/", "//", "%", "==", "!=", "<", "<=", ">", ">=", "&", "|"
    left: Expr
    right: Expr

    def show(self) -> str:
        return f"({self.left.show()} {self.op} {self.right.show()})"


@attrs.frozen(cache_hash=True)
class Call(Expr):
    """A named function: string methods, ``round``, ``sq.if_``, ``sq.is_null``, ...

    ``args`` are expressions; ``values`` holds constant arguments (``is_in``'s values,
    ``round``'s digits, slice bounds).
    """

    fn: str
    args: tuple[Expr, ...]
    values: tuple[Any, ...] = ()

    def show(self) -> str:
        shown = [a.show() for a in self.args] + [repr(v) for v in self.values]
        if self.fn in METHODS and self.args:
            return f"{shown[0]}.{self.fn}({', '.join(shown[1:])})"
        return f"{self.fn}({', '.join(shown)})"


#: functions shown as methods of their first argument
METHODS = frozenset({"lower", "upper", "strip", "startswith", "endswith"})


@attrs.frozen(cache_hash=True)
class Construct(Expr):
    """A payload instance built from expressions (the body of ``select``)."""

    schema: PayloadSchema
    args: tuple[Expr, ...]

    def show(self) -> str:
        parts = ", ".join(f"{f.name}={a.show()}" for f, a in zip(self.schema.fields, self.args))
        return f"{self.schema.name}({parts})"


@attrs.frozen(cache_hash=True)
class Aggregate(Expr):
    """An aggregate over the events of a window: ``fn`` is ``count``, ``sum``, ``avg``, ``min``,
    ``max`` or ``user``; ``arg`` is an expression of the event payload (its ``Param`` 0), ``None``
    for ``count``; ``user`` is the ``UserAggregate`` of ``fn == "user"``.

    Inside a window's ``select`` aggregates are leaves: the projection combines their values."""

    fn: str
    arg: Expr | None
    user: Any = None

    def show(self) -> str:
        name = self.fn if self.user is None else type(self.user).__name__
        return f"w.{name}({'' if self.arg is None else self.arg.show()})"


@attrs.frozen(cache_hash=True)
class GroupKey(Expr):
    """The group key inside a grouped window's ``select`` (``w.key``) or ``group_apply``'s ``result``."""

    def show(self) -> str:
        return "key"


@attrs.frozen(cache_hash=True)
class Rank(Expr):
    """An event's rank in its window inside ``top_k``'s ``select`` (its second argument)."""

    def show(self) -> str:
        return "rank"


#: the leaves whose values a projection's caller gives (``leaves`` of the evaluators)
LEAVES = (Aggregate, GroupKey, Rank)


def struct_type(schema: PayloadSchema) -> ValueType:
    return ValueType(Kind.STRUCT, schema=schema)


def children(expr: Expr) -> tuple[Expr, ...]:
    """The operand nodes of ``expr`` (an aggregate's argument is in another scope: not a child)."""
    if isinstance(expr, GetField):
        return (expr.base,)
    if isinstance(expr, Unary):
        return (expr.operand,)
    if isinstance(expr, Binary):
        return (expr.left, expr.right)
    if isinstance(expr, (Call, Construct)):
        return expr.args
    return ()


def params_of(expr: Expr) -> frozenset[int]:
    """The indices of the lambda parameters an expression reads."""
    if isinstance(expr, Param):
        return frozenset({expr.index})
    result: frozenset[int] = frozenset()
    for child in children(expr):
        result |= params_of(child)
    return result


def aggregates_of(expr: Expr) -> list[Aggregate]:
    """The distinct aggregates a window projection reads, in first-use order."""
    found: list[Aggregate] = []

    def visit(e: Expr) -> None:
        if isinstance(e, Aggregate):
            if e not in found:
                found.append(e)
            return
        for child in children(e):
            visit(child)

    visit(expr)
    return found


def reads_key(expr: Expr) -> bool:
    """Whether an expression reads the group key."""
    return isinstance(expr, GroupKey) or any(reads_key(c) for c in children(expr))
