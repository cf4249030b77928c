"""A bound input before its scan: the binding (what ``Binder.bind`` records), every check that
needs no Spark job, and ``prepare``, which turns the bound DataFrame into rows in arrival order —
times as microseconds, a row kind, a bad-row reason and the arrival sequence ``_sq_seq`` (its
layout is the arrival scan's: ``streamql.spark.ingress.arrival_scan.PARTITION_BITS``).
"""
from __future__ import annotations

from typing import Literal

import attrs
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.advance_time import AdvanceTimePolicy, AdvanceTimeSettings
from streamql.errors import BindingError
from streamql.events import Shape
from streamql.payload import Kind, ValueType
from streamql.query.nodes import Input
from streamql.spark.base.columns import ARRIVAL, BAD, END, KIND, PARTITION, SEQ, START
from streamql.spark.base.schema import column_for_field
from streamql.spark.base.sketches import quantiles
from streamql.spark.ingress import arrival_scan as scan
from streamql.time import INFINITY_MICROS, MAX_MICROS, duration_micros


@attrs.frozen
class Binding:
    """One input's DataFrame and how to read it (what ``Binder.bind`` records)."""

    node: Input
    source: DataFrame = attrs.field(eq=False)
    start: str
    end: str | None
    edge: str | None
    kind: str | None
    arrival: str | None
    advance_time: AdvanceTimeSettings | None
    bad_rows: Literal["error", "drop"]
    #: a partitioned input's partition column and its declared values (docs/partitioned-inputs.md)
    partition: str | None = None
    partitions: tuple[int | str, ...] | None = None
    #: an internal binding of one declared partition (its index in ``partitions``), or of the rows
    #: whose partition value is not declared (``UNDECLARED``): ``partitioned.parts`` makes them
    part: int | None = None

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def partitioned(self) -> bool:
        """Whether this is a user's partitioned binding (not one of its internal parts)."""
        return self.partition is not None and self.part is None

    @property
    def part_value(self) -> int | str | None:
        """The declared partition value of an internal part (None for the undeclared rows' part)."""
        if self.part is None or self.part == UNDECLARED:
            return None
        assert self.partitions is not None
        return self.partitions[self.part]


#: ``Binding.part`` of the internal binding that holds a partitioned input's rows whose partition
#: value is not declared: all of them are bad rows
UNDECLARED = -1


def check_binding(b: Binding) -> None:
    """Every error that can be found without running a job."""
    columns = {f.name: f.dataType for f in b.source.schema.fields}
    _check_named_columns(b)
    _check_partitions(b, columns)

    def column(role: str, name: str | None) -> T.DataType:
        assert name is not None
        if name not in columns:
            raise BindingError(f"input {b.name!r}: {role} column {name!r} is not in the DataFrame; "
                               f"its columns are: {', '.join(columns)}")
        return columns[name]

    _check_time(b, "start", b.start, column("start", b.start))
    shape = b.node.shape
    if shape is Shape.POINT and b.end is not None:
        raise BindingError(f"input {b.name!r} is a POINT input: its events end one tick after start; "
                           "do not bind an end column (declare Shape.INTERVAL to use one)")
    if shape is Shape.INTERVAL and b.end is None:
        raise BindingError(f"input {b.name!r} is an INTERVAL input: bind its end column with end=")
    if shape is not Shape.EDGE and b.edge is not None:
        raise BindingError(f"input {b.name!r} is a {shape.name} input: edge= applies to Shape.EDGE inputs only")
    if shape is Shape.EDGE and b.edge is None:
        raise BindingError(f"input {b.name!r} is an EDGE input: bind its edge column (\"START\"/\"END\") with edge=")
    if shape is Shape.EDGE and b.end is None:
        raise BindingError(f"input {b.name!r} is an EDGE input: bind the column with the end time its end edges "
                           "carry with end=")
    if b.end is not None:
        _check_time(b, "end", b.end, column("end", b.end))
    for role, name in (("edge", b.edge), ("kind", b.kind)):
        if name is not None and not isinstance(column(role, name), T.StringType):
            raise BindingError(f"input {b.name!r}: {role} column {name!r} must be a string column "
                               f"holding {'START/END' if role == 'edge' else 'INSERT/CTI'}")
    if b.arrival is not None:
        dtype = column("arrival", b.arrival)
        if not isinstance(dtype, (T.IntegralType, T.TimestampType)):
            raise BindingError(f"input {b.name!r}: arrival column {b.arrival!r} is {dtype.simpleString()}; "
                               "it must be an integer or a timestamp column")
    for field in b.node.schema.fields:
        if field.name not in columns:
            raise BindingError(f"input {b.name!r}: the DataFrame has no column {field.name!r} for "
                               f"{b.node.schema.name}.{field.name}; its columns are: {', '.join(columns)}")
        column_for_field(F.col(field.name), columns[field.name], field.type,
                         f"input {b.name!r}: column {field.name!r}")


def _check_named_columns(b: Binding) -> None:
    """Every column the binding names (times, edge, kind, arrival, partition, payload fields) is in
    the DataFrame exactly once — a column that appears twice (as after a join) would fail in the
    scan as ambiguous. Spark resolves names without case unless ``spark.sql.caseSensitive``."""
    names = b.source.schema.fieldNames()
    sensitive = str(b.source.sparkSession.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"

    def key(n: str) -> str:
        return n if sensitive else n.lower()

    counts: dict[str, int] = {}
    for n in names:
        counts[key(n)] = counts.get(key(n), 0) + 1
    named = [("start", b.start), ("end", b.end), ("edge", b.edge), ("kind", b.kind), ("arrival", b.arrival),
             ("partition", b.partition)] + [(f"payload field {b.node.schema.name}.{f.name}", f.name)
                                            for f in b.node.schema.fields]
    for role, name in named:
        if name is None:
            continue
        found = counts.get(key(name), 0)
        if found == 0 and role == "partition":  # the other roles' checks below say it their way
            raise BindingError(f"input {b.name!r}: the DataFrame has no column {name!r} for the {role}; "
                               f"its columns are: {', '.join(names)}")
        if found > 1:
            same = [n for n in names if key(n) == key(name)]
            raise BindingError(f"input {b.name!r}: column {name!r} (the {role}) appears {found} times in the "
                               f"DataFrame ({', '.join(map(repr, same))}; as after a join): select or rename "
                               "the columns so that each name appears once")


def _check_partitions(b: Binding, columns: dict[str, T.DataType]) -> None:
    """``partition`` and ``partitions`` both or neither; the declared values distinct, of the
    column's kind (ints for an integer column, strings for a string column)."""
    if (b.partition is None) != (b.partitions is None):
        given, missing = ("partition", "partitions") if b.partition is not None else ("partitions", "partition")
        raise BindingError(f"input {b.name!r}: {given}= needs {missing}= too (a partitioned input names its "
                           "partition column with partition= and declares its values with partitions=)")
    if b.partition is None or b.partitions is None:
        return
    if not b.partitions:
        raise BindingError(f"input {b.name!r}: partitions= declares no partition of column {b.partition!r}")
    dtype = columns[b.partition]
    if isinstance(dtype, T.IntegralType):
        wanted: type = int
    elif isinstance(dtype, T.StringType):
        wanted = str
    else:
        raise BindingError(f"input {b.name!r}: partition column {b.partition!r} is {dtype.simpleString()}; "
                           "it must be an integer or a string column")
    wrong = [v for v in b.partitions if not isinstance(v, wanted) or isinstance(v, bool)]
    if wrong:
        raise BindingError(f"input {b.name!r}: partition column {b.partition!r} is {dtype.simpleString()}, so "
                           f"partitions= takes {wanted.__name__}s; got {', '.join(map(repr, wrong))}")
    twice = sorted({repr(v) for v in b.partitions if b.partitions.count(v) > 1})
    if twice:
        raise BindingError(f"input {b.name!r}: partitions= declares {', '.join(twice)} more than once")


def _check_time(b: Binding, role: str, name: str, dtype: T.DataType) -> None:
    if isinstance(dtype, (T.TimestampType, T.LongType, T.IntegerType)):
        return
    how = {
        T.TimestampNTZType: "it is TIMESTAMP_NTZ (no time zone): convert it to a UTC instant, e.g. "
                            "F.to_utc_timestamp(F.col(c), 'Europe/Paris').cast('timestamp') or, for UTC wall "
                            "times, F.col(c).cast('timestamp') with spark.sql.session.timeZone=UTC",
        T.StringType: "it is a string: parse it first, e.g. F.to_timestamp(F.col(c)) for ISO-8601 text "
                      "with an offset",
    }.get(type(dtype), f"it is {dtype.simpleString()}")
    raise BindingError(f"input {b.name!r}: {role} column {name!r} must be a timestamp or integer microseconds; "
                       + how.replace("(c)", f"({name!r})"))


def micros(column: Column, dtype: T.DataType) -> Column:
    """A timestamp or integer column as microseconds; past the greatest finite time it is INFINITY."""
    micros = F.unix_micros(column) if isinstance(dtype, T.TimestampType) else column.cast("long")
    # datetime.max (and anything past the greatest finite time) is INFINITY
    return F.when(micros > F.lit(MAX_MICROS), F.lit(INFINITY_MICROS)).otherwise(micros)


def prepare(b: Binding, cti_rows: DataFrame | None = None, partition_order: bool = False,
            arrival_sketches: list[tuple[int, list[int]]] | None = None) -> DataFrame:
    """The input as rows in arrival order: ``_sq_seq`` (increasing with arrival), ``_sq_kind``,
    ``_sq_start``/``_sq_end`` in microseconds, ``_sq_bad`` (the reason a row is bad, or null),
    then the payload fields converted to their Spark types.

    ``cti_rows`` (``_sq_arrival``, ``_sq_start``) are CTIs imported from another input, merged
    into the arrival order. ``partition_order``: number the rows in partition order even though
    the input has an arrival column (the caller has found its arrival values strictly increasing
    in partition order, so that is their arrival order). ``arrival_sketches``: sketches of the
    arrival values (``base.sketches.sketch``, with their counts), from which the arrival numbering
    takes its ranges instead of a quantile job.
    """
    check_binding(b)
    df = b.source
    types = {f.name: f.dataType for f in df.schema.fields}
    start = micros(F.col(b.start), types[b.start])
    is_cti = F.upper(F.col(b.kind)) == "CTI" if b.kind is not None else F.lit(False)
    is_insert = F.upper(F.col(b.kind)) == "INSERT" if b.kind is not None else F.lit(True)
    shape = b.node.shape
    if shape is Shape.POINT:
        end = F.when(start >= F.lit(MAX_MICROS), F.lit(INFINITY_MICROS)).otherwise(start + 1)
    else:
        assert b.end is not None
        end = micros(F.col(b.end), types[b.end])
    reasons = [(F.col(b.start).isNull(), F.lit(f"{b.start} is null"))]
    if b.kind is not None:
        reasons.insert(0, (F.col(b.kind).isNull() | ~(is_cti | is_insert),
                           F.concat(F.lit(f"{b.kind} is neither INSERT nor CTI: "),
                                    F.coalesce(F.col(b.kind), F.lit("null")))))
        is_cti = F.coalesce(is_cti, F.lit(False))
    if shape is Shape.EDGE:
        assert b.edge is not None and b.end is not None
        edge = F.upper(F.col(b.edge))
        is_end = ~is_cti & F.coalesce(edge == "END", F.lit(False))
        kind = (F.when(is_cti, F.lit(scan.CTI)).when(is_end, F.lit(scan.END_EDGE))
                .otherwise(F.lit(scan.START_EDGE)))
        # a start edge's end is unknown: the event is open (an end column value on it is ignored)
        end = F.when(is_end, end).otherwise(F.lit(INFINITY_MICROS))
        reasons += [
            (~is_cti & ~F.coalesce(edge.isin("START", "END"), F.lit(False)),
             F.concat(F.lit(f"{b.edge} is neither START nor END: "), F.coalesce(F.col(b.edge), F.lit("null")))),
            (is_end & F.col(b.end).isNull(), F.lit(f"{b.end} of an end edge is null")),
            (is_end & (end <= start), F.lit(f"{b.end} of an end edge is not after its {b.start}")),
        ]
    else:
        kind = F.when(is_cti, F.lit(scan.CTI)).otherwise(F.lit(scan.INSERT))
        if b.end is not None:
            reasons += [
                (~is_cti & F.col(b.end).isNull(), F.lit(f"{b.end} is null")),
                (~is_cti & (end <= start), F.lit(f"{b.end} is not after {b.start}")),
            ]
    if b.arrival is not None:
        reasons.append((F.col(b.arrival).isNull(), F.lit(f"{b.arrival} is null")))
    if b.part == UNDECLARED:
        # the internal binding of the rows whose partition value is not declared: all are bad
        assert b.partition is not None and b.partitions is not None
        declared = ", ".join(map(repr, b.partitions))
        reasons.insert(0, (F.lit(True), F.concat(
            F.lit(f"{b.partition} "), F.coalesce(F.col(b.partition).cast("string"), F.lit("null")),
            F.lit(f" is not a declared partition (partitions=[{declared}])"))))
    payload = []
    for field in b.node.schema.fields:
        converted = column_for_field(F.col(field.name), types[field.name], field.type, field.name)
        payload.append(converted.alias(field.name))
        for check, path in _null_checks(F.col(field.name), field.type, field.name):
            reasons.append((~is_cti & check, F.lit(f"{path} is null but {b.node.schema.name}.{path} is not Optional")))
    bad = F.lit(None).cast("string")
    for condition, reason in reversed(reasons):
        bad = F.when(condition, reason).otherwise(bad)
    rows = df.select(
        kind.alias(KIND), start.alias(START), end.alias(END), bad.alias(BAD),
        (F.col(b.arrival) if b.arrival is not None else F.lit(None)).alias(ARRIVAL),
        *payload,
        *([F.col(b.partition).alias(PARTITION)] if b.part == UNDECLARED and b.partition is not None else []),
    )
    if cti_rows is not None:
        imported = cti_rows.select(
            F.lit(scan.CTI).alias(KIND), F.col(START), F.lit(None).cast("long").alias(END),
            F.lit(None).cast("string").alias(BAD), F.col(ARRIVAL),
            *[F.lit(None).cast(dt).alias(name) for name, dt in
              ((f.name, rows.schema[f.name].dataType) for f in b.node.schema.fields)],
        )
        rows = rows.unionByName(imported)
    if b.arrival is not None and not partition_order:
        return _in_arrival_order(rows, [f.name for f in b.node.schema.fields], arrival_sketches)
    # file/partition order: the partition index sits above bit 33 of the id, so each Spark
    # partition is one scan unit
    return rows.withColumn(SEQ, F.monotonically_increasing_id())


def _in_arrival_order(rows: DataFrame, payload: list[str],
                      sketches: list[tuple[int, list[int]]] | None = None) -> DataFrame:
    """Rows numbered in arrival order: ``_sq_seq`` = (arrival range << 33) | position in the range.

    The ranges come from quantiles of the arrival column fixed once as literals — taken from
    ``sketches`` (the summary pass in storage order made them) or else from a quantile job — and
    positions from a total order (arrival, events before CTIs, then every column), so every job
    that recomputes this plan numbers every row the same way — which sampling-based range
    partitioning would not guarantee. The ranges only balance the units: any bounds number the
    rows in the same order. No step gathers the input in one partition.
    """
    arrival = F.col(ARRIVAL)
    key = arrival_key(rows)
    units = int(rows.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    probabilities = [i / units for i in range(1, units)]
    unit = F.lit(0)
    if sketches is not None:
        for bound in sorted(set(quantiles(sketches, probabilities))):
            unit = unit + F.when(key >= F.lit(bound), 1).otherwise(0)
    else:
        fractions = rows.select(key.cast("double").alias("k")).approxQuantile("k", probabilities, 0.001)
        for fraction in sorted(set(fractions)):
            unit = unit + F.when(key.cast("double") >= F.lit(fraction), 1).otherwise(0)
    unit_column = "_sq_unit"
    # at equal arrival values: events (start edges before end edges) before CTIs
    order = [arrival.asc_nulls_first(), F.col(KIND).asc(), F.col(START), F.col(END),
             *[F.col(name) for name in payload]]
    position = F.row_number().over(Window.partitionBy(unit_column).orderBy(*order)) - 1
    return (rows.withColumn(unit_column, unit).repartition(units, unit_column)
            .withColumn(SEQ, F.shiftleft(F.col(unit_column).cast("long"), scan.PARTITION_BITS) + position)
            .drop(unit_column))


def with_row_number(df: DataFrame) -> DataFrame:
    """The source's own columns with the same ``_sq_seq`` as ``prepare`` gives them (partition order)."""
    return df.withColumn(SEQ, F.monotonically_increasing_id())


def _null_checks(column: Column, vtype: ValueType, path: str) -> list[tuple[Column, str]]:
    checks = [] if vtype.nullable else [(column.isNull(), path)]
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        for f in vtype.schema.fields:
            nested = _null_checks(column.getField(f.name), f.type, f"{path}.{f.name}")
            checks += [(column.isNotNull() & c, p) for c, p in nested]
    return checks


def scan_settings(settings: AdvanceTimeSettings | None) -> scan.ScanSettings:
    generation = settings.generation if settings is not None else None
    return scan.ScanSettings(
        every_events=generation.every_events if generation is not None else None,
        every=duration_micros(generation.every) if generation is not None and generation.every is not None else None,
        delay=duration_micros(generation.delay) if generation is not None else 0,
        adjust=settings is not None and settings.policy is AdvanceTimePolicy.ADJUST,
    )




def arrival_key(prepared: DataFrame) -> Column:
    """The arrival column as a long (microseconds for a timestamp)."""
    arrival = F.col(ARRIVAL)
    if isinstance(prepared.schema[ARRIVAL].dataType, T.TimestampType):
        return F.unix_micros(arrival)
    return arrival.cast("long")




__all__ = ["UNDECLARED", "Binding", "arrival_key", "check_binding", "micros", "prepare", "scan_settings"]
