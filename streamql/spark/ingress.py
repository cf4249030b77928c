"""Ingress on Spark: a bound DataFrame becomes the accepted events of an input, with its CTIs.

``prepare`` validates and normalises the columns (times as microseconds, a row kind, a bad-row
reason, the arrival sequence); ``Ingress.run`` performs the arrival-order scan of
``streamql.spark.arrival_scan`` and applies its decisions.
"""
from __future__ import annotations

from typing import Any, Iterator, Literal, Mapping

import attrs
import numpy as np
import pyarrow as pa
from pyspark import StorageLevel, TaskContext
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.advance_time import AdvanceTimePolicy, AdvanceTimeSettings
from streamql.errors import BadInputError, BindingError
from streamql.events import Shape
from streamql.payload import Kind, ValueType
from streamql.query.joins import FLUSHED
from streamql.query.nodes import Input
from streamql.spark import arrival_scan as scan
from streamql.spark import late
from streamql.spark.columns import (ACTION, ARRIVAL, BAD, CLOSED, END, HEAD, KIND, LATE_ARRIVAL, MOVED_TO, SEQ,
                                   START)
from streamql.spark.edge_matching import match_end_edges
from streamql.spark.phases import phase
from streamql.spark.schema import column_for_field
from streamql.time import INFINITY_MICROS, MAX_MICROS, duration_micros, from_micros

#: a row's scan unit (a run of arrival order) is ``_sq_seq >> 33``: monotonically_increasing_id
#: keeps the partition index there, and arrival-ordered inputs put their arrival range there
PARTITION_BITS = 33
#: up to this many decisions (late events dropped or moved) are broadcast to the events
BROADCAST_DECISIONS = 2_000_000


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

    @property
    def name(self) -> str:
        return self.node.name


def check_binding(b: Binding) -> None:
    """Every error that can be found without running a job."""
    columns = {f.name: f.dataType for f in b.source.schema.fields}

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


def prepare(b: Binding, cti_rows: DataFrame | None = None, partition_order: bool = False) -> DataFrame:
    """The input as rows in arrival order: ``_sq_seq`` (increasing with arrival), ``_sq_kind``,
    ``_sq_start``/``_sq_end`` in microseconds, ``_sq_bad`` (the reason a row is bad, or null),
    then the payload fields converted to their Spark types.

    ``cti_rows`` (``_sq_arrival``, ``_sq_start``) are CTIs imported from another input, merged
    into the arrival order. ``partition_order``: number the rows in partition order even though
    the input has an arrival column (the caller has found its arrival values strictly increasing
    in partition order, so that is their arrival order).
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
        return _in_arrival_order(rows, [f.name for f in b.node.schema.fields])
    # file/partition order: the partition index sits above bit 33 of the id, so each Spark
    # partition is one scan unit
    return rows.withColumn(SEQ, F.monotonically_increasing_id())


def _in_arrival_order(rows: DataFrame, payload: list[str]) -> DataFrame:
    """Rows numbered in arrival order: ``_sq_seq`` = (arrival range << 33) | position in the range.

    The ranges come from quantiles of the arrival column fixed once as literals, and positions
    from a total order (arrival, events before CTIs, then every column), so every job that
    recomputes this plan numbers every row the same way — which sampling-based range
    partitioning would not guarantee. No step gathers the input in one partition.
    """
    arrival = F.col(ARRIVAL)
    key = _arrival_key(rows)
    units = int(rows.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    probabilities = [i / units for i in range(1, units)]
    bounds = sorted(set(rows.select(key.cast("double").alias("k")).approxQuantile("k", probabilities, 0.001)))
    unit = F.lit(0)
    for bound in bounds:
        unit = unit + F.when(key.cast("double") >= F.lit(bound), 1).otherwise(0)
    unit_column = "_sq_unit"
    # at equal arrival values: events (start edges before end edges) before CTIs
    order = [arrival.asc_nulls_first(), F.col(KIND).asc(), F.col(START), F.col(END),
             *[F.col(name) for name in payload]]
    position = F.row_number().over(Window.partitionBy(unit_column).orderBy(*order)) - 1
    return (rows.withColumn(unit_column, unit).repartition(units, unit_column)
            .withColumn(SEQ, F.shiftleft(F.col(unit_column).cast("long"), PARTITION_BITS) + position)
            .drop(unit_column))


def _with_row_number(df: DataFrame) -> DataFrame:
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


# --- the scan ----------------------------------------------------------------------------------

_SUMMARY_SCHEMA = T.StructType([
    T.StructField("unit", T.LongType()), T.StructField("rows", T.LongType()),
    T.StructField("eligible", T.LongType()), T.StructField("max_start", T.LongType()),
    T.StructField("max_cti_row", T.LongType()), T.StructField("min_checked", T.LongType()),
    T.StructField("locally_certain", T.BooleanType()),
    T.StructField("tail_max", T.ArrayType(T.LongType())),
    T.StructField("bad_rows", T.LongType()), T.StructField("first_bad", T.LongType()),
    T.StructField("arrival_increasing", T.BooleanType()), T.StructField("arrival_first", T.LongType()),
    T.StructField("arrival_last", T.LongType()),
])

#: the summary row's fields that ``scan.Summary`` holds (the row also carries the arrival facts)
_SUMMARY_FIELDS = [f.name for f in attrs.fields(scan.Summary) if f.name != "tail_max"]

_SIMULATION_SCHEMA = T.StructType([
    T.StructField("record", T.IntegerType()),  # 0: the state after the partition, 1: a decision, 2: a CTI step
    T.StructField("seq", T.LongType()), T.StructField("action", T.IntegerType()),
    T.StructField("time", T.LongType()),
    T.StructField("cti", T.LongType()), T.StructField("count", T.LongType()),
    T.StructField("max_start", T.LongType()), T.StructField("baseline", T.LongType()),
    T.StructField("dropped", T.LongType()), T.StructField("adjusted", T.LongType()),
])


_SUMMARY_ARROW = pa.schema([
    ("unit", pa.int64()), ("rows", pa.int64()), ("eligible", pa.int64()), ("max_start", pa.int64()),
    ("max_cti_row", pa.int64()), ("min_checked", pa.int64()), ("locally_certain", pa.bool_()),
    ("tail_max", pa.list_(pa.int64())), ("bad_rows", pa.int64()), ("first_bad", pa.int64()),
    ("arrival_increasing", pa.bool_()), ("arrival_first", pa.int64()), ("arrival_last", pa.int64()),
])

_SIMULATION_ARROW = pa.schema([
    ("record", pa.int32()), ("seq", pa.int64()), ("action", pa.int32()), ("time", pa.int64()),
    ("cti", pa.int64()), ("count", pa.int64()), ("max_start", pa.int64()),
    ("baseline", pa.int64()), ("dropped", pa.int64()), ("adjusted", pa.int64()),
])


def _table(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """One Spark partition's rows as one table (None when it has none)."""
    collected = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(collected) if collected else None


def _units(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, scan.Rows]]:
    """The rows of one Spark partition split into scan units (contiguous, in arrival order)."""
    table = _table(batches)
    if table is not None:
        yield from _units_of(table)


def _units_of(table: pa.Table) -> Iterator[tuple[int, scan.Rows]]:
    partition = TaskContext.get().partitionId()  # type: ignore[union-attr]
    rows = scan.rows_of(table, partition)
    units = rows.seqs >> PARTITION_BITS
    cuts = np.flatnonzero(np.diff(units)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(units)]])):
        yield int(units[lo]), rows.slice(int(lo), int(hi))


def _summarize_units(settings: scan.ScanSettings) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = _table(batches)
        if table is None:
            return
        # the arrival values come along only in partition order, where the partition is one unit
        arrivals = table.column("arrival") if "arrival" in table.schema.names else None
        summaries = [{**attrs.asdict(scan.summarize(rows, settings, unit)), **_arrival_facts(arrivals)}
                     for unit, rows in _units_of(table)]
        if summaries:
            yield pa.RecordBatch.from_pylist([{**s, "tail_max": list(s["tail_max"])} for s in summaries],
                                             schema=_SUMMARY_ARROW)
    return run


def _arrival_facts(arrivals: pa.ChunkedArray | None) -> dict[str, Any]:
    """Whether a unit's arrival values increase strictly in partition order (no null), and its
    first and last: what proves partition order to be arrival order."""
    if arrivals is None:
        return {"arrival_increasing": None, "arrival_first": None, "arrival_last": None}
    if arrivals.is_null().to_numpy(zero_copy_only=False).any():
        return {"arrival_increasing": False, "arrival_first": None, "arrival_last": None}
    values = arrivals.to_numpy(zero_copy_only=False).astype(np.int64)
    return {"arrival_increasing": bool(np.all(values[1:] > values[:-1])),
            "arrival_first": int(values[0]), "arrival_last": int(values[-1])}


def _in_partition_order(summaries: list[dict[str, Any]]) -> bool:
    """Whether the units' arrival values increase strictly across the whole input (the units in
    partition order)."""
    last = None
    for s in summaries:
        if not s["arrival_increasing"]:
            return False
        if last is not None and s["arrival_first"] <= last:
            return False
        last = s["arrival_last"]
    return True


def _simulate_units(states: Mapping[int, scan.ScanState], settings: scan.ScanSettings) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for unit, rows in _units(batches):
            if unit not in states:
                continue
            good = rows.good()
            sim = scan.simulate(good.kinds, good.starts, good.ends, good.seqs, states[unit], settings)
            records: list[dict[str, Any]] = [{
                "record": 0, "seq": unit, "cti": sim.state.cti, "count": sim.state.count,
                "max_start": sim.state.max_start, "baseline": sim.state.baseline,
                "dropped": sim.dropped, "adjusted": sim.adjusted,
            }]
            records += [{"record": 1, "seq": seq, "action": action, "time": time}
                        for seq, action, time in sim.decisions]
            records += [{"record": 2, "seq": int(good.seqs[index]), "time": cti} for index, cti in sim.cti_changes]
            for first in range(0, len(records), 65536):
                yield pa.RecordBatch.from_pylist(records[first:first + 65536], schema=_SIMULATION_ARROW)
    return run


def _arrival_key(prepared: DataFrame) -> Column:
    """The arrival column as a long (microseconds for a timestamp)."""
    arrival = F.col(ARRIVAL)
    if isinstance(prepared.schema[ARRIVAL].dataType, T.TimestampType):
        return F.unix_micros(arrival)
    return arrival.cast("long")


def _compact(prepared: DataFrame, b: Binding, imports_ctis: bool, with_seq: bool,
             with_arrival: bool = False) -> DataFrame:
    """The time columns the scan reads, and only those (each costs an Arrow transfer):
    ``start`` (null for a bad row), ``kind`` if the input can hold CTI rows or edges, ``end`` if a
    decision can depend on it (ADJUST, end edges), ``seq`` if arrival order is not partition order or
    ``with_seq`` asks for it. Without ``seq`` the scan derives it from the task's partition, which
    is only right where the mapInArrow reads the input's partitions directly (not under a union)."""
    edges = b.node.shape is Shape.EDGE
    columns = [F.when(F.col(BAD).isNull(), F.col(START)).alias("start")]
    if b.kind is not None or imports_ctis or edges:
        columns.append(F.col(KIND).alias("kind"))
    # an end edge is checked against the CTI by its end, under either policy
    if edges or (b.advance_time is not None and b.advance_time.policy is AdvanceTimePolicy.ADJUST):
        columns.append(F.col(END).alias("end"))
    if (b.arrival is not None and not with_arrival) or with_seq:
        columns.append(F.col(SEQ).alias("seq"))
    if with_arrival:
        columns.append(_arrival_key(prepared).alias("arrival"))
    return prepared.select(*columns)


@attrs.frozen
class _UnitOutcome:
    state: scan.ScanState  # the state after the unit
    dropped: int
    adjusted: int


@attrs.define
class _Walk:
    state: scan.ScanState  # after the last unit (exact when nothing is pending)
    states: dict[int, scan.ScanState]  # the state entering each unit
    simulated: list[tuple[int, scan.ScanState]]  # the simulations the exact walk used
    pending: dict[int, scan.ScanState]  # units to simulate next, from these states


def _walk(summaries: list[dict[str, Any]], settings: scan.ScanSettings,
          simulations: Mapping[tuple[int, scan.ScanState], tuple[_UnitOutcome, DataFrame]],
          latest: Mapping[int, tuple[scan.ScanState, _UnitOutcome]], initial: scan.ScanState) -> _Walk:
    walk = _Walk(initial, {}, [], {})
    state, exact = initial, True
    for s in summaries:
        unit = s["unit"]
        if exact:
            walk.states[unit] = state
        summary = scan.Summary(**{k: s[k] for k in _SUMMARY_FIELDS}, tail_max=tuple(s["tail_max"] or ()))
        after = scan.clean_transfer(summary, state, settings)
        if after is None:
            done = simulations.get((unit, state))
            if done is not None:
                after = done[0].state
                if exact:
                    walk.simulated.append((unit, state))
            else:
                walk.pending[unit] = state
                exact = False
                # a guess of what comes next: the unit's last simulated outcome (with the count moved
                # as much as it moved then), else its summary's
                previous = latest.get(unit)
                if previous is None:
                    after = scan.optimistic_transfer(summary, state, settings)
                else:
                    before, outcome = previous
                    after = attrs.evolve(outcome.state, count=state.count + outcome.state.count - before.count)
        state = after
    walk.state = state
    return walk


@attrs.define
class Ingress:
    """The outcome of one input's scan: accepted events and the CTIs."""

    events: DataFrame  # _sq_start, _sq_end, _sq_closed, _sq_head, payload fields
    final_cti: int | None
    finite_cti: int | None  # the greatest CTI before INFINITY
    #: the arrival at which the CTI reached INFINITY (``query.joins.FLUSHED`` by the flush), or None
    dropped: int
    adjusted: int
    bad_rows: int
    cti_steps: DataFrame | None  # (_sq_arrival, _sq_start=CTI) for inputs that import these CTIs
    persisted: list[DataFrame]
    #: the scan state after the last row (a streaming run starts the next micro-batch from it)
    state: scan.ScanState = scan.ScanState()
    rows: int = 0  # the input's rows (events, edges, CTI rows and bad rows)
    #: the records of the rows counted in dropped, adjusted and bad_rows (``streamql.spark.late``;
    #: lazy: built only if asked for). None where the run cannot give them yet (a streaming EDGE scan)
    late: DataFrame | None = None
    reached: int | None = None


def run_ingress(b: Binding, imported: Ingress | None, flush: bool, want_steps: bool,
                imported_arrival: bool, initial: scan.ScanState = scan.ScanState(),
                match_edges: bool = True, first_position: int = 0) -> Ingress:
    """Scans one input. ``imported`` is the ingress of the input whose CTIs this one imports;
    when both have arrival columns (``imported_arrival``) its CTI steps join the arrival order.

    A streaming run scans each micro-batch from the state the previous one ended in
    (``initial``) and matches the end edges of an EDGE input itself, with the start edges it
    carries (``match_edges=False``: ``events`` are then the scanned edge rows, with the scan's
    ``_sq_action``/``_sq_moved_to``, and the counts are the matching's to make).
    ``first_position``: the rows of the input before these (a stream's earlier micro-batches), from
    which the late records number the rows of an input without an arrival column."""
    cti_rows = imported.cti_steps if imported is not None and imported_arrival else None
    settings = scan_settings(b.advance_time)

    def summarized(prepared: DataFrame, with_arrival: bool) -> list[dict[str, Any]]:
        # one summary row per scan unit comes to the driver: the "small prefix combine" of DESIGN §6
        compact = _compact(prepared, b, cti_rows is not None, with_seq=False, with_arrival=with_arrival)
        with phase("scan summary"):
            return sorted((row.asDict() for row in
                           compact.mapInArrow(_summarize_units(settings), _SUMMARY_SCHEMA).collect()),
                          key=lambda r: r["unit"])

    summaries: list[dict[str, Any]] | None = None
    if b.arrival is not None and cti_rows is None:
        # most inputs arrive in the order they are stored: the summary's pass in partition order
        # also checks that, and where it holds the arrival numbering (a shuffle and a sort) is not needed
        prepared = prepare(b, partition_order=True)
        summaries = summarized(prepared, with_arrival=True)
        if not _in_partition_order(summaries):
            summaries = None
    if summaries is None:
        with phase("arrival order"):
            prepared = prepare(b, cti_rows)
        summaries = summarized(prepared, with_arrival=False)
    bad_rows = sum(s["bad_rows"] for s in summaries)
    rows = sum(s["rows"] + s["bad_rows"] for s in summaries)  # a summary's rows are its good ones
    if bad_rows and b.bad_rows == "error":
        first = min(s["first_bad"] for s in summaries if s["first_bad"] >= 0)
        bad = prepared.filter(F.col(SEQ) == first).select(BAD).first()
        raise _bad_row(b, prepared, first, bad[0] if bad else "unknown")
    persisted: list[DataFrame] = []
    cached_compact: DataFrame | None = None
    simulations: dict[tuple[int, scan.ScanState], tuple[_UnitOutcome, DataFrame]] = {}
    latest: dict[int, tuple[scan.ScanState, _UnitOutcome]] = {}
    while True:
        # Walk the units with the exact state. A unit whose summary decides, or that was simulated
        # from exactly this state, passes it on exactly; the first other unit is simulated next,
        # and so, speculatively, is every later one, from a guessed state (its outcome counts only
        # if a later walk reaches it with that very state).
        walk = _walk(summaries, settings, simulations, latest, initial)
        if not walk.pending:
            break
        if cached_compact is None:
            # the simulated units' decisions are joined to the events under a union, where the
            # task's partition is not the input's: these rows carry their seq
            cached_compact = _compact(prepared, b, cti_rows is not None, with_seq=True).persist(
                StorageLevel.MEMORY_AND_DISK)
            persisted.append(cached_compact)
        units = F.shiftright(F.col("seq"), PARTITION_BITS).isin(list(walk.pending))
        simulated = cached_compact.filter(units).mapInArrow(
            _simulate_units(walk.pending, settings), _SIMULATION_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(simulated)
        with phase("scan simulation"):
            records = simulated.filter(F.col("record") == 0).collect()  # one state row per simulated unit
        for record in records:
            outcome = _UnitOutcome(scan.ScanState(record["cti"], record["count"], record["max_start"],
                                                  record["baseline"]), record["dropped"], record["adjusted"])
            unit = record["seq"]
            simulations[(unit, walk.pending[unit])] = (outcome, simulated)
            latest[unit] = (walk.pending[unit], outcome)
    state, states = walk.state, walk.states
    dropped = sum(simulations[key][0].dropped for key in walk.simulated)
    adjusted = sum(simulations[key][0].adjusted for key in walk.simulated)
    decisions = [simulations[key][1].filter((F.col("record") == 1)
                                            & (F.shiftright(F.col("seq"), PARTITION_BITS) == key[0]))
                 for key in walk.simulated]
    final = state.cti
    finite = None if final in (scan.NONE, INFINITY_MICROS) else final
    reached: int | None = None
    unit_rows = [(s["unit"], s["rows"] + s["bad_rows"]) for s in summaries]
    if final == INFINITY_MICROS and initial.cti != INFINITY_MICROS:
        # a CTI row took the input to INFINITY: a union after it needs where, and the greatest
        # finite CTI before (docs/decisions.md, the horizon on Spark)
        with phase("scan infinity"):
            finite, reached = _reached_infinity(prepared, b, cti_rows is not None, summaries, walk, settings,
                                                unit_rows, first_position)
    if flush:
        final = INFINITY_MICROS
        reached = FLUSHED if reached is None else reached
    if imported is not None and imported.final_cti is not None:
        final = imported.final_cti if final == scan.NONE else max(final, imported.final_cti)
    # on one arrival clock the imported CTIs are rows of this scan already (and those after this
    # input's own INFINITY do not count)
    if imported is not None and imported.finite_cti is not None and (cti_rows is None or reached is None):
        finite = imported.finite_cti if finite is None else max(finite, imported.finite_cti)
    if imported is not None and imported.reached is not None:
        reached = imported.reached if reached is None else min(reached, imported.reached)
    events = prepared.filter(F.col(BAD).isNull() & (F.col(KIND) != scan.CTI))
    if decisions:
        applied = decisions[0]
        for more in decisions[1:]:
            applied = applied.unionByName(more)
        applied = applied.select(F.col("seq").alias("_sq_d_seq"), F.col("action").alias(ACTION),
                                 F.col("time").alias(MOVED_TO))
        if dropped + adjusted <= BROADCAST_DECISIONS:
            # the usual case: few late events; joining them to every partition avoids moving the events
            applied = F.broadcast(applied)
        events = events.join(applied, events[SEQ] == applied["_sq_d_seq"], "left")
    else:
        events = events.withColumn(ACTION, F.lit(None).cast("int")).withColumn(MOVED_TO, F.lit(None).cast("long"))
    steps = None
    if want_steps:
        steps = _cti_steps(prepared, _compact(prepared, b, cti_rows is not None, with_seq=True), states, settings)
    payload = [f.name for f in b.node.schema.fields]
    arrival = late.arrival_of(prepared, b.arrival is not None, unit_rows, first_position)
    late_bad = late.bad_rows(prepared, arrival, payload)
    if b.node.shape is Shape.EDGE:
        # an edge's late record is made when its event is decided: its arrival goes with it
        events = events.withColumn(LATE_ARRIVAL, arrival)
    if b.node.shape is Shape.EDGE and not match_edges:
        return Ingress(
            events=events.select(KIND, SEQ, START, END, ACTION, MOVED_TO, *payload, LATE_ARRIVAL),
            final_cti=None if final == scan.NONE else final, finite_cti=finite, dropped=0, adjusted=0,
            bad_rows=bad_rows, cti_steps=steps, persisted=persisted, state=attrs.evolve(state, cti=final), rows=rows,
            late=late_bad, reached=reached)  # the step adds the records of the events its matching decides
    if b.node.shape is Shape.EDGE:
        # the scan's counts include end edges that turn out unmatched: the matching counts instead
        with phase("edge matching"):
            matched = match_end_edges(events, payload, None if final == scan.NONE else final)
        persisted.append(matched.persisted)
        if matched.unmatched and b.bad_rows == "error":
            first = prepared.filter(F.col(SEQ) == matched.first_unmatched).select(START, END).first()
            assert first is not None
            for df in persisted:
                df.unpersist()
            raise _bad_row(b, prepared, matched.first_unmatched,
                           f"end edge at {from_micros(first[1])} has no open start edge at "
                           f"{from_micros(first[0])} with its payload")
        late_rows = late_bad.unionByName(late.edge_rows(matched.persisted, payload))
        return Ingress(
            events=matched.events, final_cti=None if final == scan.NONE else final, finite_cti=finite,
            dropped=matched.dropped, adjusted=matched.adjusted, bad_rows=bad_rows + matched.unmatched,
            cti_steps=steps, persisted=persisted, state=attrs.evolve(state, cti=final), rows=rows, late=late_rows,
            reached=reached,
        )
    late_rows = late_bad.unionByName(late.decided_rows(events, arrival, payload)) if decisions else late_bad
    events = events.filter(F.col(ACTION).isNull() | (F.col(ACTION) != scan.DROP))
    events = events.withColumn(START, F.when(F.col(ACTION) == scan.ADJUST_START, F.col(MOVED_TO))
                               .otherwise(F.col(START)))
    return Ingress(
        events=events.select(START, END, F.lit(True).alias(CLOSED), F.lit(True).alias(HEAD), *payload),
        final_cti=None if final == scan.NONE else final, finite_cti=finite,
        dropped=dropped, adjusted=adjusted, bad_rows=bad_rows,
        cti_steps=steps, persisted=persisted, state=attrs.evolve(state, cti=final), rows=rows, late=late_rows,
        reached=reached,
    )


def _reached_infinity(prepared: DataFrame, b: Binding, imports_ctis: bool, summaries: list[dict[str, Any]],
                      walk: _Walk, settings: scan.ScanSettings, unit_rows: list[tuple[int, int]],
                      first_position: int) -> tuple[int | None, int]:
    """For an input whose CTI rows took its CTI to INFINITY: its greatest finite CTI before (the
    finite CTIs at the same arrival included: they come first) and the arrival of that row (as
    ``late.arrival_of`` numbers it). Only the scan unit where it happened is simulated again."""
    order = [s["unit"] for s in summaries]
    leaving = {unit: walk.states[after] for unit, after in zip(order, order[1:])}
    leaving[order[-1]] = walk.state
    unit = next(u for u in order if leaving[u].cti == INFINITY_MICROS)
    entering = walk.states[unit]
    compact = _compact(prepared, b, imports_ctis, with_seq=True)
    changes = (compact.filter(F.shiftright(F.col("seq"), PARTITION_BITS) == unit)
               .mapInArrow(_simulate_units({unit: entering}, settings), _SIMULATION_SCHEMA)
               .filter(F.col("record") == 2))
    found = changes.agg(F.max(F.when(F.col("time") != F.lit(INFINITY_MICROS), F.col("time"))).alias("finite"),
                        F.min(F.when(F.col("time") == F.lit(INFINITY_MICROS), F.col("seq"))).alias("seq")).first()
    assert found is not None and found["seq"] is not None
    before = [c for c in (entering.cti, found["finite"]) if c is not None and c not in (scan.NONE, INFINITY_MICROS)]
    arrival = late.arrival_of(prepared, b.arrival is not None, unit_rows, first_position)
    row = prepared.filter(F.col(SEQ) == F.lit(found["seq"])).select(arrival.alias("arrival")).first()
    assert row is not None
    return (max(before) if before else None), int(row["arrival"])


def _bad_row(b: Binding, prepared: DataFrame, seq: int, reason: str) -> BadInputError:
    """The error for the bad row numbered ``seq``, showing the row as the DataFrame holds it
    (without an arrival column; with one, its arrival value and payload)."""
    if b.arrival is None:
        row = _with_row_number(b.source).filter(F.col(SEQ) == seq).select(*b.source.columns).first()
    else:
        fields = [f.name for f in b.node.schema.fields]
        row = prepared.filter(F.col(SEQ) == seq).select(F.col(ARRIVAL).alias(b.arrival), *fields).first()
    shown = f", row {row.asDict()}" if row is not None else ""
    return BadInputError(f"input {b.name!r}: bad row ({reason}{shown}); "
                         "bind with bad_rows='drop' to drop and count such rows")


def _cti_steps(prepared: DataFrame, compact: DataFrame, states: Mapping[int, scan.ScanState],
               settings: scan.ScanSettings) -> DataFrame:
    """Every change of this input's CTI, at the arrival of the row after which it happened."""
    simulated = compact.mapInArrow(_simulate_units(dict(states), settings), _SIMULATION_SCHEMA)
    steps = simulated.filter(F.col("record") == 2).select(F.col("seq").alias("_sq_step_seq"),
                                                          F.col("time").alias("_sq_step_cti"))
    arrivals = prepared.select(SEQ, ARRIVAL)
    return (steps.join(arrivals, steps["_sq_step_seq"] == arrivals[SEQ])
            .select(F.col(ARRIVAL), F.col("_sq_step_cti").alias(START)))


__all__ = ["ARRIVAL", "BAD", "CLOSED", "END", "HEAD", "KIND", "SEQ", "START",  # re-exported: operators import them here
           "Binding", "Ingress", "check_binding", "prepare", "run_ingress", "scan_settings"]
