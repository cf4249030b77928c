"""Payload schemas on Spark: ``ValueType`` → Spark ``DataType``, checks that a bound column can
hold a payload field, and rows ↔ payload instances on the way out."""
from __future__ import annotations

import uuid
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.errors import BindingError
from streamql.payload import Kind, PayloadSchema, ValueType
from streamql.time import from_micros

DECIMAL = T.DecimalType(38, 18)

#: the options with which streamql writes parquet: timestamps as INT64 microseconds (the Parquet
#: format's TIMESTAMP_MICROS), not Spark's default INT96 — which pyarrow and pandas read as
#: nanoseconds, turning an open end (``9999-12-31 23:59:59.999999``) into a date in 1816, and which
#: costs more to write. A write's option from Spark 4.2 on; before it Spark takes the session's
#: ``spark.sql.parquet.outputTimestampType`` (docs/decisions.md, "Parquet timestamps")
PARQUET_OPTIONS = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}

_SCALARS: dict[Kind, T.DataType] = {
    Kind.BOOL: T.BooleanType(),
    Kind.INT: T.LongType(),
    Kind.FLOAT: T.DoubleType(),
    Kind.STR: T.StringType(),
    Kind.BYTES: T.BinaryType(),
    Kind.DECIMAL: DECIMAL,
    Kind.DATETIME: T.TimestampType(),
    Kind.TIMEDELTA: T.DayTimeIntervalType(T.DayTimeIntervalType.DAY, T.DayTimeIntervalType.SECOND),
    Kind.UUID: T.StringType(),  # canonical lower-case text: its order is the UUIDs' numeric order
    Kind.NULL: T.NullType(),
}


def spark_type(vtype: ValueType) -> T.DataType:
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        return struct_type(vtype.schema)
    return _SCALARS[vtype.kind]


def struct_type(schema: PayloadSchema) -> T.StructType:
    return T.StructType([T.StructField(f.name, spark_type(f.type), f.type.nullable) for f in schema.fields])


def cast_type(vtype: ValueType) -> T.DataType:
    """The type to cast an expression's column to: ``spark_type`` with every nested field
    nullable, because Spark will not cast a nullable struct field to a NOT NULL one (nulls where
    the payload forbids them are SQL nulls at run time, as for top-level fields)."""
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        return T.StructType([T.StructField(f.name, cast_type(f.type), True) for f in vtype.schema.fields])
    return _SCALARS[vtype.kind]


# --- binding: can this column hold that field? -------------------------------------------

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_TO_LONG_OK = _INTEGRAL
_TO_DOUBLE_OK = _INTEGRAL + (T.FloatType, T.DoubleType)


def column_for_field(column: Column, dtype: T.DataType, vtype: ValueType, where: str) -> Column:
    """The bound column converted to the field's Spark type; raises ``BindingError`` when the
    column's type cannot hold the field without loss."""
    kind = vtype.kind
    if kind is Kind.STRUCT:
        assert vtype.schema is not None
        if not isinstance(dtype, T.StructType):
            raise BindingError(f"{where} is {dtype.simpleString()}, which cannot hold the payload {vtype} (a struct)")
        names = {f.name: f for f in dtype.fields}
        parts = []
        for field in vtype.schema.fields:
            sub = names.get(field.name)
            if sub is None:
                raise BindingError(f"{where} has no field {field.name!r} for {vtype.schema.name}.{field.name}; "
                                   f"its fields are: {', '.join(names)}")
            parts.append(column_for_field(column.getField(field.name), sub.dataType, field.type,
                                          f"{where}.{field.name}").alias(field.name))
        built = F.struct(*parts)
        return F.when(column.isNull(), F.lit(None).cast(struct_type(vtype.schema))).otherwise(built)
    target = _SCALARS[kind]
    ok = {
        Kind.BOOL: isinstance(dtype, T.BooleanType),
        Kind.INT: isinstance(dtype, _TO_LONG_OK),
        Kind.FLOAT: isinstance(dtype, _TO_DOUBLE_OK),
        Kind.STR: isinstance(dtype, (T.StringType, T.CharType, T.VarcharType)),
        Kind.BYTES: isinstance(dtype, T.BinaryType),
        Kind.DECIMAL: isinstance(dtype, (T.DecimalType,) + _INTEGRAL),
        Kind.DATETIME: isinstance(dtype, T.TimestampType),
        Kind.TIMEDELTA: isinstance(dtype, T.DayTimeIntervalType),
        Kind.UUID: isinstance(dtype, T.StringType),
    }[kind]
    if not ok:
        hint = ""
        if kind is Kind.DATETIME and isinstance(dtype, (T.TimestampNTZType, T.StringType)):
            hint = "; convert it to a UTC instant first, e.g. F.to_utc_timestamp(col, tz) or F.to_timestamp(col)"
        raise BindingError(f"{where} is {dtype.simpleString()}, which cannot hold a {vtype}{hint}")
    return column if dtype == target else column.cast(target)


# --- results: rows back to payload instances ------------------------------------------


def collectable(column: Column, vtype: ValueType) -> Column:
    """A column prepared for ``collect()``: timestamps as microseconds (PySpark would turn them
    into naive datetimes in the driver's local zone), structs converted field by field."""
    if vtype.kind is Kind.DATETIME:
        return F.unix_micros(column)
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        parts = [collectable(column.getField(f.name), f.type).alias(f.name) for f in vtype.schema.fields]
        return F.when(column.isNull(), F.lit(None)).otherwise(F.struct(*parts))
    return column


def payload_from_row(schema: PayloadSchema, values: Any) -> Any:
    """A payload instance from the collected values of ``collectable`` columns."""
    return schema.construct([_value(f.type, v) for f, v in zip(schema.fields, values)])


def _value(vtype: ValueType, value: Any) -> Any:
    if value is None:
        return None
    if vtype.kind is Kind.DATETIME:
        return from_micros(value)
    if vtype.kind is Kind.UUID:
        return uuid.UUID(value)
    if vtype.kind is Kind.BYTES:
        return bytes(value)
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        return payload_from_row(vtype.schema, value)
    return value


def spark_value(vtype: ValueType, value: Any) -> Any:
    """A Python payload value as ``createDataFrame`` takes it for ``spark_type(vtype)``."""
    if value is None:
        return None
    if vtype.kind is Kind.UUID:
        return str(value)
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        return tuple(spark_value(f.type, getattr(value, f.name)) for f in vtype.schema.fields)
    return value
