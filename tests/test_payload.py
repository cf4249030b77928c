"""Payload schemas (docs/payloads.md): supported field types, nesting, nullability, and the
``SchemaError`` messages that name the class and the field path."""
from __future__ import annotations

import dataclasses
import decimal
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Optional, Union, cast

import attrs
import pytest

import streamql as sq
from streamql.payload import Kind, PayloadSchema, ValueType, check_instance, schema_of, sort_key

# Payload classes live at module level: with ``from __future__ import annotations`` the
# annotations are strings that ``typing.get_type_hints`` resolves in the module's globals.


@dataclasses.dataclass(frozen=True)
class Everything:
    flag: bool
    count: int
    ratio: float
    name: str
    raw: bytes
    price: decimal.Decimal
    at: datetime
    took: timedelta
    id: uuid.UUID


@dataclasses.dataclass(frozen=True)
class Nullables:
    a: Optional[int]
    b: int | None
    c: Union[str, None]
    d: None | float


@attrs.frozen
class AttrsReading:
    meter: str
    _secret: int
    consumption: float | None = None


@dataclasses.dataclass(frozen=True)
class Quality:
    value: float
    quality: int


@dataclasses.dataclass(frozen=True)
class Span:
    start: int  # "start"/"end" are reserved only at the top level, where results put the lifetime
    end: int


@dataclasses.dataclass(frozen=True)
class WithSpan:
    span: Span


@dataclasses.dataclass(frozen=True)
class Complex:
    value: Quality
    status: bool
    backup: Optional[Quality]


@dataclasses.dataclass(frozen=True)
class Deep:
    inner: Complex


# --- invalid payloads --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WithDict:
    ok: int
    tags: dict[str, int]


@dataclasses.dataclass(frozen=True)
class WithAny:
    blob: Any


@dataclasses.dataclass(frozen=True)
class WithList:
    values: list[int]


@attrs.define(auto_attribs=False)
class Unannotated:
    x = attrs.field()  # type: ignore[var-annotated]


class NotAPayload:
    value: int = 0


@dataclasses.dataclass(frozen=True)
class WithPlainClass:
    thing: NotAPayload


@dataclasses.dataclass(frozen=True)
class Empty:
    pass


@attrs.frozen
class EmptyAttrs:
    pass


@dataclasses.dataclass(frozen=True)
class WithStart:
    start: datetime
    value: int


@dataclasses.dataclass(frozen=True)
class WithEnd:
    value: int
    end: datetime


@dataclasses.dataclass(frozen=True)
class WithPrefix:
    _sq_arrival: int


@dataclasses.dataclass(frozen=True)
class WithUnion:
    value: int | str


@dataclasses.dataclass(frozen=True)
class WithOptionalUnion:
    value: Optional[Union[int, str]]


@dataclasses.dataclass(frozen=True)
class BadInner:
    ok: int
    bad: dict[str, str]


@dataclasses.dataclass(frozen=True)
class BadOuter:
    inner: Optional[BadInner]


@dataclasses.dataclass(frozen=True)
class PrefixInner:
    _sq_x: int


@dataclasses.dataclass(frozen=True)
class PrefixOuter:
    inner: PrefixInner


@dataclasses.dataclass(frozen=True)
class Recursive:
    value: int
    next: Optional[Recursive]


def _kinds(schema: PayloadSchema) -> list[tuple[str, Kind, bool]]:
    return [(f.name, f.type.kind, f.type.nullable) for f in schema.fields]


def test_every_supported_scalar_type() -> None:
    schema = schema_of(Everything)
    assert schema.cls is Everything
    assert schema.name == "Everything"
    assert _kinds(schema) == [
        ("flag", Kind.BOOL, False),
        ("count", Kind.INT, False),
        ("ratio", Kind.FLOAT, False),
        ("name", Kind.STR, False),
        ("raw", Kind.BYTES, False),
        ("price", Kind.DECIMAL, False),
        ("at", Kind.DATETIME, False),
        ("took", Kind.TIMEDELTA, False),
        ("id", Kind.UUID, False),
    ]
    assert schema.field_names() == ("flag", "count", "ratio", "name", "raw", "price", "at", "took", "id")


def test_optional_spellings_are_nullable() -> None:
    assert _kinds(schema_of(Nullables)) == [
        ("a", Kind.INT, True),
        ("b", Kind.INT, True),
        ("c", Kind.STR, True),
        ("d", Kind.FLOAT, True),
    ]


def test_attrs_class_with_private_field_uses_the_init_name() -> None:
    schema = schema_of(AttrsReading)
    assert [(f.name, f.init_name) for f in schema.fields] == [
        ("meter", "meter"), ("_secret", "secret"), ("consumption", "consumption")]
    assert _kinds(schema) == [
        ("meter", Kind.STR, False), ("_secret", Kind.INT, False), ("consumption", Kind.FLOAT, True)]
    built = schema.construct(["m1", 7, None])
    assert built == AttrsReading(meter="m1", secret=7)
    assert built._secret == 7


def test_nested_payloads_become_structs() -> None:
    schema = schema_of(Complex)
    value, status, backup = schema.fields
    assert value.type == ValueType(Kind.STRUCT, schema=schema_of(Quality))
    assert value.type.schema is not None
    assert value.type.schema.field_names() == ("value", "quality")
    assert status.type == ValueType(Kind.BOOL)
    assert backup.type.kind is Kind.STRUCT and backup.type.nullable
    deep = schema_of(Deep).fields[0].type
    assert deep.schema is not None and deep.schema.cls is Complex


def test_schema_equality_and_str() -> None:
    assert schema_of(Complex) == schema_of(Complex)
    assert hash(schema_of(Complex)) == hash(schema_of(Complex))
    assert schema_of(Complex) != schema_of(Quality)
    assert str(ValueType(Kind.INT)) == "int"
    assert str(ValueType(Kind.INT, nullable=True)) == "int | None"
    assert str(ValueType(Kind.STRUCT, schema=schema_of(Quality))) == "Quality"


def test_construct_dataclass_in_field_order() -> None:
    schema = schema_of(Quality)
    assert schema.construct([1.5, 2]) == Quality(value=1.5, quality=2)


def test_input_declares_a_valid_payload() -> None:
    stream = sq.input("readings", Everything)
    assert stream.payload_type is Everything


def _schema_error(cls: object) -> str:
    with pytest.raises(sq.SchemaError) as info:
        schema_of(cls)
    assert isinstance(info.value, sq.StreamqlError)
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_dict_field_is_rejected_with_its_path() -> None:
    message = _schema_error(WithDict)
    assert message.startswith("WithDict.tags:")
    assert "dict[str, int]" in message
    assert "not supported" in message


def test_any_field_is_rejected() -> None:
    message = _schema_error(WithAny)
    assert message.startswith("WithAny.blob:")
    assert "typing.Any" in message


def test_list_field_is_rejected() -> None:
    assert _schema_error(WithList).startswith("WithList.values: type list[int] is not supported")


def test_unannotated_attrs_field_is_rejected() -> None:
    assert _schema_error(Unannotated) == "Unannotated.x: the field has no type annotation"


def test_field_of_a_non_payload_class_is_rejected() -> None:
    message = _schema_error(WithPlainClass)
    assert message.startswith("WithPlainClass.thing:")
    assert "NotAPayload" in message


def test_empty_payloads_are_rejected() -> None:
    assert _schema_error(Empty) == "Empty: a payload needs at least one field"
    assert _schema_error(EmptyAttrs) == "EmptyAttrs: a payload needs at least one field"


def test_non_payload_classes_are_rejected() -> None:
    for cls in (NotAPayload, int, dict):
        message = _schema_error(cls)
        assert cls.__name__ in message
        assert "not a payload type" in message
    with pytest.raises(sq.SchemaError, match="NotAPayload"):
        sq.input("x", cast(Any, NotAPayload))


def test_reserved_lifetime_names_are_rejected_at_the_top_level() -> None:
    message = _schema_error(WithStart)
    assert message.startswith("WithStart.start:")
    assert "rename the field" in message
    assert _schema_error(WithEnd).startswith("WithEnd.end:")
    # nested structs may use them: they are not result columns
    span = schema_of(WithSpan).fields[0].type.schema
    assert span is not None and span.field_names() == ("start", "end")


def test_reserved_prefix_is_rejected_at_every_level() -> None:
    assert _schema_error(WithPrefix).startswith("WithPrefix._sq_arrival: names starting with '_sq_'")
    assert _schema_error(PrefixOuter).startswith("PrefixOuter.inner._sq_x:")


def test_unions_other_than_optional_are_rejected() -> None:
    message = _schema_error(WithUnion)
    assert message.startswith("WithUnion.value: unions other than Optional[X]")
    assert _schema_error(WithOptionalUnion).startswith("WithOptionalUnion.value: unions other than Optional[X]")


def test_errors_in_nested_payloads_name_the_full_path() -> None:
    assert _schema_error(BadOuter).startswith("BadOuter.inner.bad: type dict[str, str] is not supported")


def test_recursive_payloads_are_rejected() -> None:
    assert _schema_error(Recursive) == "Recursive.next: Recursive contains itself; payloads cannot be recursive"


def test_sort_key_orders_fields_in_order_with_nulls_first() -> None:
    schema = schema_of(Nullables)
    rows = [
        Nullables(2, None, "b", 1.0),
        Nullables(None, 5, "z", None),
        Nullables(1, 9, None, 0.5),
        Nullables(1, None, "a", 2.0),
        Nullables(1, 3, "a", None),
    ]
    ordered = sorted(rows, key=lambda p: sort_key(schema, p))
    # a: None < 1 < 2; among a == 1, b: None < 3 < 9
    assert ordered == [
        Nullables(None, 5, "z", None),
        Nullables(1, None, "a", 2.0),
        Nullables(1, 3, "a", None),
        Nullables(1, 9, None, 0.5),
        Nullables(2, None, "b", 1.0),
    ]


def test_sort_key_of_nested_payloads() -> None:
    schema = schema_of(Complex)
    low = Quality(1.0, 1)
    high = Quality(2.0, 0)
    rows = [Complex(high, False, None), Complex(low, True, high), Complex(low, True, None), Complex(low, False, low)]
    ordered = sorted(rows, key=lambda p: sort_key(schema, p))
    assert ordered == [Complex(low, False, low), Complex(low, True, None), Complex(low, True, high),
                       Complex(high, False, None)]


def test_check_instance() -> None:
    schema = schema_of(Quality)
    check_instance(schema, Quality(1.0, 1), "input 'q'")
    with pytest.raises(sq.SchemaError, match="input 'q': expected a Quality payload, got Complex"):
        check_instance(schema, Complex(Quality(1.0, 1), True, None), "input 'q'")


def test_every_type_round_trips_through_construct() -> None:
    schema = schema_of(Everything)
    values: list[object] = [True, 1, 0.5, "s", b"\x00", decimal.Decimal("1.25"),
                            datetime(2009, 7, 15, tzinfo=timezone.utc), timedelta(seconds=3),
                            uuid.UUID(int=7)]
    built = schema.construct(values)
    assert [getattr(built, name) for name in schema.field_names()] == values
