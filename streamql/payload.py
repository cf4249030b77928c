"""Payload types: dataclass or attrs classes, validated into a ``PayloadSchema``.

A schema is an ordered tuple of fields, each with a ``ValueType``. Field order is the
column order in Spark. Nested payload classes become structs; ``Optional[X]`` makes a
field nullable, every other field is non-nullable.
"""
from __future__ import annotations

import dataclasses
import decimal
import functools
import types
import typing
import uuid
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Union

import attrs

from streamql.errors import SchemaError


class Kind(Enum):
    """The kinds of values a payload field or an expression can have."""

    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    STR = "str"
    BYTES = "bytes"
    DECIMAL = "Decimal"
    DATETIME = "datetime"
    TIMEDELTA = "timedelta"
    UUID = "UUID"
    STRUCT = "struct"
    NULL = "None"  # the type of the literal None only


_PYTHON_KINDS: dict[Any, Kind] = {
    bool: Kind.BOOL,
    int: Kind.INT,
    float: Kind.FLOAT,
    str: Kind.STR,
    bytes: Kind.BYTES,
    decimal.Decimal: Kind.DECIMAL,
    datetime: Kind.DATETIME,
    timedelta: Kind.TIMEDELTA,
    uuid.UUID: Kind.UUID,
}

RESERVED_NAMES = frozenset({"start", "end"})
RESERVED_PREFIX = "_sq_"


@attrs.frozen
class ValueType:
    """The static type of a field or an expression."""

    kind: Kind
    nullable: bool = False
    schema: PayloadSchema | None = None  # for STRUCT

    def __str__(self) -> str:
        name = self.schema.cls.__name__ if self.schema is not None else self.kind.value
        return f"{name} | None" if self.nullable and self.kind is not Kind.NULL else name

    def with_nullable(self, nullable: bool) -> ValueType:
        return attrs.evolve(self, nullable=nullable)


@attrs.frozen
class PayloadField:
    name: str
    init_name: str  # the constructor's keyword (attrs strips a leading underscore)
    type: ValueType


@attrs.frozen(cache_hash=True)
class PayloadSchema:
    """A validated payload class: its fields in declaration order."""

    cls: type
    fields: tuple[PayloadField, ...] = attrs.field(eq=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.cls.__name__

    def field(self, name: str) -> PayloadField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def construct(self, values: typing.Sequence[Any]) -> Any:
        return self.cls(**{f.init_name: v for f, v in zip(self.fields, values)})


def is_payload_class(cls: object) -> bool:
    return isinstance(cls, type) and (dataclasses.is_dataclass(cls) or attrs.has(cls))


def schema_of(cls: object) -> PayloadSchema:
    """Validates a payload class; raises ``SchemaError`` naming the class and the field path.

    >>> @dataclasses.dataclass(frozen=True)
    ... class Reading:
    ...     meter: str
    ...     consumption: float
    >>> schema_of(Reading).field_names()
    ('meter', 'consumption')
    """
    if not is_payload_class(cls):
        raise SchemaError(
            f"{cls!r} is not a payload type: use a @dataclass or @attrs.define class with typed fields"
        )
    assert isinstance(cls, type)
    return _schema_of(cls, cls.__name__, True, ())


@functools.lru_cache(maxsize=None)
def _schema_of(cls: type, path: str, top: bool, enclosing: tuple[type, ...]) -> PayloadSchema:
    try:
        hints = typing.get_type_hints(cls)
    except Exception as exc:  # a forward reference that does not resolve
        raise SchemaError(f"{path}: the field annotations cannot be resolved ({exc})") from exc
    declared: list[tuple[str, str]]
    if attrs.has(cls):
        declared = [(a.name, a.alias or a.name) for a in attrs.fields(cls) if a.init]
    else:
        declared = [(f.name, f.name) for f in dataclasses.fields(cls) if f.init]
    if not declared:
        raise SchemaError(f"{path}: a payload needs at least one field")
    fields = []
    for name, init_name in declared:
        where = f"{path}.{name}"
        if name.startswith(RESERVED_PREFIX):
            raise SchemaError(f"{where}: names starting with {RESERVED_PREFIX!r} are reserved for streamql")
        if top and name in RESERVED_NAMES:
            raise SchemaError(
                f"{where}: {name!r} is the name of the event's lifetime column in results; rename the field"
            )
        if name not in hints:
            raise SchemaError(f"{where}: the field has no type annotation")
        fields.append(PayloadField(name, init_name, _value_type(hints[name], where, enclosing + (cls,))))
    return PayloadSchema(cls, tuple(fields))


def value_type(annotation: Any, where: str) -> ValueType:
    """The ``ValueType`` of a type annotation (``float``, ``Optional[int]``, a payload class);
    raises ``SchemaError`` naming ``where`` for an unsupported one."""
    return _value_type(annotation, where, ())


def _value_type(annotation: Any, where: str, enclosing: tuple[type, ...]) -> ValueType:
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            inner = _value_type(args[0], where, enclosing)
            return inner.with_nullable(True)
        raise SchemaError(f"{where}: unions other than Optional[X] are not supported ({annotation!r})")
    if annotation in _PYTHON_KINDS:
        return ValueType(_PYTHON_KINDS[annotation])
    if is_payload_class(annotation):
        # a class that contains itself has no fixed schema; without this check the
        # recursion only stops at Python's recursion limit, with a misleading message
        if annotation in enclosing:
            raise SchemaError(
                f"{where}: {annotation.__name__} contains itself; payloads cannot be recursive"
            )
        return ValueType(Kind.STRUCT, schema=_schema_of(annotation, where, False, enclosing))
    supported = ", ".join(k.__name__ for k in _PYTHON_KINDS)
    raise SchemaError(
        f"{where}: type {annotation!r} is not supported; use {supported}, a nested payload class, "
        "or Optional[...] of one of them"
    )


def python_kind(value: object) -> Kind | None:
    """The kind of a Python literal, or None when it is not a supported scalar."""
    if value is None:
        return Kind.NULL
    for t in (bool, int, float, str, bytes, decimal.Decimal, datetime, timedelta, uuid.UUID):
        if isinstance(value, t):
            return _PYTHON_KINDS[t]
    return None


def sort_key(schema: PayloadSchema, payload: Any) -> tuple[Any, ...]:
    """The order of payloads in results: fields in order, nulls first."""
    return tuple(value_key(f.type, getattr(payload, f.name)) for f in schema.fields)


def value_key(vtype: ValueType, value: Any) -> tuple[Any, ...]:
    """The order of one value in results: nulls first, nested payloads field by field."""
    if value is None:
        return (0,)
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        return (1, sort_key(vtype.schema, value))
    return (1, value)


def check_instance(schema: PayloadSchema, payload: object, where: str) -> None:
    """Checks a payload instance given as plain Python input (reference evaluator, tests)."""
    if not isinstance(payload, schema.cls):
        raise SchemaError(f"{where}: expected a {schema.name} payload, got {type(payload).__name__}")
