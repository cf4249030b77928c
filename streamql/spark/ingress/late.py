"""Late events you can see: the input rows the violation policy dropped or moved, and the bad
rows ``bad_rows="drop"`` dropped, as rows (``Binder.late``) and as ``sq.Late`` records
(``Binder.run(q, late=True)``), exactly as the reference ingress records them
(``streamql.reference.inputs``; docs/late-events.md).

An input's scan builds its records lazily from what it decided anyway — the scan's decisions
joined to the events, the bad rows, and for an EDGE input the matching's decided rows — so a
query that does not ask for them pays nothing: not a job, and not the driver's planning either
(``Deferred``, ``streamql.spark.base.deferred``: their DataFrame is made only when a caller asks
for it).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import attrs
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.events import Late, late_order
from streamql.payload import PayloadSchema
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.ingress.binding import arrival_key
from streamql.spark.base.columns import ACTION, BAD, END, KIND, LATE_ARRIVAL, MOVED_TO, PARTITION, SEQ, START
from streamql.spark.base.schema import PARQUET_OPTIONS, collectable, payload_from_row
from streamql.time import INFINITY_MICROS, MAX_MICROS, from_micros

#: an input's late records as its scan builds them: times in microseconds, then the payload fields
L_ARRIVAL, L_ACTION, L_KIND, L_START, L_END, L_CTI, L_NEW_START, L_NEW_END, L_REASON = (
    LATE_ARRIVAL, "_sq_l_action", "_sq_l_kind", "_sq_l_start", "_sq_l_end", "_sq_l_cti",
    "_sq_l_new_start", "_sq_l_new_end", "_sq_l_reason")
_TIMES = [L_START, L_END, L_CTI, L_NEW_START, L_NEW_END]
#: a partitioned input's records: the partition of each (``with_partition``)
L_PARTITION = "_sq_l_partition"
#: the columns of ``Binder.late``
COLUMNS = ["input", "arrival", "action", "kind", "start", "end", "cti", "new_start", "new_end", "payload", "reason",
           "partition"]

DROPPED, ADJUSTED, BAD_ROW = "dropped", "adjusted", "bad_row"


def went_back_reason(batch: int | Column, before: int | Column) -> Column:
    """The reason of a late record whose item arrived in micro-batch ``batch`` with an arrival value
    before ``before``, the greatest arrival value of its input's earlier micro-batches
    (docs/streaming.md, "Why events of a stream are late")."""
    def text(value: int | Column) -> Column:
        return F.lit(str(value)) if isinstance(value, int) else value.cast("string")

    return F.concat(F.lit("arrived in micro-batch "), text(batch), F.lit(" after arrival value "), text(before),
                    F.lit(" of an earlier micro-batch: the input's arrival went back across micro-batches (a file "
                          "source takes files by modification time, so a file with earlier arrival values can "
                          "come after a later one; see docs/streaming.md)"))


@attrs.frozen
class WentBack:
    """A streaming input whose micro-batch ``batch`` holds rows with arrival values before
    ``before``, the greatest arrival value of its earlier micro-batches: such a row's record says
    so in its ``reason`` (``went_back_reason``)."""

    batch: int
    before: int


def with_went_back(records: DataFrame, went_back: WentBack) -> DataFrame:
    """The records of a point or interval input's micro-batch (``decided_rows``, ``bad_rows``)
    with ``went_back``'s reason on those the policy dropped or moved whose arrival value is before
    ``went_back.before`` (a bad row keeps its own reason)."""
    cause = (F.col(L_ACTION) != F.lit(BAD_ROW)) & (F.col(L_ARRIVAL) < F.lit(went_back.before))
    return records.withColumn(L_REASON, F.when(cause, went_back_reason(went_back.batch, went_back.before))
                              .otherwise(F.col(L_REASON)))


@attrs.frozen
class EdgeCauses:
    """Where a streaming step's matched edge rows say whether an edge's arrival went back:
    ``batch_column`` holds the micro-batch a row arrived in, ``before_column`` the greatest arrival
    value of the earlier micro-batches where the row's arrival value is before it (else null; set
    when the row arrives, carried with a start edge that stays open). ``now``: this micro-batch's
    (an end edge that decides its event arrived in it)."""

    batch_column: str
    before_column: str
    now: WentBack | None


def arrival_of(prepared: DataFrame, has_arrival: bool, unit_rows: Sequence[tuple[int, int]],
               first_position: int = 0) -> Column:
    """A row's arrival as its record shows it: the arrival column as a long (microseconds for a
    timestamp), else its 0-based position in storage order — ``first_position`` (the rows of the
    earlier micro-batches of a stream) plus the rows of the earlier scan units (``unit_rows``:
    (unit, rows) of every unit, from the scan's summary) plus its index in its unit."""
    if has_arrival:
        return arrival_key(prepared)
    seq = F.col(SEQ)

    offsets: list[Any] = []
    before = first_position
    for unit, rows in sorted(unit_rows):
        offsets += [F.lit(unit), F.lit(before)]
        before += rows
    index = seq.bitwiseAND(F.lit((1 << scan.PARTITION_BITS) - 1))
    if not offsets:
        return index + F.lit(first_position)
    return F.element_at(F.create_map(*offsets), F.shiftright(seq, scan.PARTITION_BITS)) + index


def _kind_name(kind: Column) -> Column:
    return (F.when(kind == scan.START_EDGE, F.lit("START")).when(kind == scan.END_EDGE, F.lit("END"))
            .when(kind == scan.CTI, F.lit("CTI")).otherwise(F.lit("INSERT")))


def _record(arrival: Column, action: str | Column, kind: str | Column, start: Column, end: Column | None,
            cti: Column | None, new_start: Column | None, new_end: Column | None, payload: Sequence[str],
            reason: Column | None = None) -> list[Column]:
    def value(c: str | Column) -> Column:
        return F.lit(c) if isinstance(c, str) else c

    def time(c: Column | None) -> Column:
        return (c if c is not None else F.lit(None)).cast("long")

    return [arrival.cast("long").alias(L_ARRIVAL), value(action).alias(L_ACTION), value(kind).alias(L_KIND),
            time(start).alias(L_START), time(end).alias(L_END), time(cti).alias(L_CTI),
            time(new_start).alias(L_NEW_START), time(new_end).alias(L_NEW_END),
            *[F.col(p) for p in payload], (reason if reason is not None else F.lit(None)).cast("string").alias(L_REASON)]


def bad_rows(prepared: DataFrame, arrival: Column, payload: Sequence[str]) -> DataFrame:
    """The records of the rows ``bad_rows="drop"`` dropped (a CTI row's kind is ``"CTI"``)."""
    kind = F.col(KIND)
    # the rows of a partitioned input whose partition value is not declared carry that value
    partition = [F.col(PARTITION).alias(L_PARTITION)] if PARTITION in prepared.columns else []
    return prepared.filter(F.col(BAD).isNotNull()).select(*_record(
        arrival, BAD_ROW, _kind_name(kind), F.col(START),
        # a start edge and a CTI row have no end given (an EDGE input's scan holds INFINITY there)
        F.when((kind == scan.START_EDGE) | (kind == scan.CTI), F.lit(None)).otherwise(F.col(END)), None, None, None,
        payload, F.col(BAD)), *partition)


def with_partition(records: DataFrame, value: Column) -> DataFrame:
    """One partition's records with their partition ``value`` (the undeclared rows' keep their own)."""
    if L_PARTITION in records.columns:
        return records.withColumn(L_PARTITION, F.coalesce(F.col(L_PARTITION), value))
    return records.withColumn(L_PARTITION, value)


def decided_rows(events: DataFrame, arrival: Column, payload: Sequence[str]) -> DataFrame:
    """The records of a point or interval input's events the scan dropped or moved (``events``:
    the good rows with the scan's ``_sq_action``/``_sq_moved_to``)."""
    action = F.col(ACTION)
    moved = action == scan.ADJUST_START
    return events.filter(action.isNotNull()).select(*_record(
        arrival, F.when(moved, F.lit(ADJUSTED)).otherwise(F.lit(DROPPED)), "INSERT", F.col(START), F.col(END),
        F.col(MOVED_TO), F.when(moved, F.col(MOVED_TO)), F.when(moved, F.col(END)), payload))


def edge_rows(decided: DataFrame, payload: Sequence[str], new: Column | None = None,
              count_open: bool = True, causes: EdgeCauses | None = None) -> DataFrame:
    """The records of an EDGE input, from the matching's decided rows
    (``streamql.spark.ingress.edge_matching.decide``, each row with its arrival in ``_sq_l_arrival``): a
    dropped start edge, an end edge DROP ignored, an end edge with nothing to close (a bad row),
    and one record per moved or emptied event — its end edge's if ADJUST moved the end or the event
    came out empty, else its start edge's. As the matching counts them: ``new`` (a streaming step:
    which rows are the micro-batch's) and ``count_open`` (an open event is recorded only once final).
    ``causes``: a record whose edge arrived with an arrival value before the greatest of the earlier
    micro-batches gives that as its reason (``went_back_reason``): an end edge's record if it
    arrived in this micro-batch (its micro-batch is the first of the matching's ``order`` columns,
    ``_sq_end_edge.order0``) and ``causes.now`` says so, another record from its row's columns."""
    end_action = F.col("_sq_end_edge.action")
    end_moved = F.coalesce(end_action == scan.ADJUST_END, F.lit(False))
    opens, emptied = F.col("_sq_opens"), F.col("_sq_emptied")
    settled = opens if count_open else opens & F.col("_sq_end_edge").isNotNull()
    moved = F.coalesce(F.col("_sq_moved"), F.lit(False))
    by_end = settled & (emptied | (moved & end_moved))
    by_start = settled & ~emptied & moved & ~end_moved
    arrives = F.col("_sq_dropped_start") | F.col("_sq_ignored_end") | F.col("_sq_bad_end")
    is_record = (arrives if new is None else arrives & new) | by_end | by_start
    arrival, end_edge_arrival = F.col(L_ARRIVAL), F.col(f"_sq_end_edge.{L_ARRIVAL}")
    start_cti = F.col(MOVED_TO)
    end_cti = F.when(end_moved, F.col("_sq_end_edge.moved_to")).otherwise(start_cti)
    late_edge = F.col("_sq_dropped_start") | F.col("_sq_ignored_end")
    reason = F.when(F.col("_sq_bad_end"), F.concat(
        F.lit("end edge at "), F.col(END).cast("string"), F.lit(" has no open start edge at "),
        F.col(START).cast("string"), F.lit(" with its payload")))
    if causes is not None:
        if causes.now is not None:
            now = causes.now
            reason = reason.when(by_end & (F.col("_sq_end_edge.order0") == F.lit(now.batch))
                                 & (end_edge_arrival < F.lit(now.before)), went_back_reason(now.batch, now.before))
        before = F.col(causes.before_column)
        reason = reason.when(~by_end & before.isNotNull(), went_back_reason(F.col(causes.batch_column), before))
    return decided.filter(is_record).select(*_record(
        F.when(by_end, end_edge_arrival).otherwise(arrival),
        F.when(F.col("_sq_bad_end"), F.lit(BAD_ROW)).when(late_edge | (by_end & emptied), F.lit(DROPPED))
        .otherwise(F.lit(ADJUSTED)),
        F.when(by_start | F.col("_sq_dropped_start"), F.lit("START")).otherwise(F.lit("END")),
        F.col(START),
        F.when(by_end, F.col("_sq_end_edge.end")).when(by_start | F.col("_sq_dropped_start"), F.lit(None))
        .otherwise(F.col(END)),
        F.when(by_end, end_cti).when(late_edge | by_start, start_cti),
        F.when(by_end & ~emptied, F.col("_sq_final_start")).when(by_start, F.col(MOVED_TO)),
        F.when(by_end & ~emptied, F.col("_sq_final_end")),
        payload,
        reason,
    ))


def _timestamp(column: Column) -> Column:
    """Microseconds as a UTC timestamp; INFINITY as ``9999-12-31 23:59:59.999999`` (as the output's open end)."""
    return F.timestamp_micros(F.when(column == F.lit(INFINITY_MICROS), F.lit(MAX_MICROS + 1)).otherwise(column))


def _payload_struct(schemas: Mapping[str, PayloadSchema], frames: Mapping[str, DataFrame]) -> dict[str, Column]:
    """Per input, its payload as a struct of the fields of all the inputs (by name, in order of
    first appearance; another input's field is null). A field name whose Spark type differs
    between inputs holds strings (the values cast to string)."""
    types: dict[str, list[T.DataType]] = {}
    for name, schema in schemas.items():
        frame = frames[name]
        for f in schema.fields:
            types.setdefault(f.name, []).append(frame.schema[f.name].dataType)
    mixed = {n for n, ts in types.items() if any(t != ts[0] for t in ts)}
    structs = {}
    for name, schema in schemas.items():
        own = {f.name for f in schema.fields}
        parts = []
        for field, ts in types.items():
            dtype = T.StringType() if field in mixed else ts[0]
            value = F.col(field).cast(dtype) if field in own else F.lit(None).cast(dtype)
            parts.append(value.alias(field))
        structs[name] = F.struct(*parts)
    return structs


def late_frame(inputs: Mapping[str, tuple[PayloadSchema, DataFrame]]) -> DataFrame:
    """``Binder.late``: the records of ``inputs`` (name -> payload schema and the scan's records),
    one DataFrame of ``COLUMNS``."""
    structs = _payload_struct({n: s for n, (s, _) in inputs.items()}, {n: f for n, (_, f) in inputs.items()})
    frames = [frame.select(F.lit(name).alias("input"), F.col(L_ARRIVAL).alias("arrival"),
                           F.col(L_ACTION).alias("action"), F.col(L_KIND).alias("kind"),
                           *[_timestamp(F.col(c)).alias(n) for c, n in zip(_TIMES, COLUMNS[4:9])],
                           # a CTI row has no payload: None, as for a bad row without one
                           F.when(F.col(L_KIND) == "CTI", F.lit(None)).otherwise(structs[name]).alias("payload"),
                           F.col(L_REASON).alias("reason"),
                           # strings: one column for the inputs' partitions of every kind
                           (F.col(L_PARTITION) if L_PARTITION in frame.columns else F.lit(None))
                           .cast("string").alias("partition"))
              for name, (_, frame) in inputs.items()]
    out = frames[0]
    for more in frames[1:]:
        out = out.unionByName(more)
    return out


def written_columns(frame: DataFrame, format: str) -> tuple[DataFrame, dict[str, str]]:
    """``late_frame``'s rows as written in ``format``, with the writer's options: CSV has no
    structs, so the payload's fields become columns ``payload_<field>``."""
    options = dict(PARQUET_OPTIONS) if format == "parquet" else {}
    if format in ("csv", "json"):
        options["timestampFormat"] = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"
    if format == "csv":
        options["header"] = "true"
        fields = frame.schema["payload"].dataType
        assert isinstance(fields, T.StructType)
        frame = frame.select(*[c for c in frame.columns if c != "payload"],
                             *[F.col("payload").getField(f.name).alias(f"payload_{f.name}") for f in fields.fields])
    return frame, options


def late_records(name: str, schema: PayloadSchema, frame: DataFrame) -> list[Late]:
    """One input's records collected as ``sq.Late``, in arrival order."""
    count = len(schema.fields)
    payload = [collectable(F.col(f.name), f.type).alias(f.name) for f in schema.fields]
    partition = F.col(L_PARTITION) if L_PARTITION in frame.columns else F.lit(None)
    rows = frame.select(L_ARRIVAL, L_ACTION, L_KIND, *_TIMES, L_REASON, *payload, partition.alias(L_PARTITION)).collect()

    def time(value: int | None) -> Any:
        return None if value is None else from_micros(value)

    records = [Late(input=name, arrival=r[0], action=r[1], kind=r[2], start=time(r[3]), end=time(r[4]),
                    cti=time(r[5]), new_start=time(r[6]), new_end=time(r[7]),
                    payload=None if r[2] == "CTI" else payload_from_row(schema, r[9:9 + count]), reason=r[8],
                    partition=r[9 + count])
               for r in rows]
    return sorted(records, key=late_order)


__all__ = ["COLUMNS", "EdgeCauses", "WentBack", "arrival_of", "bad_rows", "decided_rows", "edge_rows", "late_frame",
           "late_records", "went_back_reason", "with_partition", "with_went_back", "written_columns"]
