"""Incremental evaluation: one micro-batch of a streaming run (docs/architecture.md#a-live-step, docs/streaming.md).

A streaming run is a sequence of steps. Each step takes what the previous one carried — per
input the arrival-scan state (current CTI, event count, greatest start, ``every=`` baseline),
the accepted events still needed and, for an EDGE input, the start edges still open; per output
shape the released events that a later step could compute again — plus the micro-batch's new
rows, and:

1. scans the new rows from the carried scan state (CTI generation continues exactly);
2. evaluates the compiled plan over the carried events and the newly accepted ones, with the
   inputs' current CTIs;
3. releases what the release rule releases now, minus what was released before;
4. computes the output floor (below it every output event was released and stays so) and from
   it the inputs' retention floors (``streamql.spark.streaming.retention``), and carries forward only the
   events at or after them — so the state is bounded by the CTIs, not by the stream's length.

A step is a function of the carried state and the new rows, so a step repeated after a crash
releases the same events: the runner (``streamql.running``) writes each step's releases and
carried state under the micro-batch's id, and a repeated step finds them there.
"""
from __future__ import annotations

import functools
from typing import Callable, Mapping

import attrs
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from streamql.errors import BadInputError, BindingError
from streamql.events import Shape
from streamql.query.esper import LengthBatch
from streamql.query.nodes import Input, Node, inputs_of
from streamql.query.windows import HoppingWindow, WindowAggregate
from streamql.spark.base.columns import CLOSED, END, HEAD, LATE_ARRIVAL, SEQ, START
from streamql.spark.ingress.edge_matching import MatchedEdges, match_end_edges
from streamql.spark.ingress.binding import UNDECLARED, Binding
from streamql.spark.ingress.partitioned import part_rows, parts_of, with_parts
from streamql.spark.ingress.scan import Ingress
from streamql.spark.base.deferred import Deferred
from streamql.spark.ingress.late import EdgeCauses, WentBack, edge_rows, with_went_back
from streamql.spark.operators.flow import Flow, compile_node, compiled_as, compiled_once, input_flow
from streamql.spark.operators.release import release
from streamql.spark.windows.esper import batch_offsets
from streamql.spark.streaming.retention import CountedBatch, Floor, counted_batches, floors, offsets_after
from streamql.spark.windows.hopping import WINDOW, formed_windows, window_members
from streamql.spark.runtime.phases import phase
from streamql.spark.streaming.state import Carried, InputState, RunState, observed_metrics
from streamql.spark.streaming.partials import PARTIALS, incremental_window, merge_columns, result_columns, \
    row_partials
from streamql.spark.operators.flow import shifted
from streamql.spark.ingress.imports import first_passes, scan_input, scan_order
from streamql.spark.windows.grouping import window_input, window_output
from streamql.spark.windows.snapshot import snapshot_windows
from streamql.spark.streaming.frontier import FRONTIER, carried_frontier, frontier_window, released_from_frontier
from streamql.time import INFINITY_MICROS

#: the micro-batch a carried edge row arrived in (arrival order is (batch, seq))
BATCH = "_sq_batch"
#: of an edge row whose arrival went back: the greatest arrival value of the micro-batches before
#: the one it arrived in (``ArrivalWentBack``), else null; carried with an open start edge, whose
#: late record may be made in a later micro-batch
WENT_BACK = "_sq_went_back"



@attrs.frozen
class Plan:
    """A query ready to run incrementally: its bindings (sources are the streaming or static
    DataFrames it reads) and the output shapes it releases (one released set each)."""

    query: Node
    bindings: Mapping[str, Binding] = attrs.field(eq=False)
    shapes: tuple[Shape, ...]
    #: inputs bound to static DataFrames, read whole in the first step
    static: frozenset[str] = frozenset()
    #: internal inputs scanned and counted but not read by the query: a partitioned input's rows
    #: whose partition value is not declared (bad rows; ``planned``)
    unread: frozenset[str] = frozenset()

    @property
    def scanned(self) -> dict[str, Input]:
        """The inputs each step scans: those the query reads and the ``unread`` ones."""
        return {**inputs_of(self.query), **{name: self.bindings[name].node for name in sorted(self.unread)}}

    @property
    def payload(self) -> list[str]:
        return [f.name for f in self.query.schema.fields]

    @property
    def signature(self) -> str:
        """What a checkpoint must match to continue a run: the inputs (name, payload type, shape),
        the output payload type and the released shapes."""
        read = inputs_of(self.query)
        # a partitioned input's internal inputs by the user's name and the partition's number
        inputs = ", ".join(f"{n}: {read[n].schema.name}/{read[n].shape.name}".replace("\x00", "#")
                           for n in sorted(read))
        return f"{inputs} -> {self.query.schema.name}({', '.join(self.payload)}) as " + \
            "+".join(s.name for s in self.shapes)


@attrs.frozen
class ArrivalWentBack:
    """An input whose arrival went back across micro-batches: its rows of this micro-batch include
    arrival values before the greatest of its earlier micro-batches. ``least``: the least arrival
    value of this micro-batch's rows; ``greatest_before``: the greatest of the earlier
    micro-batches' (both as ``sq.Late.arrival`` shows them: microseconds for a timestamp column).
    Events among those rows can be late by the CTIs the earlier micro-batches committed (a file
    source takes files by modification time: docs/streaming.md, "Why events of a stream are late")."""

    least: int
    greatest_before: int


#: the aggregates of a step's output that its carried state needs: the least start of an output
#: event not yet stable (``unstable``) and of any output event a later step computes again
#: (``reaching``); ``None`` where there is no such event
Least = tuple[int | None, int | None]


def _least() -> list[Column]:
    """``Least`` as aggregates of the output events."""
    return [F.min(F.when(~(F.col(CLOSED) & F.col(HEAD)), F.col(START))).alias("unstable"),
            F.min(START).alias("reaching")]


@attrs.frozen
class Step:
    """One step's outcome: per output shape what it releases now (``released_now``, lazy), and
    how to make the state it carries (``make_carried``, from the counts of what was released and
    the ``Least`` of its output).

    A runner writes the releases with ``observed()`` (each counted as it is written, the output's
    least starts collected in the first write) and then calls ``carry(observed)``: no job of its
    own. ``carried`` computes the counts and least starts in jobs of their own instead."""

    released_now: Mapping[Shape, DataFrame] = attrs.field(eq=False)
    input_rows: Mapping[str, int]
    persisted: list[DataFrame] = attrs.field(eq=False)
    #: the output CTI after the step
    out_cti: int | None
    #: the output events that a step releases from (its ``Least`` is taken over them)
    candidates: DataFrame = attrs.field(eq=False)
    #: what a shape releases now from the candidates
    #: what a shape releases of the candidates (``_released_again``, ``_released_once``): the
    #: shape, the candidates, the same with the step's observation (or None)
    releasing: Callable[[Shape, DataFrame, DataFrame | None], DataFrame] = attrs.field(eq=False)
    make_carried: Callable[[Least, Mapping[Shape, int]], Carried] = attrs.field(eq=False)
    #: per input the query reads, the late records of this step (``streamql.spark.ingress.late``): of the
    #: micro-batch's rows, and of the edge events the step decides; their plans are made only for a
    #: run with a late sink (``Deferred``)
    late: Mapping[str, Deferred] = attrs.field(eq=False, factory=dict)
    #: the inputs whose arrival went back in this micro-batch (from the scan's summary: no job)
    arrival_went_back: Mapping[str, ArrivalWentBack] = attrs.field(factory=dict)

    def observed(self) -> Observed:
        """The releases, each observed as it is written: write every one of them (the first
        shape's first), then ``carry(observed)``."""
        least = Observation()
        counts = {shape: Observation() for shape in self.released_now}
        frames: dict[Shape, DataFrame] = {}
        for number, (shape, df) in enumerate(self.released_now.items()):
            if number == 0:  # the first write computes the output: the least starts come with it
                df = self.releasing(shape, self.candidates, self.candidates.observe(least, *_least()))
            frames[shape] = df.observe(counts[shape], F.count(F.lit(1)).alias("rows"))
        return Observed(frames, least, counts)

    def carry(self, observed: Observed) -> Carried:
        """The carried state, from what writing ``observed.frames`` observed (the least starts in a
        job of their own if the write did not compute the output: a plan Spark proved empty)."""
        least = observed_metrics(observed.least)
        if least is None and self.out_cti is None:
            least = {"unstable": None, "reaching": None}  # no output CTI: the floors stay where they are
        elif least is None:
            with phase("least starts"):
                row = self.candidates.agg(*_least()).first()
            least = {"unstable": None, "reaching": None} if row is None else row.asDict()
        return self.make_carried((least["unstable"], least["reaching"]),
                                 {shape: observed.rows(shape) for shape in observed.counts})

    @property
    def carried(self) -> Carried:
        """The carried state, computed in jobs of its own (one per shape and one for the least starts)."""
        counts = {shape: df.count() for shape, df in self.released_now.items()}
        least = self.candidates.agg(*_least()).first()
        return self.make_carried((None, None) if least is None else (least[0], least[1]), counts)

    def unpersist(self) -> None:
        for df in self.persisted:
            df.unpersist()


@attrs.frozen
class Observed:
    """A step's releases observed as they are written (``Step.observed``)."""

    frames: Mapping[Shape, DataFrame] = attrs.field(eq=False)
    least: Observation = attrs.field(eq=False)
    counts: Mapping[Shape, Observation] = attrs.field(eq=False)

    def rows(self, shape: Shape) -> int:
        """How many rows ``shape``'s frame released (once it was written; none from a plan Spark
        proved empty)."""
        metrics = observed_metrics(self.counts[shape])
        return 0 if metrics is None else int(metrics["rows"])


def planned(query: Node, bindings: Mapping[str, Binding], shapes: tuple[Shape, ...],
            static: frozenset[str] = frozenset()) -> Plan:
    """The ``Plan`` of ``query`` over ``bindings``: a partitioned input is read as the ``union`` of
    one internal input per declared partition (``streamql.spark.ingress.partitioned``), each with
    its own scan state, CTIs, edges and retention, and the rows of undeclared partitions are
    scanned as an unread input of their own (bad rows)."""
    read = inputs_of(query)
    partitioned = {name for name in read if bindings[name].partitioned}
    if not partitioned:
        return Plan(query, bindings, shapes, static)
    for b in bindings.values():
        imported = b.advance_time.import_ if b.advance_time is not None else None
        if imported is not None and (b.partitioned or bindings[imported.from_input].partitioned):
            raise BindingError(f"input {b.name!r} imports the CTIs of {imported.from_input!r}: a running query "
                               "does not yet import CTIs to or from a partitioned input (a batch run does)")
    expanded: dict[str, Binding] = {name: b for name, b in bindings.items() if name not in partitioned}
    unread = set()
    for name in partitioned:
        for key, part in parts_of(bindings[name]).items():
            expanded[key] = part
            if part.part == UNDECLARED:
                unread.add(key)
    static_keys = {key for key, part in expanded.items() if part.name in static}
    return Plan(with_parts(query, bindings), expanded, shapes, frozenset(static_keys), frozenset(unread))


def empty_carried(plan: Plan) -> Carried:
    """The state before the first step: nothing kept, nothing released."""
    return Carried(RunState(inputs={name: InputState() for name in plan.scanned}), {}, {}, {})


def _match_edges(carried: DataFrame | None, new: DataFrame, payload: list[str], batch: int,
                 cti: int | None, final: bool, went_back: ArrivalWentBack | None = None) -> MatchedEdges:
    """``streamql.spark.ingress.edge_matching`` across micro-batches: the carried start edges arrived before
    the new rows, and ``cti`` is the input's CTI after the micro-batch. An event is counted
    (dropped, moved) in the step that decides it: when its end edge comes, or in the run's final
    step (``final``) if it is still open then — not when the CTI reaches INFINITY: an end edge may
    still come after that, and under ADJUST its record replaces the start edge's; an end edge that
    DROP ignores counts in the micro-batch it arrives in. ``went_back``: the input's arrival went
    back in this micro-batch (its rows before the greatest earlier arrival get ``WENT_BACK``)."""
    before = F.lit(None) if went_back is None else F.when(
        F.col(LATE_ARRIVAL) < F.lit(went_back.greatest_before), F.lit(went_back.greatest_before))
    rows = new.withColumns({BATCH: F.lit(batch).cast("long"), WENT_BACK: before.cast("long")})
    if carried is not None:
        # (a state written before late records were kept has no arrival column: null there)
        rows = carried.unionByName(rows, allowMissingColumns=True)
    return match_end_edges(rows, payload, cti, order=(BATCH, SEQ), new=F.col(BATCH) == batch,
                           count_open=final)


def scan_new_rows(spark: SparkSession, bindings: Mapping[str, Binding], static: frozenset[str],
                  inputs: Mapping[str, InputState], new: Mapping[str, DataFrame], final: bool) -> dict[str, Ingress]:
    """Scans the new rows (``new``; a static input's whole DataFrame until it was read once) of the
    inputs in ``inputs``, each from the scan state it carries. Edges are not matched yet."""
    sources: dict[str, Binding] = {}
    for name in inputs:
        b = bindings[name]
        rows = new.get(name)
        if b.part is not None and b.name in new:  # a partitioned input's partition: its rows
            rows = part_rows(b, new[b.name])
        if name in static and not inputs[name].fed:
            rows = b.source
        if rows is None:
            rows = spark.createDataFrame([], b.source.schema)
        sources[name] = attrs.evolve(b, source=rows)
    ingresses: dict[str, Ingress] = {}
    order = scan_order(sources, set(inputs))
    first = first_passes(sources, order)  # the inputs' first summary passes in one job
    for name in order:
        ingresses[name] = scan_input(sources, name, ingresses, initial=inputs[name].scan, match_edges=False,
                                     final=final, first_position=inputs[name].rows, first=first.get(name))
    return ingresses


def step(spark: SparkSession, plan: Plan, carried: Carried, new: Mapping[str, DataFrame], batch: int,
         final: bool = False, scanned: Mapping[str, Ingress] | None = None) -> Step:
    """Runs micro-batch ``batch`` (its rows per input in ``new``; an input missing from it had no
    rows) from ``carried``, and returns what the step produces: its releases, how to make the
    state it carries, and its late records. ``final``: the run stops here, and inputs with
    ``flush=True`` get their final INFINITY CTI. ``scanned``: the new rows scanned already
    (``scan_new_rows``, once for several queries: ``Binder.start_many``); their cached frames are
    then the caller's to release.

    >>> outcome = step(spark, plan, empty_carried(plan), {"readings": rows}, 0)  # doctest: +SKIP
    >>> outcome.released_now[Shape.INTERVAL].show(); carried = outcome.carried   # doctest: +SKIP
    """
    read = inputs_of(plan.query)
    persisted: list[DataFrame] = []
    if scanned is None:
        with phase("scan"):
            ingresses = scan_new_rows(spark, plan.bindings, plan.static,
                                      {name: carried.state.inputs.get(name, InputState()) for name in plan.scanned},
                                      new, final)
        persisted += [df for ingress in ingresses.values() for df in ingress.persisted]
    else:
        ingresses = dict(scanned)
    inputs = {name: _input_step(plan, name, node, ingresses[name], carried, batch, final)
              for name, node in plan.scanned.items()}
    persisted += [df for i in inputs.values() for df in i.persisted]
    flows = {name: i.flow for name, i in inputs.items() if name in read}
    window = incremental_window(plan.query)
    if window is not None:
        return _window_step(plan, window, carried, batch, inputs, flows, persisted)
    snapshot = frontier_window(plan.query)
    # a run that started before the frontier was carried keeps carrying its events
    if snapshot is not None and not carried.events:
        return _frontier_step(plan, snapshot, carried, batch, inputs, flows, persisted)
    return _plan_step(plan, carried, batch, inputs, flows, persisted)


# --- the inputs of a step -------------------------------------------------------------------------

@attrs.frozen
class _Decided:
    """What a step decides of one input's new rows: the events it accepts now (``events``; of an
    EDGE input, those whose end edge came), the input's late records and counts in the step and,
    for an EDGE input, the events still open, the start edges still pending and the matching's
    cached frame."""

    events: DataFrame = attrs.field(eq=False)
    late: Deferred = attrs.field(eq=False)
    dropped: int
    adjusted: int
    bad_rows: int
    still_open: DataFrame | None = attrs.field(default=None, eq=False)
    pending: DataFrame | None = attrs.field(default=None, eq=False)
    persisted: tuple[DataFrame, ...] = attrs.field(default=(), eq=False)


def _decided(plan: Plan, name: str, node: Input, ingress: Ingress, carried: Carried, batch: int,
             final: bool, went_back: ArrivalWentBack | None) -> _Decided:
    """Input ``name``'s new rows as ``ingress`` scanned them; an EDGE input's matched with the start
    edges it carried (``_match_edges``), which fails on an end edge without a start edge unless the
    input drops bad rows. ``went_back``: the input's arrival went back in this micro-batch, which
    the late records of its rows arriving before the earlier micro-batches' greatest tell."""
    assert ingress.late is not None
    records = ingress.late
    cause = None if went_back is None else WentBack(batch, went_back.greatest_before)
    if node.shape is not Shape.EDGE:
        late = records if cause is None else records.then(lambda frame: with_went_back(frame, cause))
        return _Decided(ingress.events, late, ingress.dropped, ingress.adjusted, ingress.bad_rows)
    payload = [f.name for f in node.schema.fields]
    cti = ingress.final_cti
    matched = _match_edges(carried.pending.get(name), ingress.events, payload, batch, cti, final, went_back)
    if matched.unmatched and plan.bindings[name].bad_rows == "error":
        b = plan.bindings[name]
        where = f"input {b.name!r}" + ("" if b.part_value is None else f", partition {b.part_value!r}")
        raise BadInputError(f"{where}: an end edge (micro-batch {batch}, row {matched.first_unmatched}) "
                            "has no open start edge with its start and payload; bind with bad_rows='drop' "
                            "to drop and count such rows")
    # the scan's late records of the undeclared rows of a partitioned input carry their partition
    # value, the matching's records none (``late.with_partition`` gives them their partition's)
    late = records.then(lambda frame: frame.unionByName(
        edge_rows(matched.persisted, payload, F.col(BATCH) == batch, count_open=final,
                  causes=EdgeCauses(BATCH, WENT_BACK, cause)), allowMissingColumns=True))
    return _Decided(matched.decided, late, matched.dropped, matched.adjusted, ingress.bad_rows + matched.unmatched,
                    matched.still_open, matched.pending, (matched.persisted,))


@attrs.frozen
class _InputStep:
    """One input the query reads, in a step: what the step decided of its new rows (``decided``),
    the events accepted so far (``accepted``: the carried ones and those decided now), the flow
    the plan reads (those and the EDGE events still open, at the input's CTIs), what the run
    carries of it (``state``) and how many rows the micro-batch had (``rows``)."""

    decided: _Decided
    accepted: DataFrame = attrs.field(eq=False)
    flow: Flow = attrs.field(eq=False)
    state: InputState
    rows: int
    went_back: ArrivalWentBack | None = None

    @property
    def persisted(self) -> list[DataFrame]:
        """What the step cached for the input."""
        return [*self.decided.persisted, self.accepted]


def _input_step(plan: Plan, name: str, node: Input, ingress: Ingress, carried: Carried, batch: int,
                final: bool) -> _InputStep:
    """Input ``name`` in the step of micro-batch ``batch``: its new rows decided (``_decided``)
    after the events it carried, with its CTIs after the micro-batch."""
    before = carried.state.inputs.get(name, InputState())
    went_back, arrival_max = _arrival_went_back(before.arrival_max, ingress.arrival_range)
    decided = _decided(plan, name, node, ingress, carried, batch, final, went_back)
    cti = ingress.final_cti
    accepted = decided.events
    kept = carried.events.get(name)
    if kept is not None:
        if cti == INFINITY_MICROS:  # nothing can end an open event any more
            kept = kept.withColumn(CLOSED, F.lit(True))
        accepted = kept.unionByName(accepted)
    # the plan, the retention floors and the state all read these events: compute them once
    accepted = accepted.persist(StorageLevel.MEMORY_AND_DISK)
    events = accepted if decided.still_open is None else accepted.unionByName(decided.still_open)
    finite = max((c for c in (before.finite_cti, ingress.finite_cti) if c is not None), default=None)
    reached = before.reached if before.reached is not None else ingress.reached
    state = attrs.evolve(before, scan=ingress.state, finite_cti=finite, reached=reached,
                         fed=before.fed or name in plan.static, rows=before.rows + ingress.rows,
                         arrival_max=arrival_max)
    return _InputStep(decided, accepted, input_flow(events, cti, finite, reached), state, ingress.rows, went_back)


def _arrival_went_back(greatest_before: int | None, arrival_range: tuple[int, int] | None
                       ) -> tuple[ArrivalWentBack | None, int | None]:
    """Whether an input's micro-batch whose rows' arrival values span ``arrival_range`` went back
    before ``greatest_before`` (the greatest of its earlier micro-batches), and the greatest
    arrival value after it. Equal arrival values do not go back."""
    if arrival_range is None:
        return None, greatest_before
    least, greatest = arrival_range
    if greatest_before is None:
        return None, greatest
    went_back = ArrivalWentBack(least, greatest_before) if least < greatest_before else None
    return went_back, max(greatest, greatest_before)


def _pending(inputs: Mapping[str, _InputStep]) -> dict[str, DataFrame]:
    """The start edges the EDGE inputs carry on."""
    return {name: i.decided.pending for name, i in inputs.items() if i.decided.pending is not None}


def _run_state(plan: Plan, before: RunState, batch: int, inputs: Mapping[str, _InputStep],
               states: Mapping[str, InputState], out_cti: int | None, out_floor: Floor, keep_floor: Floor,
               counts: Mapping[Shape, int]) -> RunState:
    """The run's state after the step of micro-batch ``batch``: ``before``'s counts plus the
    inputs' in the step (``inputs``), and the events the first output shape released (``counts``)."""
    return RunState(
        batch=batch, inputs=states, out_floor=out_floor, keep_floor=keep_floor, out_cti=out_cti,
        released_below=_released_below(before.released_below, out_cti),
        dropped=before.dropped + sum(i.decided.dropped for i in inputs.values()),
        adjusted=before.adjusted + sum(i.decided.adjusted for i in inputs.values()),
        bad_rows=before.bad_rows + sum(i.decided.bad_rows for i in inputs.values()),
        released=before.released + (counts[plan.shapes[0]] if plan.shapes else 0),
        flushed=before.flushed or out_cti == INFINITY_MICROS, signature=plan.signature)


def _released_below(before: int | None, out_cti: int | None) -> int | None:
    """``RunState.released_below`` after a step whose output CTI is ``out_cti``: the release rule
    releases only what starts before the output CTI."""
    if out_cti is None:
        return before
    return out_cti if before is None else max(before, out_cti)


def _outcome(inputs: Mapping[str, _InputStep], released_now: Mapping[Shape, DataFrame], persisted: list[DataFrame],
             out_cti: int | None, candidates: DataFrame,
             releasing: Callable[[Shape, DataFrame, DataFrame | None], DataFrame],
             make_carried: Callable[[Least, Mapping[Shape, int]], Carried]) -> Step:
    """The ``Step`` that releases ``released_now`` (``releasing`` of ``candidates``), with the
    inputs' rows and late records."""
    return Step(released_now, {name: i.rows for name, i in inputs.items()}, persisted, out_cti, candidates, releasing,
                make_carried, {name: i.decided.late for name, i in inputs.items()},
                {name: i.went_back for name, i in inputs.items() if i.went_back is not None})


# --- a step of the compiled plan ------------------------------------------------------------------

def _plan_step(plan: Plan, carried: Carried, batch: int, inputs: Mapping[str, _InputStep], flows: Mapping[str, Flow],
               persisted: list[DataFrame]) -> Step:
    """The step of a query on its events: the compiled plan over the events carried and accepted
    now (``flows``); each shape releases what the release rule releases minus what it released
    before."""
    # the length batches whose first events per group earlier steps dropped number the rest from
    # the count dropped (their offsets, carried with the state)
    counted = counted_batches(plan.query)
    offsets = {node: carried.partials.get(c.name) for node, c in counted.items()}
    with batch_offsets(offsets), phase("compile"):
        output = compile_node(plan.query, flows)
    out = output.frame.persist(StorageLevel.MEMORY_AND_DISK)
    # what ends before the previous output floor may be wrong (its inputs are gone) and was released
    floor = carried.state.out_floor
    candidates = out if floor is None else out.filter(F.col(END) >= F.lit(floor))
    releasing = functools.partial(_released_again, cti=output.cti, payload=plan.payload, before=carried.released,
                                  below=carried.state.released_below)
    released_now = {shape: releasing(shape, candidates, None) for shape in plan.shapes}
    make_carried = functools.partial(_carried_after_plan, plan=plan, before=carried, batch=batch, inputs=inputs,
                                     flows=flows, out_cti=output.cti, counted=counted, offsets=offsets,
                                     released_now=released_now)
    return _outcome(inputs, released_now, [*persisted, out], output.cti, candidates, releasing, make_carried)


def _released_again(shape: Shape, candidates: DataFrame, observed: DataFrame | None, *, cti: int | None,
                    payload: list[str], before: Mapping[str, DataFrame], below: int | None) -> DataFrame:
    """What ``shape``'s output releases now: what the release rule releases of ``candidates`` (or
    of ``observed``, the same with the step's observation) at the output CTI ``cti``, minus what was
    released before (``before``, by shape name), every row of which starts before ``below``
    (``RunState.released_below``)."""
    releasable = release(candidates if observed is None else observed, cti, shape, payload)
    before_set = before.get(shape.name)
    if before_set is None or below is None:
        return releasable
    # only a row starting before ``below`` can be among those released before: the rest are new
    # as they are, and the multiset difference shuffles the few that can. Those are read from the
    # candidates without the observation: it is in one side of the union only (it sees every
    # candidate there), as a Spark Connect 4.1 client refuses one observation on both sides
    old = F.col(START) < F.lit(below)
    again = release(candidates, cti, shape, payload).filter(old)
    return releasable.filter(~old).unionByName(again.exceptAll(before_set))


def _carried_after_plan(least: Least, counts: Mapping[Shape, int], *, plan: Plan, before: Carried, batch: int,
                        inputs: Mapping[str, _InputStep], flows: Mapping[str, Flow], out_cti: int | None,
                        counted: Mapping[LengthBatch, CountedBatch], offsets: Mapping[LengthBatch, DataFrame | None],
                        released_now: Mapping[Shape, DataFrame]) -> Carried:
    """What a ``_plan_step`` carries, from the ``Least`` of its output and the counts of what it
    released: the output floors (``_output_floors``), each input's events ending at or after its
    retention floor, the released sets (``_released_sets``) and the counted length batches'
    offsets."""
    out_floor, keep_floor = _output_floors(before.state, out_cti, least)
    with batch_offsets(offsets), phase("retention floors"):
        retention, offsets_now = offsets_after(counted, floors(plan.query, out_floor, flows), flows, offsets)
    states = {name: attrs.evolve(i.state, floor=retention.get(name)) for name, i in inputs.items()}
    kept = {name: _ending_from(i.accepted, retention.get(name)) for name, i in inputs.items()}
    released = _released_sets(released_now, before.released, out_floor, keep_floor)
    state = _run_state(plan, before.state, batch, inputs, states, out_cti, out_floor, keep_floor, counts)
    own = {c.name: frame for node, c in counted.items() if (frame := offsets_now[node]) is not None}
    return Carried(state, kept, _pending(inputs), released, own)


def _output_floors(before: RunState, out_cti: int | None, least: Least) -> tuple[Floor, Floor]:
    """The output floor and the floor of the released sets (``RunState.out_floor``,
    ``RunState.keep_floor``) after a step whose output CTI is ``out_cti``; neither goes down."""
    # both floors from one pass: the least start of an event not yet stable, and of any event
    # that a later step computes again (``keep_floor`` from the previous output floor: a little
    # lower than the new one would give, never too high)
    unstable, reaching = least
    out_floor = before.out_floor
    if out_cti is not None:
        lowest = out_cti if unstable is None else min(out_cti, int(unstable))
        out_floor = lowest if out_floor is None else max(out_floor, lowest)
    keep_floor = before.keep_floor
    if out_floor is not None:
        lowest = out_floor if reaching is None else min(out_floor, int(reaching))
        keep_floor = lowest if keep_floor is None else max(keep_floor, lowest)
    return out_floor, keep_floor


def _ending_from(events: DataFrame, floor: Floor) -> DataFrame:
    """The ``events`` ending at or after ``floor`` (all of them without one)."""
    return events if floor is None else events.filter(F.col(END) >= F.lit(floor))


def _released_sets(released_now: Mapping[Shape, DataFrame], before: Mapping[str, DataFrame], out_floor: Floor,
                   keep_floor: Floor) -> dict[str, DataFrame]:
    """Per shape (by name), what was released before and now that a later step could compute
    again."""
    released: dict[str, DataFrame] = {}
    for shape, fresh_release in released_now.items():
        before_set = before.get(shape.name)
        df = fresh_release if before_set is None else before_set.unionByName(fresh_release)
        if shape is Shape.INTERVAL and out_floor is not None:
            # a released interval is computed again only while it ends at or after the output floor
            df = df.filter(F.col(END) >= F.lit(out_floor))
        elif shape is not Shape.INTERVAL and keep_floor is not None:
            # points and edges no longer show their event's end: keep what starts at or after the
            # earliest start of an event that a later step computes again
            df = df.filter(F.col(START) >= F.lit(keep_floor))
        released[shape.name] = df
    return released


# --- a step of a window on partial aggregates -----------------------------------------------------

def _window_step(plan: Plan, window: WindowAggregate, carried: Carried, batch: int, inputs: Mapping[str, _InputStep],
                 flows: Mapping[str, Flow], persisted: list[DataFrame]) -> Step:
    """The step of a hopping or tumbling window on partial aggregates
    (``streamql.spark.streaming.partials``): ``flows`` hold only the micro-batch's accepted events,
    ``carried.partials`` the partials of the windows still open."""
    before = carried.partials.get(PARTIALS)
    source = compile_node(window.source, flows)
    spec = window.window
    assert isinstance(spec, HoppingWindow)
    frame, keys, aggregates = window_input(window, source)
    members = window_members(spec, frame, source.keys, source.cti, False, None)
    fresh = members.select(*keys, WINDOW, *row_partials(aggregates))
    both = fresh if before is None else before.unionByName(fresh)
    # the sink's write computes it, the state's write reads it again
    merged = both.groupBy(*keys, WINDOW).agg(*merge_columns(aggregates)).persist(StorageLevel.MEMORY_AND_DISK)
    formed = formed_windows(spec, merged.select(*keys, WINDOW, *result_columns(aggregates)), keys, source.cti)
    out_cti = spec.output_cti(source.cti)
    output = window_output(window, formed, keys, source, out_cti, spec.output_cti(source.finite_cti))
    cti = source.cti
    # the partials of the windows the CTI has not reached the end of (every other one is released now)
    still_open = merged if cti is None else merged.filter(
        shifted(F.col(WINDOW) * F.lit(spec.hop), spec.size) > F.lit(cti))
    # a window is released once, when the CTI reaches its end: nothing to take away
    releasing = functools.partial(_released_once, cti=out_cti, payload=plan.payload)
    released_now = {shape: releasing(shape, output.frame, None) for shape in plan.shapes}
    make_carried = functools.partial(_carried_after_window, plan=plan, before=carried.state, batch=batch,
                                     inputs=inputs, partials=still_open, out_cti=out_cti)
    return _outcome(inputs, released_now, [*persisted, merged], out_cti, output.frame, releasing, make_carried)


def _released_once(shape: Shape, candidates: DataFrame, observed: DataFrame | None, *, cti: int | None,
                   payload: list[str]) -> DataFrame:
    """What ``shape``'s output releases now: what the release rule releases of ``candidates`` (or
    of ``observed``, the same with the step's observation) at the output CTI ``cti``."""
    return release(candidates if observed is None else observed, cti, shape, payload)


def _carried_after_window(least: Least, counts: Mapping[Shape, int], *, plan: Plan, before: RunState, batch: int,
                          inputs: Mapping[str, _InputStep], partials: DataFrame, out_cti: int | None) -> Carried:
    """What a ``_window_step`` carries: the partials of the windows still open and the start edges
    pending, no events (the output floor is the output CTI: ``least`` is not needed)."""
    states = {name: i.state for name, i in inputs.items()}
    state = _run_state(plan, before, batch, inputs, states, out_cti, out_cti, None, counts)
    return Carried(state, {}, _pending(inputs), {}, {PARTIALS: partials})


# --- a step of a grouped snapshot window on its carried frontier -----------------------------------

def _frontier_step(plan: Plan, window: WindowAggregate, carried: Carried, batch: int,
                   inputs: Mapping[str, _InputStep], flows: Mapping[str, Flow], persisted: list[DataFrame]) -> Step:
    """The step of a grouped snapshot window on its carried frontier
    (``streamql.spark.streaming.frontier``), and of the ``where`` and ``select`` over its output if
    the query has them: ``flows`` hold only the micro-batch's accepted events, ``carried.partials``
    the window's input rows that end after the last step's CTI, clipped."""
    before = carried.partials.get(FRONTIER)
    with phase("compile"):
        source = compile_node(window.source, flows)
        frame, keys, aggregates = window_input(window, source)
        if before is not None:
            frame = before.unionByName(frame)
        formed = snapshot_windows(frame, keys, aggregates, source.cti)
        output = window_output(window, formed, keys, source, source.cti, source.finite_cti)
        if plan.query is not window:  # a where or select over the window's output
            with compiled_once():
                compiled_as(window, flows, output)
                output = compile_node(plan.query, flows)
    releasing = functools.partial(_released_past, cti=output.cti, payload=plan.payload,
                                  below=carried.state.released_below)
    released_now = {shape: releasing(shape, output.frame, None) for shape in plan.shapes}
    make_carried = functools.partial(_carried_after_frontier, plan=plan, before=carried.state, batch=batch,
                                     inputs=inputs, frontier=carried_frontier(frame, keys, source.cti),
                                     out_cti=output.cti)
    return _outcome(inputs, released_now, persisted, output.cti, output.frame, releasing, make_carried)


def _released_past(shape: Shape, candidates: DataFrame, observed: DataFrame | None, *, cti: int | None,
                   payload: list[str], below: int | None) -> DataFrame:
    """What ``shape``'s output releases now from a sweep of the frontier (or of ``observed``, the
    same with the step's observation): what the release rule releases at the output CTI ``cti``,
    less the starts before ``below`` (``RunState.released_below``), released before."""
    return released_from_frontier(release(candidates if observed is None else observed, cti, shape, payload),
                                  shape, below)


def _carried_after_frontier(least: Least, counts: Mapping[Shape, int], *, plan: Plan, before: RunState, batch: int,
                            inputs: Mapping[str, _InputStep], frontier: DataFrame, out_cti: int | None) -> Carried:
    """What a ``_frontier_step`` carries: the frontier's rows and no events (the output floor from
    the least start of an output event not yet stable, as a plan step's)."""
    out_floor, keep_floor = _output_floors(before, out_cti, least)
    states = {name: i.state for name, i in inputs.items()}
    state = _run_state(plan, before, batch, inputs, states, out_cti, out_floor, keep_floor, counts)
    return Carried(state, {}, _pending(inputs), {}, {FRONTIER: frontier})


__all__ = ["ArrivalWentBack", "BATCH", "Plan", "Step", "empty_carried", "planned", "scan_new_rows", "step"]
