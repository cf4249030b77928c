"""Lambda tracing: a lambda receives proxies whose operations build expression nodes.

``trace(lambda e: e.consumption > 0, [schema])`` returns ``Binary('>', e.consumption, 0)``.
Python constructs that cannot be overloaded (``and``, ``or``, ``not``, ``if``-expressions,
``in``, ``len``, ``max``, ``bool``) reach ``__bool__``/``__contains__``/``__len__`` and fail
with a ``TypeError`` that names the replacement.
"""
from __future__ import annotations

import inspect
from datetime import datetime
from typing import Any, Callable, Iterable, NoReturn, Sequence, TypeVar, cast

from streamql.errors import ExpressionError
from streamql.expr import typing_rules as rules
from streamql.expr.nodes import Binary, Call, Construct, Expr, GetField, Literal, Param, Unary, struct_type
from streamql.payload import Kind, PayloadSchema, ValueType, is_payload_class, python_kind, schema_of

X = TypeVar("X")

_NO_TRUTH = (
    "a traced expression ({shown}) has no Python truth value: Python's `and`, `or`, `not`, "
    "`x if c else y`, `in`, and built-ins such as bool(), max() and min() need one. Use `&`, `|`, `~` "
    "(with parentheses around comparisons), sq.if_(cond, then, else_), sq.is_in(x, values), "
    "sq.greatest(...)/sq.least(...)"
)


class Traced:
    """A stand-in for a value inside a traced lambda; ``node`` is the expression built so far."""

    __slots__ = ("_node",)

    def __init__(self, node: Expr) -> None:
        object.__setattr__(self, "_node", node)

    @property
    def node(self) -> Expr:
        return cast(Expr, object.__getattribute__(self, "_node"))

    def __setattr__(self, name: str, value: object) -> None:
        raise ExpressionError(f"cannot assign {name!r} on {self.node.show()}: queries do not mutate events")

    def __repr__(self) -> str:
        return f"<traced {self.node.show()}: {self.node.type}>"

    # --- what Python cannot overload -------------------------------------------------
    def __bool__(self) -> NoReturn:
        raise ExpressionError(_NO_TRUTH.format(shown=self.node.show()))

    def __contains__(self, item: object) -> NoReturn:
        raise ExpressionError(f"`x in {self.node.show()}` is not supported: use sq.is_in(x, values)")

    def __len__(self) -> NoReturn:
        raise ExpressionError(f"len({self.node.show()}) forces a Python value: use sq.length(x)")

    def __iter__(self) -> NoReturn:
        raise ExpressionError(
            f"{self.node.show()} is not iterable: max()/min() over fields are sq.greatest(a, b)/sq.least(a, b)"
        )

    def __index__(self) -> NoReturn:
        raise ExpressionError(f"{self.node.show()} cannot be used as a Python int")

    def __float__(self) -> NoReturn:
        raise ExpressionError(f"float({self.node.show()}) forces a Python value; arithmetic with 1.0 converts")

    def __int__(self) -> NoReturn:
        raise ExpressionError(f"int({self.node.show()}) forces a Python value; use round(x) or x // 1")

    def __hash__(self) -> NoReturn:
        # `x in {1, 2}` hashes x before comparing: without this it fails with a bare
        # "unhashable type" instead of pointing to sq.is_in (docs/expressions.md)
        raise ExpressionError(
            f"{self.node.show()} cannot be hashed (as in `x in {{...}}` or a dict key): use sq.is_in(x, values)"
        )


class StructProxy(Traced):
    """A payload (or nested payload) inside a traced lambda: attribute access reads a field."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Traced:
        node = self.node
        schema = node.type.schema
        assert schema is not None
        field = schema.field(name)
        if field is None:
            raise ExpressionError(
                f"{schema.name} has no field {name!r} (in {node.show()}.{name}); "
                f"its fields are: {', '.join(schema.field_names())}"
            )
        ftype = field.type.with_nullable(field.type.nullable or node.type.nullable)
        return wrap(GetField(ftype, node, name))

    def __eq__(self, other: object) -> NoReturn:
        raise ExpressionError(f"payloads cannot be compared as a whole ({self.node.show()}); compare fields")

    __ne__ = __eq__
    __hash__ = Traced.__hash__  # defining __eq__ would otherwise set __hash__ to None


class ValueProxy(Traced):
    """A scalar inside a traced lambda: operators and methods build expression nodes."""

    __slots__ = ()

    def __getattr__(self, name: str) -> NoReturn:
        raise ExpressionError(
            f"{self.node.show()} is a {self.node.type}, which has no attribute {name!r} in a query"
        )

    # arithmetic
    def __add__(self, o: object) -> Traced: return _binary("+", self, o)
    def __radd__(self, o: object) -> Traced: return _binary("+", o, self)
    def __sub__(self, o: object) -> Traced: return _binary("-", self, o)
    def __rsub__(self, o: object) -> Traced: return _binary("-", o, self)
    def __mul__(self, o: object) -> Traced: return _binary("*", self, o)
    def __rmul__(self, o: object) -> Traced: return _binary("*", o, self)
    def __truediv__(self, o: object) -> Traced: return _binary("/", self, o)
    def __rtruediv__(self, o: object) -> Traced: return _binary("/", o, self)
    def __floordiv__(self, o: object) -> Traced: return _binary("//", self, o)
    def __rfloordiv__(self, o: object) -> Traced: return _binary("//", o, self)
    def __mod__(self, o: object) -> Traced: return _binary("%", self, o)
    def __rmod__(self, o: object) -> Traced: return _binary("%", o, self)
    def __neg__(self) -> Traced: return _unary("neg", self)
    def __pos__(self) -> Traced: return self
    def __abs__(self) -> Traced: return _unary("abs", self)
    def __invert__(self) -> Traced: return _unary("not", self)

    def __round__(self, ndigits: int | None = None) -> Traced:
        node = self.node
        if node.type.kind not in rules.NUMERIC:
            raise ExpressionError(f"round() applies to numbers, not {node.type} ({node.show()})")
        if ndigits is None:
            kind = Kind.DECIMAL if node.type.kind is Kind.DECIMAL else Kind.INT
            return wrap(Call(ValueType(kind, node.type.nullable), "round", (node,), ()))
        if not isinstance(ndigits, int) or isinstance(ndigits, bool):
            raise ExpressionError("round(x, ndigits): ndigits must be a constant int")
        return wrap(Call(node.type, "round", (node,), (ndigits,)))

    # comparisons
    def __eq__(self, o: object) -> Traced: return _binary("==", self, o)  # type: ignore[override]
    def __ne__(self, o: object) -> Traced: return _binary("!=", self, o)  # type: ignore[override]
    def __lt__(self, o: object) -> Traced: return _binary("<", self, o)
    def __le__(self, o: object) -> Traced: return _binary("<=", self, o)
    def __gt__(self, o: object) -> Traced: return _binary(">", self, o)
    def __ge__(self, o: object) -> Traced: return _binary(">=", self, o)

    __hash__ = Traced.__hash__  # defining __eq__ would otherwise set __hash__ to None

    # conditions
    def __and__(self, o: object) -> Traced: return _binary("&", self, o)
    def __rand__(self, o: object) -> Traced: return _binary("&", o, self)
    def __or__(self, o: object) -> Traced: return _binary("|", self, o)
    def __ror__(self, o: object) -> Traced: return _binary("|", o, self)

    # strings
    def _string(self, fn: str, args: Sequence[object] = (), kind: Kind = Kind.STR) -> Traced:
        node = self.node
        if node.type.kind is not Kind.STR:
            raise ExpressionError(f".{fn}() applies to str, not {node.type} ({node.show()})")
        operands = [node] + [to_expr(a) for a in args]
        for a in operands[1:]:
            if a.type.kind is not Kind.STR:
                raise ExpressionError(f".{fn}() takes a str argument, not {a.type} ({a.show()})")
        nullable = any(o.type.nullable or o.type.kind is Kind.NULL for o in operands)
        return wrap(Call(ValueType(kind, nullable), fn, tuple(operands), ()))

    def lower(self) -> Traced: return self._string("lower")
    def upper(self) -> Traced: return self._string("upper")
    def strip(self) -> Traced: return self._string("strip")
    def startswith(self, prefix: object) -> Traced: return self._string("startswith", [prefix], Kind.BOOL)
    def endswith(self, suffix: object) -> Traced: return self._string("endswith", [suffix], Kind.BOOL)

    def __getitem__(self, key: object) -> Traced:
        node = self.node
        if node.type.kind is not Kind.STR:
            raise ExpressionError(f"indexing applies to str, not {node.type} ({node.show()})")
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise ExpressionError(f"slices with a step are not supported ({node.show()}[::{key.step}])")
            for bound in (key.start, key.stop):
                if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)):
                    raise ExpressionError("slice bounds must be constant ints")
            return wrap(Call(node.type, "slice", (node,), (key.start, key.stop)))
        if isinstance(key, int) and not isinstance(key, bool):
            # an index past the end gives null (SQL style) rather than an error mid-job
            return wrap(Call(node.type.with_nullable(True), "char_at", (node,), (key,)))
        raise ExpressionError(f"{node.show()}[...] needs a constant int or slice")


def wrap(node: Expr) -> Traced:
    if node.type.kind is Kind.STRUCT:
        return StructProxy(node)
    return ValueProxy(node)


def to_expr(value: object) -> Expr:
    """A traced value or a Python constant as an expression node."""
    if isinstance(value, Traced):
        return value.node
    if is_payload_class(type(value)):
        schema = schema_of(type(value))
        args = []
        for field in schema.fields:
            arg = to_expr(getattr(value, field.name))
            if not rules.assignable(field.type, arg.type):
                raise ExpressionError(
                    f"{schema.name}.{field.name} is {field.type}, but the query gives it "
                    f"{arg.type} ({arg.show()})"
                )
            args.append(arg)
        return Construct(struct_type(schema), schema, tuple(args))
    kind = python_kind(value)
    if kind is None:
        raise ExpressionError(
            f"{value!r} ({type(value).__name__}) cannot be used in a query; "
            "constants must be bool, int, float, str, bytes, Decimal, datetime, timedelta, UUID or None"
        )
    if kind is Kind.DATETIME:
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            raise ExpressionError(f"{value!r} is a naive datetime: give it a time zone (UTC instants only)")
    return Literal(ValueType(kind, kind is Kind.NULL), value)


def _binary(op: str, left: object, right: object) -> Traced:
    l, r = to_expr(left), to_expr(right)
    return wrap(Binary(rules.binary_type(op, l, r), op, l, r))


def _unary(op: str, operand: Traced) -> Traced:
    node = operand.node
    return wrap(Unary(rules.unary_type(op, node), op, node))


# --- tracing a lambda ----------------------------------------------------------------


def trace(fn: Callable[..., Any], schemas: Sequence[PayloadSchema], what: str) -> Expr:
    """Calls ``fn`` with one proxy per schema and returns the expression it built.

    ``what`` names the operator for error messages (``"where"``, ``"select"``, ...).
    """
    names = param_names(fn, len(schemas), what)
    proxies = [wrap(Param(struct_type(s), i, n)) for i, (s, n) in enumerate(zip(schemas, names))]
    return trace_call(fn, proxies, what)


def trace_call(fn: Callable[..., Any], arguments: Sequence[object], what: str) -> Expr:
    """Calls ``fn`` with the given proxies (payloads, windows, group keys) and returns the
    expression it built; a plain Python result is an error naming ``what``."""
    return _built(fn(*arguments), what)


def trace_condition(fn: Callable[..., Any], schemas: Sequence[PayloadSchema], what: str) -> Expr:
    """Traces a condition of the payloads (a BOOL expression), where the plain ``True`` — no
    condition at all, Esper's ``every a -> b`` — is the literal true (``False`` stays an error: it
    is what ``x is None`` gives a proxy).

    >>> trace_condition(lambda a, b: True, schemas, "followed_by on").show()  # doctest: +SKIP
    'True'
    """
    names = param_names(fn, len(schemas), what)
    proxies = [wrap(Param(struct_type(s), i, n)) for i, (s, n) in enumerate(zip(schemas, names))]
    result = fn(*proxies)
    expr = to_expr(True) if result is True else _built(result, what)
    if expr.type.kind is not Kind.BOOL:
        raise ExpressionError(f"{what} needs a {Kind.BOOL.value} expression, got {expr.type} ({expr.show()})")
    return expr


def _built(result: object, what: str) -> Expr:
    """The expression a traced lambda returned; a plain Python result is an error naming ``what``."""
    if isinstance(result, Traced) or is_payload_class(type(result)):
        return to_expr(result)
    hint = ""
    if isinstance(result, bool):
        hint = (" — `x is None` / `x is not None` compare the tracing proxy itself and are always "
                "constant: use sq.is_null(x) or ~sq.is_null(x)")
    raise ExpressionError(
        f"the lambda given to {what} returned the plain Python value {result!r} instead of an "
        f"expression of its argument{hint}"
    )


def param_names(fn: Callable[..., Any], count: int, what: str) -> list[str]:
    """The names of ``fn``'s positional parameters (for messages); checks it takes ``count``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"arg{i}" for i in range(count)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != count and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise ExpressionError(f"{what} takes a function of {count} argument(s), got one of {len(positional)}")
    return [p.name for p in positional[:count]] + [f"arg{i}" for i in range(len(positional), count)]


def trace_typed(fn: Callable[..., Any], schemas: Sequence[PayloadSchema], what: str, kind: Kind) -> Expr:
    """Traces ``fn`` and checks its result has the given kind (e.g. BOOL for ``where``)."""
    expr = trace(fn, schemas, what)
    if expr.type.kind is not kind and not (kind is Kind.FLOAT and expr.type.kind is Kind.INT):
        raise ExpressionError(f"{what} needs a {kind.value} expression, got {expr.type} ({expr.show()})")
    return expr


# --- helpers for what Python syntax cannot overload ------------------------------------


def if_(cond: bool, then: X, else_: X) -> X:
    """``then`` where ``cond`` holds, else ``else_`` (SQL ``CASE WHEN``; a null condition takes ``else_``).

    >>> # stream.select(lambda e: Level(sq.if_(e.v > 10, "high", "low")))
    """
    c, t, e = to_expr(cond), to_expr(then), to_expr(else_)
    if c.type.kind is not Kind.BOOL:
        raise ExpressionError(f"sq.if_ needs a bool condition, got {c.type} ({c.show()})")
    vtype = rules.common_type("sq.if_", [t, e])
    return cast(X, wrap(Call(vtype, "if", (c, t, e), ())))


def is_in(x: X, values: Iterable[X]) -> bool:
    """Whether ``x`` is one of the constant ``values`` (SQL ``IN``)."""
    node = to_expr(x)
    constants = tuple(values)
    for v in constants:
        if isinstance(v, Traced):
            raise ExpressionError("sq.is_in(x, values): values must be constants")
        lit = to_expr(v)
        if lit.type.kind is not Kind.NULL:
            rules.binary_type("==", node, lit)
    nullable = node.type.nullable or any(v is None for v in constants)
    return cast(bool, wrap(Call(ValueType(Kind.BOOL, nullable), "is_in", (node,), constants)))


def not_(cond: bool) -> bool:
    """The negation of a condition: ``~cond`` at run time, typed ``bool`` for mypy (whose
    stubs type ``~`` on a bool as ``int``)."""
    node = to_expr(cond)
    return cast(bool, wrap(Unary(rules.unary_type("not", node), "not", node)))


def is_null(x: object) -> bool:
    """Whether ``x`` is null (use this, not ``x is None``, inside a query)."""
    return cast(bool, wrap(Call(ValueType(Kind.BOOL), "is_null", (to_expr(x),), ())))


def coalesce(*xs: X | None) -> X:
    """The first of ``xs`` that is not null."""
    nodes = [to_expr(x) for x in xs]
    if not nodes:
        raise ExpressionError("sq.coalesce needs at least one argument")
    vtype = rules.common_type("sq.coalesce", nodes)
    vtype = vtype.with_nullable(all(n.type.nullable or n.type.kind is Kind.NULL for n in nodes))
    return cast(X, wrap(Call(vtype, "coalesce", tuple(nodes), ())))


def _extreme(fn: str, xs: Sequence[object]) -> Any:
    nodes = [to_expr(x) for x in xs]
    if len(nodes) < 2:
        raise ExpressionError(f"sq.{fn} needs at least two arguments")
    vtype = rules.common_type(f"sq.{fn}", nodes)
    for n in nodes:
        if n.type.kind is not Kind.NULL:
            rules.binary_type("<", n, nodes[0])  # raises unless the operands are ordered alike
    return wrap(Call(vtype, fn, tuple(nodes), ()))


def greatest(*xs: X) -> X:
    """The greatest of ``xs`` (``max`` inside a query), skipping nulls."""
    return cast(X, _extreme("greatest", xs))


def least(*xs: X) -> X:
    """The least of ``xs`` (``min`` inside a query), skipping nulls."""
    return cast(X, _extreme("least", xs))


def length(x: str) -> int:
    """The number of characters of a string (``len`` inside a query)."""
    node = to_expr(x)
    if node.type.kind is not Kind.STR:
        raise ExpressionError(f"sq.length applies to str, not {node.type} ({node.show()})")
    return cast(int, wrap(Call(ValueType(Kind.INT, node.type.nullable), "length", (node,), ())))
