"""The scan of one input on Spark (``run_ingress``): the rows ``prepare`` numbered in arrival order
go through the arrival-order scan of ``streamql.spark.ingress.arrival_scan`` — one summary per
scan unit from Python workers, the combine on the driver, a simulation of the units that may hold
late events — and its decisions (drops, moved starts and ends) are applied to the events.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

import attrs
import numpy as np
import pyarrow as pa
from pyspark import StorageLevel, TaskContext
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.advance_time import AdvanceTimePolicy
from streamql.errors import BadInputError, BindingError
from streamql.events import Shape
from streamql.query.joins import FLUSHED
from streamql.spark.base.columns import (ACTION, ARRIVAL, BAD, CLOSED, END, HEAD, KIND, LATE_ARRIVAL, MOVED_TO, SEQ,
                                         START)
from streamql.spark.base.arrow_numpy import array_of, batch_of_rows, int64_values, is_null
from streamql.spark.base.sketches import Sketches, sketch
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.ingress import late
from streamql.spark.base.deferred import Deferred
from streamql.spark.ingress.binding import Binding, arrival_key, prepare, scan_settings, with_row_number
from streamql.spark.ingress.edge_matching import match_end_edges
from streamql.spark.runtime.phases import phase
from streamql.spark.runtime.workers import collected
from streamql.time import INFINITY_MICROS, from_micros

#: up to this many decisions (late events dropped or moved) are brought to the driver once, in one
#: job, and written into the events' plan as literals: every later job over the events (a live
#: step writes its sink and its late records) applies them without a job of its own
INLINE_DECISIONS = 256
#: up to this many decisions (late events dropped or moved) are broadcast to the events
BROADCAST_DECISIONS = 2_000_000
#: a simulation round makes residue tables only while their rows (units times residues), which
#: come to the driver, are at most this many
MAX_TABLE_ROWS = 1 << 18


# --- the scan ----------------------------------------------------------------------------------

#: the fields of a summary row that hold unit 0's outcome from the input's first state (``_first_unit``)
_FIRST = ("first_cti", "first_count", "first_max_start", "first_baseline", "first_dropped", "first_adjusted")

_SUMMARY_SCHEMA = T.StructType([
    T.StructField("unit", T.LongType()), T.StructField("rows", T.LongType()),
    T.StructField("eligible", T.LongType()), T.StructField("max_start", T.LongType()),
    T.StructField("max_cti_row", T.LongType()), T.StructField("min_checked", T.LongType()),
    T.StructField("locally_certain", T.BooleanType()),
    T.StructField("tail_max", T.ArrayType(T.LongType())),
    T.StructField("bad_rows", T.LongType()), T.StructField("first_bad", T.LongType()),
    T.StructField("arrival_increasing", T.BooleanType()), T.StructField("arrival_first", T.LongType()),
    T.StructField("arrival_last", T.LongType()), T.StructField("arrival_count", T.LongType()),
    T.StructField("arrival_sketch", T.ArrayType(T.LongType())),
    T.StructField("start_count", T.LongType()), T.StructField("start_sketch", T.ArrayType(T.LongType())),
    T.StructField("arrival_least", T.LongType()), T.StructField("arrival_greatest", T.LongType()),
    T.StructField("decided", T.BooleanType()), T.StructField("dropped", T.LongType()),
    T.StructField("adjusted", T.LongType()), T.StructField("moved_end", T.LongType()),
    T.StructField("moved_floor", T.LongType()), T.StructField("floor", T.LongType()),
    *[T.StructField(name, T.LongType()) for name in _FIRST],
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
    # a residue table's rows (``scan.ResidueTable``; null for a simulation from one state): the
    # residue of the entering count, and the entering CTIs above ``low`` that the row covers
    T.StructField("residue", T.IntegerType()), T.StructField("low", T.LongType()),
])


_SUMMARY_ARROW = pa.schema([
    ("unit", pa.int64()), ("rows", pa.int64()), ("eligible", pa.int64()), ("max_start", pa.int64()),
    ("max_cti_row", pa.int64()), ("min_checked", pa.int64()), ("locally_certain", pa.bool_()),
    ("tail_max", pa.list_(pa.int64())), ("bad_rows", pa.int64()), ("first_bad", pa.int64()),
    ("arrival_increasing", pa.bool_()), ("arrival_first", pa.int64()), ("arrival_last", pa.int64()),
    ("arrival_count", pa.int64()), ("arrival_sketch", pa.list_(pa.int64())),
    ("start_count", pa.int64()), ("start_sketch", pa.list_(pa.int64())),
    ("arrival_least", pa.int64()), ("arrival_greatest", pa.int64()),
    ("decided", pa.bool_()), ("dropped", pa.int64()), ("adjusted", pa.int64()), ("moved_end", pa.int64()),
    ("moved_floor", pa.int64()), ("floor", pa.int64()), *[(name, pa.int64()) for name in _FIRST],
])

#: the column of ``first_passes``' rows (and summaries) that tells the inputs apart
_INPUT = "input"
_INPUTS_SUMMARY_SCHEMA = T.StructType([T.StructField(_INPUT, T.IntegerType()), *_SUMMARY_SCHEMA.fields])
_INPUTS_SUMMARY_ARROW = pa.schema([pa.field(_INPUT, pa.int32()), *_SUMMARY_ARROW])

_SIMULATION_ARROW = pa.schema([
    ("record", pa.int32()), ("seq", pa.int64()), ("action", pa.int32()), ("time", pa.int64()),
    ("cti", pa.int64()), ("count", pa.int64()), ("max_start", pa.int64()),
    ("baseline", pa.int64()), ("dropped", pa.int64()), ("adjusted", pa.int64()),
    ("residue", pa.int32()), ("low", pa.int64()),
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
    """The rows of one Spark partition's table split into scan units."""
    partition = TaskContext.get().partitionId()  # type: ignore[union-attr]
    rows = scan.rows_of(table, partition)
    units = rows.seqs >> scan.PARTITION_BITS
    cuts = np.flatnonzero(np.diff(units)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(units)]])):
        yield int(units[lo]), rows.slice(int(lo), int(hi))


def _summarize_units(settings: scan.ScanSettings, initial: scan.ScanState | None = None) -> Any:
    """The ``mapInArrow`` function of the summary pass: one summary row per scan unit (``initial``:
    the input's first state, from which unit 0 is simulated if it holds late events:
    ``_summaries_of``)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = _table(batches)
        if table is None:
            return
        summaries = _summaries_of(table, settings, initial)
        if summaries:
            yield _summary_batch(summaries, _SUMMARY_ARROW)
    return run


def _summarize_inputs(inputs: Mapping[int, tuple[scan.ScanSettings, bool]]) -> Any:
    """The ``mapInArrow`` function of the summary pass over several inputs at once (``first_passes``):
    one summary row per input and scan unit. ``inputs``: by the number in the rows' ``input``
    column, the input's settings and whether its arrival values come along. A partition of a
    union holds one child's partition (or one of each child's): the rows of each input are split
    off and summarised as that input's own pass would."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = _table(batches)
        if table is None:
            return
        numbers = int64_values(table.column(_INPUT))
        for number in (int(n) for n in np.unique(numbers)):
            part = table.filter(array_of(numbers == number, pa.bool_())).drop_columns([_INPUT])
            settings, with_arrival = inputs[number]
            if not with_arrival:
                part = part.drop_columns(["arrival"])
            summaries = [{**s, _INPUT: number} for s in _summaries_of(part, settings)]
            if summaries:
                yield _summary_batch(summaries, _INPUTS_SUMMARY_ARROW)
    return run


def _summaries_of(table: pa.Table, settings: scan.ScanSettings,
                  initial: scan.ScanState | None = None) -> list[dict[str, Any]]:
    """The summaries of the scan units of one Spark partition's rows of one input."""
    # the arrival values come along only in partition order, where the partition is one unit
    arrivals = table.column("arrival") if "arrival" in table.schema.names else None
    return [{**attrs.asdict(summary := scan.summarize(rows, settings, unit)), **_arrival_facts(arrivals),
             **_start_facts(rows), **_first_unit(rows, summary, settings, initial)}
            for unit, rows in _units_of(table)]


def _first_unit(rows: scan.Rows, summary: scan.Summary, settings: scan.ScanSettings,
                initial: scan.ScanState | None) -> dict[str, Any]:
    """Unit 0 — the first of the input where it has rows — that its own CTIs find late is simulated
    from the input's first state here (``initial``), in array operations: its late events before
    the first CTI are not late, so its summary's decisions (``decide_late``) need a state it does not
    enter with, and the walk would simulate it in a round (a job) of its own. The walk takes this
    outcome where the unit's entering state is ``initial`` (docs/design-fewer-jobs.md, step 7)."""
    if initial is None or summary.unit != 0 or summary.locally_certain or settings.every is not None:
        return dict.fromkeys(_FIRST)
    good = rows.good()
    sim = scan.simulate(good.kinds, good.starts, good.ends, good.seqs, initial, settings)
    return dict(zip(_FIRST, (sim.state.cti, sim.state.count, sim.state.max_start, sim.state.baseline,
                             sim.dropped, sim.adjusted)))


def _summary_batch(summaries: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    return batch_of_rows([{**s, "tail_max": list(s["tail_max"])} for s in summaries], schema)


def _arrival_facts(arrivals: pa.ChunkedArray | None) -> dict[str, Any]:
    """Whether a unit's arrival values increase strictly in partition order (no null), and its
    first and last: what proves partition order to be arrival order; and a sketch of its arrival
    values (``base.sketches.sketch``, nulls left out), from which the arrival numbering takes its ranges
    where that proof fails; and its least and greatest arrival values (a streaming run says when an
    input's arrival went back across micro-batches: ``Ingress.arrival_range``)."""
    if arrivals is None:
        return {"arrival_increasing": None, "arrival_first": None, "arrival_last": None,
                "arrival_count": None, "arrival_sketch": None, "arrival_least": None, "arrival_greatest": None}
    null = is_null(arrivals)
    present = int64_values(arrivals)[~null]
    sketched = {"arrival_count": len(present), "arrival_sketch": sketch(present),
                "arrival_least": int(present.min()) if len(present) else None,
                "arrival_greatest": int(present.max()) if len(present) else None}
    if null.any():
        return {"arrival_increasing": False, "arrival_first": None, "arrival_last": None, **sketched}
    return {"arrival_increasing": bool(np.all(present[1:] > present[:-1])),
            "arrival_first": int(present[0]), "arrival_last": int(present[-1]), **sketched}


def _start_facts(rows: scan.Rows) -> dict[str, Any]:
    """A sketch of a unit's event starts (``base.sketches.sketch``: inserts and start edges; CTI rows and bad
    rows left out) with their count: the plan's range borders come from these
    (``streamql.spark.windows.snapshot.range_borders``), not from a quantile job of their own."""
    good = rows.good()
    starts = good.starts[(good.kinds == scan.INSERT) | (good.kinds == scan.START_EDGE)]
    return {"start_count": len(starts), "start_sketch": sketch(starts)}


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


def _simulate_units(states: Mapping[int, scan.ScanState], settings: scan.ScanSettings,
                    tables: frozenset[int] = frozenset()) -> Any:
    """The ``mapInArrow`` function that simulates the units of ``states``, each from its state:
    per unit, its state after (record 0), its decisions (1) and its CTI changes (2). The units of
    ``tables`` are simulated for every residue of the entering count instead, from their state's
    greatest start and under its CTI (``scan.simulate_residues``): per residue its row (record 0)
    and its decisions (1), no CTI changes; where the table is given up, from the state as the others."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for unit, rows in _units(batches):
            if unit not in states:
                continue
            good = rows.good()
            if unit in tables:
                table = scan.simulate_residues(good.kinds, good.starts, good.ends, good.seqs, states[unit].cti,
                                               states[unit].max_start, settings)
                if table is not None:
                    yield from _table_batches(unit, table)
                    continue
            sim = scan.simulate(good.kinds, good.starts, good.ends, good.seqs, states[unit], settings)
            yield batch_of_rows([{
                "record": 0, "seq": unit, "cti": sim.state.cti, "count": sim.state.count,
                "max_start": sim.state.max_start, "baseline": sim.state.baseline,
                "dropped": sim.dropped, "adjusted": sim.adjusted,
            }], _SIMULATION_ARROW)
            decided = np.array(sim.decisions, np.int64).reshape(-1, 3)
            changes = np.array(sim.cti_changes, np.int64).reshape(-1, 2)
            yield from _record_batches(1, decided[:, 0], decided[:, 1], decided[:, 2])
            yield from _record_batches(2, good.seqs[changes[:, 0]], None, changes[:, 1])
    return run


def _record_batches(record: int, seq: np.ndarray, action: np.ndarray | None, time: np.ndarray
                    ) -> Iterator[pa.RecordBatch]:
    """Simulation records of one kind from columns (the other columns null)."""
    for first in range(0, len(seq), 65536):
        part = slice(first, first + 65536)
        size = len(seq[part])
        columns = {"record": np.full(size, record, np.int32), "seq": seq[part],
                   "action": action[part] if action is not None else None, "time": time[part]}
        yield pa.RecordBatch.from_arrays(
            [array_of(values, kind) if (values := columns.get(name)) is not None else pa.nulls(size, kind)
             for name, kind in zip(_SIMULATION_ARROW.names, _SIMULATION_ARROW.types)], schema=_SIMULATION_ARROW)


def _table_batches(unit: int, table: scan.ResidueTable) -> Iterator[pa.RecordBatch]:
    """A unit's residue table as simulation records: one row per residue (record 0), then the
    decisions (record 1) with their residue and the time before the entering CTI is taken in."""
    n = len(table.added)
    rows: dict[str, np.ndarray] = {
        "record": np.zeros(n, np.int32), "seq": np.full(n, unit, np.int64), "cti": table.inner,
        "count": table.added, "max_start": table.after_max, "dropped": table.dropped,
        "adjusted": table.adjusted, "residue": np.arange(n, dtype=np.int32), "low": table.low}
    seq, action, time, residue = _shared_decisions(table, n)
    d = len(seq)
    decisions: dict[str, np.ndarray] = {
        "record": np.ones(d, np.int32), "seq": seq, "action": action, "time": time, "residue": residue}
    for columns, length in ((rows, n), (decisions, d)):
        for first in range(0, length, 65536):
            size = min(length, first + 65536) - first
            yield pa.RecordBatch.from_arrays(
                [array_of(columns[name][first:first + size], kind) if name in columns else pa.nulls(size, kind)
                 for name, kind in zip(_SIMULATION_ARROW.names, _SIMULATION_ARROW.types)], schema=_SIMULATION_ARROW)


#: the residue of a decision that every residue of a table makes alike (``_shared_decisions``)
EVERY_RESIDUE = -1


def _shared_decisions(table: scan.ResidueTable, residues: int) -> tuple[np.ndarray, ...]:
    """A table's decisions as (seq, action, time, residue) columns, a decision that all
    ``residues`` make alike (most: an event far behind the CTI is late whatever the count) once,
    with residue ``EVERY_RESIDUE``: the rows the walk filters and the events join stay as few as
    the late events, not ``every_events`` times as many."""
    seq, action, time = table.seq, table.action.astype(np.int32), table.time
    residue = table.residue.astype(np.int32)
    if residues <= 1 or not len(seq):
        return seq, action, time, residue
    order = np.lexsort((residue, time, action, seq))
    seq, action, time, residue = seq[order], action[order], time[order], residue[order]
    starts = np.flatnonzero(np.concatenate([[True], (seq[1:] != seq[:-1]) | (action[1:] != action[:-1])
                                            | (time[1:] != time[:-1])]))
    counts = np.diff(np.concatenate([starts, [len(seq)]]))
    shared = np.repeat(counts == residues, counts)  # a residue decides a row at most once
    first = np.zeros(len(seq), bool)
    first[starts] = True
    keep = ~shared | first
    residue = np.where(shared, EVERY_RESIDUE, residue).astype(np.int32)
    return seq[keep], action[keep], time[keep], residue[keep]


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
        columns.append(arrival_key(prepared).alias("arrival"))
    return prepared.select(*columns)


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
    #: the records of the rows counted in dropped, adjusted and bad_rows (``streamql.spark.ingress.late``;
    #: deferred: their plan is made only if asked for). None where the run cannot give them (a
    #: partitioned input one of whose partitions has none)
    late: Deferred | None = None
    reached: int | None = None
    #: sketches of the events' starts per scan unit (before late events are dropped or moved: a
    #: superset balances ranges as well)
    starts: Sketches | None = None
    #: the least and the greatest arrival value of the rows (an input with an arrival column whose
    #: summary pass ran in partition order, and had rows), from the scan's summary: no job of its own
    arrival_range: tuple[int, int] | None = None


@attrs.frozen(eq=False)
class Imported:
    """The scan of the input whose CTIs an input imports, and whether the two share one arrival
    clock (both have arrival columns): then its CTI steps join this input's arrival order.

    ``Imported(scans["readings"], one_clock=True)``: the CTIs of ``readings``, as rows of the scan.
    """

    ingress: Ingress
    one_clock: bool = False

    @property
    def cti_rows(self) -> DataFrame | None:
        """The imported CTIs as rows of the importing input's scan (only on one arrival clock)."""
        return self.ingress.cti_steps if self.one_clock else None


@attrs.frozen
class Wanted:
    """What the caller of ``run_ingress`` asks of one input's scan besides its events.

    ``Wanted(flush=True)``: a batch run's scan of an input whose CTI generation flushes;
    ``Wanted(match_edges=False, initial=state, first_position=n)``: a streaming micro-batch's.
    """

    #: the CTI goes to INFINITY after the last row (the generation's flush, on a run's last scan)
    flush: bool = False
    #: every change of the CTI as well (``Ingress.cti_steps``), for the inputs that import them on
    #: one arrival clock
    cti_steps: bool = False
    #: an EDGE input's end edges matched to their start edges here. A streaming run matches them
    #: itself, with the start edges it carries (False: ``events`` are then the scanned edge rows,
    #: with the scan's ``_sq_action``/``_sq_moved_to``, and the counts are the matching's to make)
    match_edges: bool = True
    #: the scan state before the first row (a streaming run: where the previous micro-batch ended)
    initial: scan.ScanState = scan.ScanState()
    #: the input's rows before these (a stream's earlier micro-batches), from which the late
    #: records number the rows of an input without an arrival column
    first_position: int = 0


def run_ingress(b: Binding, imported: Imported | None = None, wanted: Wanted = Wanted(),
                first: Summarized | None = None) -> Ingress:
    """Scans one input: summarises its scan units, simulates those that may hold late events,
    applies the decisions to the events and, for an EDGE input, matches its edges. ``imported``:
    the scan of the input whose CTIs this one imports; ``first``: its first summary pass, made
    with other inputs' (``first_passes``).

    ``run_ingress(b, wanted=Wanted(flush=True)).final_cti == INFINITY_MICROS``
    """
    s = _summarize(b, imported.cti_rows if imported is not None else None, first, wanted.initial)
    _check_bad_rows(s)
    walk, simulations, persisted = _walk_simulating(s, wanted.initial)
    decisions = _decisions(s, walk, simulations)
    ctis = _ctis(s, walk, imported, wanted)
    first_position = wanted.first_position
    events = _with_decisions(s.prepared, decisions)
    if b.node.shape is not Shape.EDGE:
        accepted = _accepted_events(s, events, decisions)
    elif wanted.match_edges:
        accepted = _matched_edges(s, _with_late_arrival(events, s.arrival(first_position)), ctis, persisted)
    else:
        accepted = _scanned_edges(s, _with_late_arrival(events, s.arrival(first_position)))
    decided = accepted.late

    def late_records() -> DataFrame:
        arrival = s.arrival(first_position)
        bad_records = late.bad_rows(s.prepared, arrival, s.payload)
        return bad_records if decided is None else bad_records.unionByName(decided(arrival), allowMissingColumns=True)

    return Ingress(
        events=accepted.events, final_cti=ctis.final_cti, finite_cti=ctis.finite,
        dropped=accepted.dropped, adjusted=accepted.adjusted, bad_rows=s.bad_rows + accepted.unmatched,
        cti_steps=_cti_steps(s, walk.states) if wanted.cti_steps else None, persisted=persisted,
        state=attrs.evolve(walk.state, cti=ctis.final), rows=s.rows, late=Deferred(late_records),
        reached=ctis.reached, starts=s.start_sketches, arrival_range=s.arrival_range,
    )


# --- summaries ---------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class Summarized:
    """An input's rows in arrival order (``prepare``) with one summary per scan unit, in unit order."""

    b: Binding
    prepared: DataFrame
    summaries: list[dict[str, Any]]
    settings: scan.ScanSettings
    imports_ctis: bool  # the imported CTIs are rows of this scan
    #: the least and greatest arrival values of the input's rows (``Ingress.arrival_range``)
    arrival_range: tuple[int, int] | None = None
    #: the rows numbered in arrival order already (``ordered_passes``): the scan takes them as they are
    ordered: bool = False

    @property
    def bad_rows(self) -> int:
        return sum(u["bad_rows"] for u in self.summaries)

    @property
    def unit_rows(self) -> list[tuple[int, int]]:
        """(unit, rows) of every unit (a summary's ``rows`` are its good ones)."""
        return [(u["unit"], u["rows"] + u["bad_rows"]) for u in self.summaries]

    @property
    def rows(self) -> int:
        return sum(rows for _, rows in self.unit_rows)

    @property
    def start_sketches(self) -> Sketches:
        """The sketches of the events' starts, one per unit (``_start_facts``)."""
        return tuple((u["start_count"], tuple(u["start_sketch"])) for u in self.summaries)

    @property
    def payload(self) -> list[str]:
        return [f.name for f in self.b.node.schema.fields]

    def compact(self, with_seq: bool) -> DataFrame:
        """The time columns the scan reads (``_compact``)."""
        return _compact(self.prepared, self.b, self.imports_ctis, with_seq=with_seq)

    def arrival(self, first_position: int) -> Column:
        """A row's arrival as its late record shows it (``late.arrival_of``)."""
        return late.arrival_of(self.prepared, self.b.arrival is not None, self.unit_rows, first_position)


def _summarize(b: Binding, cti_rows: DataFrame | None, first: Summarized | None = None,
               initial: scan.ScanState | None = None) -> Summarized:
    """The input's rows in arrival order, summarised. Most inputs arrive in the order they are
    stored: with an arrival column, the summary's pass in partition order also checks that, and
    where it holds the arrival numbering (a shuffle and a sort) is not needed. ``first``: that
    pass (in partition order) made already, with other inputs' (``first_passes``)."""
    settings = scan_settings(b.advance_time)
    sketches = None
    if first is not None and (b.arrival is None or first.ordered):
        return first
    if b.arrival is not None and cti_rows is None:
        stored = first if first is not None else _summarized(b, prepare(b, partition_order=True), settings,
                                                             imports_ctis=False, with_arrival=True, initial=initial)
        if _in_partition_order(stored.summaries):
            return stored
        # the numbering's ranges from the pass just made, not from a quantile job of their own
        sketches = [(u["arrival_count"], u["arrival_sketch"]) for u in stored.summaries]
    with phase("arrival order"):
        prepared = prepare(b, cti_rows, arrival_sketches=sketches)
    ordered = _summarized(b, prepared, settings, imports_ctis=cti_rows is not None, with_arrival=False,
                          initial=initial)
    # the arrival values' range is the first pass's (the second one reads no arrival values)
    return ordered if sketches is None else attrs.evolve(ordered, arrival_range=stored.arrival_range)


def _summarized(b: Binding, prepared: DataFrame, settings: scan.ScanSettings, imports_ctis: bool,
                with_arrival: bool, initial: scan.ScanState | None = None) -> Summarized:
    """``prepared`` with its summaries: one row per scan unit comes to the driver, which combines
    them (docs/architecture.md#a-batch-run)."""
    compact = _compact(prepared, b, imports_ctis, with_seq=False, with_arrival=with_arrival)
    with phase("scan summary"):
        # the session's first Python job: the worker check is folded into it (workers.collected)
        summaries = sorted(collected(compact, _summarize_units(settings, initial), _SUMMARY_SCHEMA, _SUMMARY_ARROW),
                           key=lambda r: r["unit"])
    return Summarized(b, prepared, summaries, settings, imports_ctis,
                       _arrival_range(summaries) if with_arrival else None)


def first_passes(bindings: Mapping[str, Binding], names: Sequence[str]) -> dict[str, Summarized]:
    """The first summary pass (in partition order) of each input of ``names`` that needs no other
    input's scan first — all but one that imports CTIs on one arrival clock — made for all of them
    in one Spark job over the union of their time columns, where there are several; ``run_ingress``
    takes its input's from here (``first``) instead of a job of its own. Empty for fewer than two:
    each input's own pass is the one job."""
    eligible = [name for name in names if not on_one_clock(bindings, name)]
    if len(eligible) < 2:
        return {}
    parts: list[DataFrame] = []
    inputs: dict[int, tuple[scan.ScanSettings, bool]] = {}
    prepared: dict[str, DataFrame] = {}
    for number, name in enumerate(eligible):
        b = bindings[name]
        prepared[name] = prepare(b, partition_order=True)
        compact = _compact(prepared[name], b, imports_ctis=False, with_seq=True, with_arrival=b.arrival is not None)
        parts.append(_as_input(compact, number))
        inputs[number] = (scan_settings(b.advance_time), b.arrival is not None)
    summaries = _summaries_by_input(parts, inputs)
    passes = {}
    for number, name in enumerate(eligible):
        own = sorted(summaries[number], key=lambda r: r["unit"])
        settings, with_arrival = inputs[number]
        passes[name] = Summarized(bindings[name], prepared[name], own, settings, False,
                                   _arrival_range(own) if with_arrival else None)
    return passes


def _summaries_by_input(parts: list[DataFrame], inputs: Mapping[int, tuple[scan.ScanSettings, bool]]
                        ) -> dict[int, list[dict[str, Any]]]:
    """The summaries of several inputs' tagged rows (``_as_input``), in one Spark job over their
    union, split back by input number."""
    together = parts[0]
    for part in parts[1:]:
        together = together.unionByName(part)
    with phase("scan summary"):
        rows = collected(together, _summarize_inputs(inputs), _INPUTS_SUMMARY_SCHEMA, _INPUTS_SUMMARY_ARROW)
    summaries: dict[int, list[dict[str, Any]]] = {number: [] for number in inputs}
    for summary in rows:
        summaries[summary.pop(_INPUT)].append(summary)
    return summaries


def ordered_passes(bindings: Mapping[str, Binding], first: Mapping[str, Summarized]) -> dict[str, Summarized]:
    """For the inputs whose first pass (``first_passes``) found their arrival values out of storage
    order, the rows numbered in arrival order and summarised again — in one Spark job for all of
    them, where there are several (a partitioned input's partitions, say), instead of one each;
    ``run_ingress`` takes an input's from here (``first``). Empty for fewer than two."""
    due = {name: s for name, s in first.items()
           if bindings[name].arrival is not None and not on_one_clock(bindings, name)
           and not _in_partition_order(s.summaries)}
    if len(due) < 2:
        return {}
    parts: list[DataFrame] = []
    inputs: dict[int, tuple[scan.ScanSettings, bool]] = {}
    prepared: dict[str, DataFrame] = {}
    for number, (name, stored) in enumerate(due.items()):
        b = bindings[name]
        sketches = [(u["arrival_count"], u["arrival_sketch"]) for u in stored.summaries]
        with phase("arrival order"):
            prepared[name] = prepare(b, arrival_sketches=sketches)
        parts.append(_as_input(_compact(prepared[name], b, imports_ctis=False, with_seq=True), number))
        inputs[number] = (stored.settings, False)
    summaries = _summaries_by_input(parts, inputs)
    return {name: Summarized(bindings[name], prepared[name], sorted(summaries[number], key=lambda r: r["unit"]),
                             stored.settings, False, stored.arrival_range, ordered=True)
            for number, (name, stored) in enumerate(due.items())}


def on_one_clock(bindings: Mapping[str, Binding], name: str) -> bool:
    """Whether input ``name`` imports CTIs on one arrival clock (both inputs have arrival columns):
    its numbering takes the imported CTI rows in, so its scan waits for the other input's."""
    b = bindings[name]
    imported = b.advance_time.import_ if b.advance_time is not None else None
    # a partitioned input has no one arrival clock: imports to and from it take the rule for inputs
    # without arrival columns (docs/partitioned-inputs.md)
    return (imported is not None and b.arrival is not None and b.partition is None
            and bindings[imported.from_input].arrival is not None and bindings[imported.from_input].partition is None)


def _as_input(compact: DataFrame, number: int) -> DataFrame:
    """``compact`` with the columns every input's rows have in ``first_passes``' union, and its
    number: ``kind`` an INSERT where the input has none (as ``arrival_scan.rows_of`` takes a
    missing column), ``end`` and ``arrival`` null (``_compact`` leaves ``end`` out where no
    decision reads it)."""
    names = set(compact.columns)
    return compact.select(
        F.lit(number).alias(_INPUT), F.col("start"),
        (F.col("kind") if "kind" in names else F.lit(scan.INSERT)).cast("int").alias("kind"),
        (F.col("end") if "end" in names else F.lit(None)).cast("long").alias("end"),
        F.col("seq"), (F.col("arrival") if "arrival" in names else F.lit(None)).cast("long").alias("arrival"))


def _arrival_range(summaries: list[dict[str, Any]]) -> tuple[int, int] | None:
    """The least and greatest arrival values of the units (``_arrival_facts``), None without any."""
    least = [u["arrival_least"] for u in summaries if u["arrival_least"] is not None]
    greatest = [u["arrival_greatest"] for u in summaries if u["arrival_greatest"] is not None]
    return (min(least), max(greatest)) if least else None


def _check_bad_rows(s: Summarized) -> None:
    """Refuses an input with bad rows (its first one) unless it is bound with ``bad_rows="drop"``."""
    if not s.bad_rows or s.b.bad_rows != "error":
        return
    first = min(u["first_bad"] for u in s.summaries if u["first_bad"] >= 0)
    bad = s.prepared.filter(F.col(SEQ) == first).select(BAD).first()
    raise _bad_row(s.b, s.prepared, first, bad[0] if bad else "unknown")


# --- the walk over the units, and their simulations ----------------------------------------------


@attrs.frozen
class _UnitOutcome:
    state: scan.ScanState  # the state after the unit
    dropped: int
    adjusted: int


#: the simulations made, by (unit, the state it was simulated from): the outcome and the unit's
#: decisions (``seq``, ``action``, ``time``)
_Simulations = dict[tuple[int, scan.ScanState], tuple[_UnitOutcome, DataFrame]]
#: the last simulation of each unit: the state it started from and its outcome
_Latest = dict[int, tuple[scan.ScanState, _UnitOutcome]]


@attrs.frozen(eq=False)
class _Table:
    """A unit simulated for every residue of the entering count (``scan.ResidueTable``), as its
    simulation job returned it: the greatest start and CTI floor it was simulated from, one row
    per residue (added count, the unit's own CTI, greatest start after, ``low``, dropped,
    adjusted) and the job's records, which hold its decisions."""

    unit: int
    floor: int
    max_start: int
    rows: dict[int, tuple[int, int, int, int, int, int]]
    simulated: DataFrame

    def covering(self, state: scan.ScanState, settings: scan.ScanSettings) -> tuple[_UnitOutcome, DataFrame] | None:
        """The exact outcome of the unit entered with ``state`` and its decisions, where the table
        covers ``state`` (its residue's row, the same greatest start, ``low < cti <= floor``)."""
        residue = self._residue(state, settings)
        row = self.rows.get(residue)
        if row is None or state.max_start != self.max_start:
            return None
        added, inner, after_max, low, dropped, adjusted = row
        if not low < state.cti <= self.floor:
            return None
        after = self.guess(state, settings)
        decisions = (self.simulated
                     .filter((F.col("record") == 1) & (F.shiftright(F.col("seq"), scan.PARTITION_BITS) == self.unit)
                             & F.col("residue").isin(residue, EVERY_RESIDUE))
                     .select("seq", "action", F.greatest(F.col("time"), F.lit(state.cti)).alias("time")))
        return _UnitOutcome(after, dropped, adjusted), decisions

    def guess(self, state: scan.ScanState, settings: scan.ScanSettings) -> scan.ScanState:
        """The state after the unit entered with ``state`` by its residue's row: exact where the
        table covers ``state``, else a guess (the row of a state it does not cover)."""
        added, inner, after_max, _, _, _ = self.rows[self._residue(state, settings)]
        return scan.ScanState(max(state.cti, inner), state.count + added, max(state.max_start, after_max), state.baseline)

    @staticmethod
    def _residue(state: scan.ScanState, settings: scan.ScanSettings) -> int:
        every = settings.every_events
        return state.count % every if every is not None else 0


@attrs.define
class _Walk:
    state: scan.ScanState  # after the last unit (exact when nothing is pending)
    states: dict[int, scan.ScanState]  # the state entering each unit
    simulated: list[tuple[int, scan.ScanState]]  # the simulations the exact walk used
    pending: dict[int, scan.ScanState]  # units to simulate next, from these states (the first: exact)
    #: the units with late events that their summaries decided (``arrival_scan.decide_late``), with
    #: their exact entering states and how many events they drop and move: their decisions are
    #: computed in the output's plan (``_decided_records``)
    decided: dict[int, tuple[scan.ScanState, int, int]] = attrs.Factory(dict)


def _walk_simulating(s: Summarized, initial: scan.ScanState) -> tuple[_Walk, _Simulations, list[DataFrame]]:
    """The exact walk over the units, the simulations it took, and the DataFrames they persisted.

    Walk the units with the exact state. A unit whose summary decides, or that was simulated
    from exactly this state, or whose residue table covers this state, passes it on exactly;
    the first other unit is simulated next from this state, and so, speculatively, is every
    later one from a guessed state: for every residue of its entering count where the settings
    allow (docs/design-fewer-jobs.md, step 5), so that a later walk finds it covered whatever
    the earlier units dropped; else from the guess alone (its outcome counts only if a later
    walk reaches it with that very state)."""
    simulations: _Simulations = {}
    latest: _Latest = {}
    tables: dict[int, _Table] = {}
    persisted: list[DataFrame] = []
    compact: DataFrame | None = None
    residues = scan.residues(s.settings)
    while True:
        walk = _walk(s.summaries, s.settings, simulations, latest, tables, initial)
        if not walk.pending:
            return walk, simulations, persisted
        if compact is None:
            # the simulated units' decisions are joined to the events under a union, where the
            # task's partition is not the input's: these rows carry their seq
            compact = s.compact(with_seq=True).persist(StorageLevel.MEMORY_AND_DISK)
            persisted.append(compact)
        exact = next(iter(walk.pending))
        tabled = frozenset(u for u in walk.pending if u != exact)
        if residues is None or len(tabled) * residues > MAX_TABLE_ROWS:
            tabled = frozenset()
        units = F.shiftright(F.col("seq"), scan.PARTITION_BITS).isin(list(walk.pending))
        simulated = compact.filter(units).mapInArrow(
            _simulate_units(walk.pending, s.settings, tabled), _SIMULATION_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(simulated)
        outcomes, rows = _outcomes(simulated)
        if exact not in {unit for unit, _ in outcomes}:
            # the unit has no rows in this job: the source's partitions are not those the summary
            # pass saw (a source whose partitions change from job to job); walking again would loop
            raise BindingError(f"input {s.b.node.name!r}: its DataFrame's partitions changed between two Spark jobs "
                               f"(scan unit {exact} of the summary pass has no rows now); streamql numbers rows by "
                               "partition and needs the same partitions in every job: checkpoint the DataFrame "
                               "(localCheckpoint) or read it from files or a table")
        for unit, outcome in outcomes:
            state = walk.pending[unit]
            decisions = simulated.filter((F.col("record") == 1)
                                         & (F.shiftright(F.col("seq"), scan.PARTITION_BITS) == unit))
            simulations[(unit, state)] = (outcome, decisions.select("seq", "action", "time"))
            latest[unit] = (state, outcome)
        for unit, by_unit in rows.items():
            state = walk.pending[unit]
            tables[unit] = _Table(unit, state.cti, state.max_start, by_unit, simulated)


def _outcomes(simulated: DataFrame) -> tuple[list[tuple[int, _UnitOutcome]],
                                             dict[int, dict[int, tuple[int, int, int, int, int, int]]]]:
    """The outcome of each unit simulated from one state, and the rows of each residue table
    (a Spark job: one row per unit, or per unit and residue)."""
    with phase("scan simulation"):
        records = simulated.filter(F.col("record") == 0).collect()
    outcomes = [(r["seq"], _UnitOutcome(scan.ScanState(r["cti"], r["count"], r["max_start"], r["baseline"]),
                                        r["dropped"], r["adjusted"]))
                for r in records if r["residue"] is None]
    tables: dict[int, dict[int, tuple[int, int, int, int, int, int]]] = {}
    for r in records:
        if r["residue"] is not None:
            tables.setdefault(r["seq"], {})[r["residue"]] = (r["count"], r["cti"], r["max_start"], r["low"],
                                                             r["dropped"], r["adjusted"])
    return outcomes, tables


def _walk(summaries: list[dict[str, Any]], settings: scan.ScanSettings, simulations: _Simulations,
          latest: _Latest, tables: Mapping[int, _Table], initial: scan.ScanState) -> _Walk:
    """One walk over the units from ``initial``: exact up to the first unit that neither its
    summary nor a simulation from its exact state nor its residue table decides; guessed from
    there (a table covering a guessed state gives the guess)."""
    walk = _Walk(initial, {}, [], {})
    state, exact = initial, True
    for s in summaries:
        unit = s["unit"]
        if exact:
            walk.states[unit] = state
        summary = scan.Summary(**{k: s[k] for k in _SUMMARY_FIELDS}, tail_max=tuple(s["tail_max"] or ()))
        after = scan.clean_transfer(summary, state, settings)
        if after is not None and exact and (summary.dropped or summary.adjusted):
            walk.decided[unit] = (state, summary.dropped, summary.adjusted)
        if after is None and s.get("first_cti") is not None and state == initial:
            # unit 0 simulated from the input's first state by the summary pass (``_first_unit``)
            after = scan.ScanState(s["first_cti"], s["first_count"], s["first_max_start"], s["first_baseline"])
            if exact and (s["first_dropped"] or s["first_adjusted"]):
                walk.decided[unit] = (state, s["first_dropped"], s["first_adjusted"])
        if after is None:
            done = simulations.get((unit, state))
            if done is None and unit in tables:
                done = tables[unit].covering(state, settings)
                if done is not None:
                    simulations[(unit, state)] = done
            if done is not None:
                after = done[0].state
                if exact:
                    walk.simulated.append((unit, state))
            else:
                walk.pending[unit] = state
                exact = False
                after = (tables[unit].guess(state, settings) if unit in tables
                         else _guessed_after(summary, state, settings, latest.get(unit)))
        state = after
    walk.state = state
    return walk


def _guessed_after(summary: scan.Summary, state: scan.ScanState, settings: scan.ScanSettings,
                   previous: tuple[scan.ScanState, _UnitOutcome] | None) -> scan.ScanState:
    """A guess of the state after a unit not yet simulated from ``state``: its last simulated
    outcome (``previous``, with the count moved as much as it moved then), else its summary's."""
    if previous is None:
        return scan.optimistic_transfer(summary, state, settings)
    before, outcome = previous
    return attrs.evolve(outcome.state, count=state.count + outcome.state.count - before.count)


@attrs.frozen(eq=False)
class _Decisions:
    """The late events of the units the exact walk simulated: how many were dropped and how many
    moved, and their decisions (``seq``, ``action``, ``time``), one DataFrame per unit."""

    dropped: int
    adjusted: int
    records: list[DataFrame]


def _decisions(s: Summarized, walk: _Walk, simulations: _Simulations) -> _Decisions:
    """The decisions of the simulations the exact walk used, and of the units their summaries
    decided (``_decided_records``)."""
    used = [simulations[(unit, state)] for unit, state in walk.simulated]
    records = [decisions for _, decisions in used]
    if walk.decided:
        records.append(_decided_records(s, {unit: state for unit, (state, _, _) in walk.decided.items()}))
    return _Decisions(dropped=sum(outcome.dropped for outcome, _ in used) + sum(d for _, d, _ in walk.decided.values()),
                      adjusted=(sum(outcome.adjusted for outcome, _ in used)
                                + sum(a for _, _, a in walk.decided.values())),
                      records=records)


def _decided_records(s: Summarized, states: Mapping[int, scan.ScanState]) -> DataFrame:
    """The decisions (``seq``, ``action``, ``time``) of the units whose summaries decided their late
    events, each simulated in array operations from its exact entering state (``arrival_scan.simulate``)
    — lazily: the output's plan computes them where it joins them to the events (no job of their own)."""
    units = F.shiftright(F.col("seq"), scan.PARTITION_BITS).isin(list(states))
    return (s.compact(with_seq=True).filter(units).mapInArrow(_simulate_units(states, s.settings), _SIMULATION_SCHEMA)
            .filter(F.col("record") == 1).select("seq", "action", "time"))


# --- the CTIs ----------------------------------------------------------------------------------


@attrs.frozen
class _Ctis:
    """An input's CTIs after its scan: the final one (``scan.NONE``: none), the greatest finite one,
    and the arrival at which the CTI reached INFINITY (``FLUSHED`` by the flush), or None."""

    final: int
    finite: int | None
    reached: int | None = None

    @property
    def final_cti(self) -> int | None:
        return None if self.final == scan.NONE else self.final


def _ctis(s: Summarized, walk: _Walk, imported: Imported | None, wanted: Wanted) -> _Ctis:
    """The input's CTIs: its own after the walk, then the flush's, then those it imports."""
    final = walk.state.cti
    ctis = _Ctis(final, None if final in (scan.NONE, INFINITY_MICROS) else final)
    if final == INFINITY_MICROS and wanted.initial.cti != INFINITY_MICROS:
        # a CTI row took the input to INFINITY: a union after it needs where, and the greatest
        # finite CTI before (docs/decisions.md, the horizon on Spark)
        with phase("scan infinity"):
            ctis = _Ctis(final, *_reached_infinity(s, walk, wanted.first_position))
    if wanted.flush:
        ctis = _Ctis(INFINITY_MICROS, ctis.finite, FLUSHED if ctis.reached is None else ctis.reached)
    return ctis if imported is None else _with_imported(ctis, imported)


def _with_imported(ctis: _Ctis, imported: Imported) -> _Ctis:
    """``ctis`` with the imported input's: the greater final and finite CTIs, the earlier arrival at
    INFINITY."""
    theirs = imported.ingress
    final, finite, reached = ctis.final, ctis.finite, ctis.reached
    if theirs.final_cti is not None:
        final = theirs.final_cti if final == scan.NONE else max(final, theirs.final_cti)
    # on one arrival clock the imported CTIs are rows of this scan already (and those after this
    # input's own INFINITY do not count)
    if theirs.finite_cti is not None and (imported.cti_rows is None or reached is None):
        finite = theirs.finite_cti if finite is None else max(finite, theirs.finite_cti)
    if theirs.reached is not None:
        reached = theirs.reached if reached is None else min(reached, theirs.reached)
    return _Ctis(final, finite, reached)


def _reached_infinity(s: Summarized, walk: _Walk, first_position: int) -> tuple[int | None, int]:
    """For an input whose CTI rows took its CTI to INFINITY: its greatest finite CTI before (the
    finite CTIs at the same arrival included: they come first) and the arrival of that row (as
    ``late.arrival_of`` numbers it). Only the scan unit where it happened is simulated again."""
    order = [u["unit"] for u in s.summaries]
    leaving = {unit: walk.states[after] for unit, after in zip(order, order[1:])}
    leaving[order[-1]] = walk.state
    unit = next(u for u in order if leaving[u].cti == INFINITY_MICROS)
    entering = walk.states[unit]
    changes = (s.compact(with_seq=True).filter(F.shiftright(F.col("seq"), scan.PARTITION_BITS) == unit)
               .mapInArrow(_simulate_units({unit: entering}, s.settings), _SIMULATION_SCHEMA)
               .filter(F.col("record") == 2))
    found = changes.agg(F.max(F.when(F.col("time") != F.lit(INFINITY_MICROS), F.col("time"))).alias("finite"),
                        F.min(F.when(F.col("time") == F.lit(INFINITY_MICROS), F.col("seq"))).alias("seq")).first()
    assert found is not None and found["seq"] is not None
    before = [c for c in (entering.cti, found["finite"]) if c is not None and c not in (scan.NONE, INFINITY_MICROS)]
    arrival = s.arrival(first_position).alias("arrival")
    row = s.prepared.filter(F.col(SEQ) == F.lit(found["seq"])).select(arrival).first()
    assert row is not None
    return (max(before) if before else None), int(row["arrival"])


def _cti_steps(s: Summarized, states: Mapping[int, scan.ScanState]) -> DataFrame:
    """Every change of this input's CTI, at the arrival of the row after which it happened."""
    simulated = s.compact(with_seq=True).mapInArrow(_simulate_units(dict(states), s.settings), _SIMULATION_SCHEMA)
    steps = simulated.filter(F.col("record") == 2).select(F.col("seq").alias("_sq_step_seq"),
                                                          F.col("time").alias("_sq_step_cti"))
    arrivals = s.prepared.select(SEQ, ARRIVAL)
    return (steps.join(arrivals, steps["_sq_step_seq"] == arrivals[SEQ])
            .select(F.col(ARRIVAL), F.col("_sq_step_cti").alias(START)))


# --- the decisions applied, for each input shape --------------------------------------------------


def _with_decisions(prepared: DataFrame, decisions: _Decisions) -> DataFrame:
    """The input's events (and edges) with the scan's decision for each: ``_sq_action`` and
    ``_sq_moved_to``, null where the event is accepted as it is."""
    events = prepared.filter(F.col(BAD).isNull() & (F.col(KIND) != scan.CTI))
    if not decisions.records:
        return _with_inlined(events, [])
    applied = decisions.records[0]
    for more in decisions.records[1:]:
        applied = applied.unionByName(more)
    if decisions.dropped + decisions.adjusted <= INLINE_DECISIONS:
        with phase("scan decisions"):
            decided = applied.collect()
        if len({r["seq"] for r in decided}) == len(decided):  # one decision a row, as the join below takes them
            return _with_inlined(events, decided)
    applied = applied.select(F.col("seq").alias("_sq_d_seq"), F.col("action").alias(ACTION),
                             F.col("time").alias(MOVED_TO))
    if decisions.dropped + decisions.adjusted <= BROADCAST_DECISIONS:
        # the usual case: few late events; joining them to every partition avoids moving the events
        applied = F.broadcast(applied)
    return events.join(applied, events[SEQ] == applied["_sq_d_seq"], "left")


def _with_inlined(events: DataFrame, decided: list[Row]) -> DataFrame:
    """``events`` with the decisions ``decided`` (rows of ``seq``, ``action``, ``time``) as literals: a
    row whose ``seq`` is among them (a hash set's lookup) takes its action and time from two literal
    maps, which the optimizer folds into one value each; every other row takes nulls."""
    if not decided:
        return events.withColumns({ACTION: F.lit(None).cast("int"), MOVED_TO: F.lit(None).cast("long")})
    seq = F.col(SEQ)
    actions = F.create_map(*[c for r in decided for c in (F.lit(r["seq"]).cast("long"), F.lit(r["action"]).cast("int"))])
    times = F.create_map(*[c for r in decided for c in (F.lit(r["seq"]).cast("long"), F.lit(r["time"]).cast("long"))])
    known = seq.isin([r["seq"] for r in decided])
    return events.withColumns({ACTION: F.when(known, F.element_at(actions, seq)),
                               MOVED_TO: F.when(known, F.element_at(times, seq))})


@attrs.frozen(eq=False)
class _Accepted:
    """What an input's events come to, for its shape: ``Ingress.events``, the late events dropped
    and moved, the end edges found unmatched (bad rows) and how to make the late records of those
    decided from a row's arrival as its record shows it (``Summarized.arrival``; None for none)."""

    events: DataFrame
    dropped: int = 0
    adjusted: int = 0
    unmatched: int = 0
    late: Callable[[Column], DataFrame] | None = None


def _accepted_events(s: Summarized, decided: DataFrame, decisions: _Decisions) -> _Accepted:
    """An input of INSERTs: the late events dropped, or their starts moved."""
    def records(arrival: Column) -> DataFrame:
        return late.decided_rows(decided, arrival, s.payload)

    kept = decided.filter(F.col(ACTION).isNull() | (F.col(ACTION) != scan.DROP))
    start = F.when(F.col(ACTION) == scan.ADJUST_START, F.col(MOVED_TO)).otherwise(F.col(START))
    return _Accepted(kept.select(start.alias(START), END, F.lit(True).alias(CLOSED), F.lit(True).alias(HEAD),
                                 *s.payload),
                     decisions.dropped, decisions.adjusted, late=records if decisions.records else None)


def _with_late_arrival(edges: DataFrame, arrival: Column) -> DataFrame:
    """An edge's late record is made when its event is decided: its arrival goes with it."""
    return edges.withColumn(LATE_ARRIVAL, arrival)


def _scanned_edges(s: Summarized, edges: DataFrame) -> _Accepted:
    """An EDGE input whose caller matches the edges (a streaming step): the scanned edge rows, with
    the scan's decisions; the step counts and records the events its matching decides."""
    return _Accepted(edges.select(KIND, SEQ, START, END, ACTION, MOVED_TO, *s.payload, LATE_ARRIVAL))


def _matched_edges(s: Summarized, edges: DataFrame, ctis: _Ctis, persisted: list[DataFrame]) -> _Accepted:
    """An EDGE input: the end edges matched to their start edges (``match_end_edges``); refuses an
    unmatched end edge unless bound with ``bad_rows="drop"``. The scan's counts include end edges
    that turn out unmatched: the matching counts instead."""
    with phase("edge matching"):
        matched = match_end_edges(edges, s.payload, ctis.final_cti)
    persisted.append(matched.persisted)
    if matched.unmatched and s.b.bad_rows == "error":
        first = s.prepared.filter(F.col(SEQ) == matched.first_unmatched).select(START, END).first()
        assert first is not None
        for df in persisted:
            df.unpersist()
        raise _bad_row(s.b, s.prepared, matched.first_unmatched,
                       f"end edge at {from_micros(first[1])} has no open start edge at "
                       f"{from_micros(first[0])} with its payload")
    # the edges carry their arrival (``_with_late_arrival``) into the matching's rows
    return _Accepted(matched.events, matched.dropped, matched.adjusted, matched.unmatched,
                     lambda _: late.edge_rows(matched.persisted, s.payload))


def _bad_row(b: Binding, prepared: DataFrame, seq: int, reason: str) -> BadInputError:
    """The error for the bad row numbered ``seq``, showing the row as the DataFrame holds it
    (without an arrival column; with one, its arrival value and payload)."""
    if b.arrival is None:
        row = with_row_number(b.source).filter(F.col(SEQ) == seq).select(*b.source.columns).first()
    else:
        fields = [f.name for f in b.node.schema.fields]
        row = prepared.filter(F.col(SEQ) == seq).select(F.col(ARRIVAL).alias(b.arrival), *fields).first()
    shown = f", row {row.asDict()}" if row is not None else ""
    where = f"input {b.name!r}" if b.part is None else \
        f"input {b.name!r}, {'undeclared partition' if b.part_value is None else f'partition {b.part_value!r}'}"
    return BadInputError(f"{where}: bad row ({reason}{shown}); "
                         "bind with bad_rows='drop' to drop and count such rows")


__all__ = ["Imported", "Ingress", "Summarized", "Wanted", "first_passes", "on_one_clock", "ordered_passes",
           "run_ingress"]
