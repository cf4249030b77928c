"""The scan of one input on Spark (``run_ingress``): the rows ``prepare`` numbered in arrival order
go through the arrival-order scan of ``streamql.spark.ingress.arrival_scan`` — one summary per
scan unit from Python workers, the combine on the driver, a simulation of the units that may hold
late events — and its decisions (drops, moved starts and ends) are applied to the events.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

import attrs
import numpy as np
import pyarrow as pa
from pyspark import StorageLevel, TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.advance_time import AdvanceTimePolicy
from streamql.errors import BadInputError
from streamql.events import Shape
from streamql.query.joins import FLUSHED
from streamql.spark.base.columns import (ACTION, ARRIVAL, BAD, CLOSED, END, HEAD, KIND, LATE_ARRIVAL, MOVED_TO, SEQ,
                                         START)
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.ingress import late
from streamql.spark.ingress.binding import Binding, arrival_key, prepare, scan_settings, with_row_number
from streamql.spark.ingress.edge_matching import match_end_edges
from streamql.spark.runtime.phases import phase
from streamql.time import INFINITY_MICROS, from_micros

#: up to this many decisions (late events dropped or moved) are broadcast to the events
BROADCAST_DECISIONS = 2_000_000


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
    units = rows.seqs >> scan.PARTITION_BITS
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
    #: the records of the rows counted in dropped, adjusted and bad_rows (``streamql.spark.ingress.late``;
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
        # one summary row per scan unit comes to the driver, which combines them (docs/architecture.md#a-batch-run)
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
        units = F.shiftright(F.col("seq"), scan.PARTITION_BITS).isin(list(walk.pending))
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
                                            & (F.shiftright(F.col("seq"), scan.PARTITION_BITS) == key[0]))
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
    changes = (compact.filter(F.shiftright(F.col("seq"), scan.PARTITION_BITS) == unit)
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
        row = with_row_number(b.source).filter(F.col(SEQ) == seq).select(*b.source.columns).first()
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


__all__ = ["Ingress", "run_ingress"]
