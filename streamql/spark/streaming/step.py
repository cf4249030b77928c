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

import json
import uuid
from typing import Any, Callable, Mapping

import attrs
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.errors import BadInputError
from streamql.events import Shape
from streamql.query.nodes import Node, inputs_of
from streamql.query.windows import HoppingWindow, WindowAggregate
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.base.columns import CLOSED, END, HEAD, SEQ, START
from streamql.spark.ingress.edge_matching import MatchedEdges, match_end_edges
from streamql.spark.ingress.binding import Binding
from streamql.spark.ingress.scan import Ingress
from streamql.spark.ingress.late import edge_rows
from streamql.spark.operators.flow import Flow, compile_node, input_flow
from streamql.spark.operators.release import release
from streamql.spark.windows.esper import batch_offsets
from streamql.spark.streaming.retention import Floor, counted_batches, floors, offsets_after
from streamql.spark.windows.hopping import WINDOW, formed_windows, window_members
from streamql.spark.streaming.partials import PARTIALS, incremental_window, merge_columns, result_columns, \
    row_partials
from streamql.spark.operators.flow import shifted
from streamql.spark.ingress.imports import scan_input, scan_order
from streamql.spark.windows.grouping import window_input, window_output
from streamql.time import INFINITY_MICROS

#: the micro-batch a carried edge row arrived in (arrival order is (batch, seq))
BATCH = "_sq_batch"
#: a state's frames are written together: the frame a row belongs to, and (numbered) its columns
_FRAME = "_sq_frame"


@attrs.frozen
class InputState:
    """What a run carries of one input besides its events."""

    scan: scan.ScanState = scan.ScanState()
    finite_cti: int | None = None
    #: the arrival at which its CTI reached INFINITY (``Ingress.reached``)
    reached: int | None = None
    floor: Floor = None
    #: a static (non-streaming) input is read whole in the run's first step
    fed: bool = False
    #: the input's rows in the micro-batches so far (its late records number rows from it)
    rows: int = 0

    @property
    def cti(self) -> int | None:
        return None if self.scan.cti == scan.NONE else self.scan.cti


@attrs.frozen
class RunState:
    """What a run carries besides DataFrames, after the step of micro-batch ``batch``."""

    batch: int = -1
    inputs: Mapping[str, InputState] = attrs.field(factory=dict)
    #: every output event ending before it was released (``None``: no such time yet)
    out_floor: Floor = None
    #: released events starting before it cannot be computed again: they leave the released sets
    keep_floor: Floor = None
    out_cti: int | None = None
    dropped: int = 0
    adjusted: int = 0
    bad_rows: int = 0
    released: int = 0
    #: a final INFINITY CTI was applied: the output is complete
    flushed: bool = False
    #: the query's shape (``Plan.signature``): a checkpoint serves one query
    signature: str = ""

    def to_json(self) -> str:
        return json.dumps({**attrs.asdict(self, recurse=False),
                           "inputs": {name: {**attrs.asdict(i, recurse=False), "scan": attrs.asdict(i.scan)}
                                      for name, i in self.inputs.items()}})

    @staticmethod
    def from_json(text: str) -> RunState:
        raw = json.loads(text)
        inputs = {name: InputState(**{**i, "scan": scan.ScanState(**i["scan"])}) for name, i in raw["inputs"].items()}
        return RunState(**{**raw, "inputs": inputs})


@attrs.frozen
class Carried:
    """A run's state with its DataFrames: per input the events kept (``events``, flow columns)
    and the start edges still pending (``pending``, EDGE inputs), per output shape the released
    events a later step could compute again (``released``, keyed by the shape's name)."""

    state: RunState
    events: Mapping[str, DataFrame] = attrs.field(eq=False)
    pending: Mapping[str, DataFrame] = attrs.field(eq=False)
    released: Mapping[str, DataFrame] = attrs.field(eq=False)
    #: an operator's own state (``streamql.spark.streaming.partials``: the open windows' partials;
    #: ``streamql.spark.streaming.retention.offsets_after``: a length batch's offsets)
    partials: Mapping[str, DataFrame] = attrs.field(eq=False, factory=dict)

    def frames(self) -> dict[str, DataFrame]:
        """Every DataFrame under a path-like name (how ``StateStore`` lays them out)."""
        return {**{f"events/{n}": df for n, df in self.events.items()},
                **{f"pending/{n}": df for n, df in self.pending.items()},
                **{f"released/{n}": df for n, df in self.released.items()},
                **{f"partials/{n}": df for n, df in self.partials.items()}}

    def rows(self) -> int:
        """How many rows the state holds (one Spark job)."""
        frames = list(self.frames().values())
        if not frames:
            return 0
        ones = frames[0].select(F.lit(1).alias("one"))
        for df in frames[1:]:
            ones = ones.unionAll(df.select(F.lit(1).alias("one")))
        return ones.count()


@attrs.frozen
class Plan:
    """A query ready to run incrementally: its bindings (sources are the streaming or static
    DataFrames it reads) and the output shapes it releases (one released set each)."""

    query: Node
    bindings: Mapping[str, Binding] = attrs.field(eq=False)
    shapes: tuple[Shape, ...]
    #: inputs bound to static DataFrames, read whole in the first step
    static: frozenset[str] = frozenset()

    @property
    def payload(self) -> list[str]:
        return [f.name for f in self.query.schema.fields]

    @property
    def signature(self) -> str:
        """What a checkpoint must match to continue a run: the inputs (name, payload type, shape),
        the output payload type and the released shapes."""
        read = inputs_of(self.query)
        inputs = ", ".join(f"{n}: {read[n].schema.name}/{read[n].shape.name}" for n in sorted(read))
        return f"{inputs} -> {self.query.schema.name}({', '.join(self.payload)}) as " + \
            "+".join(s.name for s in self.shapes)


#: the aggregates of a step's output that its carried state needs: the least start of an output
#: event not yet stable (``unstable``) and of any output event a later step computes again
#: (``reaching``); ``None`` where there is no such event
Least = tuple[int | None, int | None]


def observed_metrics(observation: Observation) -> Mapping[str, Any] | None:
    """What ``observation`` observed once its action ran, or None when the action's plan did not
    run the observed part: Spark prunes a plan it proves empty (a release while the CTI is None
    filters on a literal false), observed metrics and all."""
    jvm_row = observation._jo.getRow() if observation._jo is not None else None  # waits for the action
    if jvm_row is None or jvm_row.length() == 0:
        return None
    return observation.get


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
    releasing: Callable[[Shape, DataFrame], DataFrame] = attrs.field(eq=False)
    make_carried: Callable[[Least, Mapping[Shape, int]], Carried] = attrs.field(eq=False)
    #: per input the query reads, the late records of this step (``streamql.spark.ingress.late``): of the
    #: micro-batch's rows, and of the edge events the step decides
    late: Mapping[str, DataFrame] = attrs.field(eq=False, factory=dict)

    def observed(self) -> Observed:
        """The releases, each observed as it is written: write every one of them (the first
        shape's first), then ``carry(observed)``."""
        least = Observation()
        counts = {shape: Observation() for shape in self.released_now}
        frames: dict[Shape, DataFrame] = {}
        for number, (shape, df) in enumerate(self.released_now.items()):
            if number == 0:  # the first write computes the output: the least starts come with it
                df = self.releasing(shape, self.candidates.observe(least, *_least()))
            frames[shape] = df.observe(counts[shape], F.count(F.lit(1)).alias("rows"))
        return Observed(frames, least, counts)

    def carry(self, observed: Observed) -> Carried:
        """The carried state, from what writing ``observed.frames`` observed (the least starts in a
        job of their own if the write did not compute the output: a plan Spark proved empty)."""
        least = observed_metrics(observed.least)
        if least is None and self.out_cti is None:
            least = {"unstable": None, "reaching": None}  # no output CTI: the floors stay where they are
        elif least is None:
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


def carried_session(carried: Carried) -> SparkSession | None:
    """The session the carried frames were made in (the step's), if they have any."""
    for df in carried.frames().values():
        return df.sparkSession
    return None


def empty_carried(plan: Plan) -> Carried:
    """The state before the first step: nothing kept, nothing released."""
    return Carried(RunState(inputs={name: InputState() for name in inputs_of(plan.query)}), {}, {}, {})


def _match_edges(carried: DataFrame | None, new: DataFrame, payload: list[str], batch: int,
                 cti: int | None) -> MatchedEdges:
    """``streamql.spark.ingress.edge_matching`` across micro-batches: the carried start edges arrived before
    the new rows, and ``cti`` is the input's CTI after the micro-batch. An event is counted
    (dropped, moved) in the step that decides it: when its end edge comes, or when a final INFINITY
    CTI makes it final; an end edge that DROP ignores counts in the micro-batch it arrives in."""
    rows = new.withColumn(BATCH, F.lit(batch).cast("long"))
    if carried is not None:
        # (a state written before late records were kept has no arrival column: null there)
        rows = carried.unionByName(rows, allowMissingColumns=True)
    return match_end_edges(rows, payload, cti, order=(BATCH, SEQ), new=F.col(BATCH) == batch,
                           count_open=cti == INFINITY_MICROS)


def scan_new_rows(spark: SparkSession, bindings: Mapping[str, Binding], static: frozenset[str],
                  inputs: Mapping[str, InputState], new: Mapping[str, DataFrame], final: bool) -> dict[str, Ingress]:
    """Scans the new rows (``new``; a static input's whole DataFrame until it was read once) of the
    inputs in ``inputs``, each from the scan state it carries. Edges are not matched yet."""
    sources: dict[str, Binding] = {}
    for name in inputs:
        b = bindings[name]
        rows = new.get(name)
        if name in static and not inputs[name].fed:
            rows = b.source
        if rows is None:
            rows = spark.createDataFrame([], b.source.schema)
        sources[name] = attrs.evolve(b, source=rows)
    ingresses: dict[str, Ingress] = {}
    for name in scan_order(sources, set(inputs)):
        ingresses[name] = scan_input(sources, name, ingresses, initial=inputs[name].scan, match_edges=False,
                                     final=final, first_position=inputs[name].rows)
    return ingresses


def step(spark: SparkSession, plan: Plan, carried: Carried, new: Mapping[str, DataFrame], batch: int,
         final: bool = False, scanned: Mapping[str, Ingress] | None = None) -> Step:
    late: dict[str, DataFrame] = {}
    outcome = _step(spark, plan, carried, new, batch, final, scanned, late)
    return attrs.evolve(outcome, late=late)


def _step(spark: SparkSession, plan: Plan, carried: Carried, new: Mapping[str, DataFrame], batch: int,
          final: bool, scanned: Mapping[str, Ingress] | None, late: dict[str, DataFrame]) -> Step:
    """Runs micro-batch ``batch`` (its rows per input in ``new``; an input missing from it had no
    rows) from ``carried``. ``final``: the run stops here, and inputs with ``flush=True`` get their
    final INFINITY CTI. ``scanned``: the new rows scanned already (``scan_new_rows``, once for
    several queries: ``Binder.start_many``); their cached frames are then the caller's to release."""
    state = carried.state
    read = inputs_of(plan.query)
    input_rows: dict[str, int] = {}
    persisted: list[DataFrame] = []
    if scanned is None:
        ingresses = scan_new_rows(spark, plan.bindings, plan.static, {name: state.inputs[name] for name in read},
                                  new, final)
        persisted += [df for ingress in ingresses.values() for df in ingress.persisted]
    else:
        ingresses = dict(scanned)
    flows: dict[str, Flow] = {}
    accepted: dict[str, DataFrame] = {}
    pending: dict[str, DataFrame] = {}
    inputs: dict[str, InputState] = {}
    dropped = adjusted = bad_rows = 0
    for name, node in read.items():
        ingress, before = ingresses[name], state.inputs[name]
        finite = max((c for c in (before.finite_cti, ingress.finite_cti) if c is not None), default=None)
        cti = ingress.final_cti
        forever = cti == INFINITY_MICROS
        fresh = ingress.events
        still_open: DataFrame | None = None
        bad_rows += ingress.bad_rows
        if node.shape is Shape.EDGE:
            matched = _match_edges(carried.pending.get(name), fresh, [f.name for f in node.schema.fields], batch,
                                   cti)
            persisted.append(matched.persisted)
            if matched.unmatched and plan.bindings[name].bad_rows == "error":
                raise BadInputError(f"input {name!r}: an end edge (micro-batch {batch}, row {matched.first_unmatched}) "
                                    "has no open start edge with its start and payload; bind with bad_rows='drop' "
                                    "to drop and count such rows")
            bad_rows += matched.unmatched
            dropped += matched.dropped
            adjusted += matched.adjusted
            assert ingress.late is not None
            late[name] = ingress.late.unionByName(edge_rows(matched.persisted, [f.name for f in node.schema.fields],
                                                            F.col(BATCH) == batch, count_open=forever))
            fresh, still_open = matched.decided, matched.still_open
            pending[name] = matched.pending
        else:
            dropped += ingress.dropped
            adjusted += ingress.adjusted
            assert ingress.late is not None
            late[name] = ingress.late
        kept = carried.events.get(name)
        if kept is not None:
            if forever:  # nothing can end an open event any more
                kept = kept.withColumn(CLOSED, F.lit(True))
            fresh = kept.unionByName(fresh)
        # the plan, the retention floors and the state all read these events: compute them once
        fresh = fresh.persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(fresh)
        accepted[name] = fresh
        events = fresh if still_open is None else fresh.unionByName(still_open)
        reached = before.reached if before.reached is not None else ingress.reached
        flows[name] = input_flow(events, cti, finite, reached)
        inputs[name] = attrs.evolve(before, scan=ingress.state, finite_cti=finite, reached=reached,
                                    fed=before.fed or name in plan.static, rows=before.rows + ingress.rows)
        input_rows[name] = ingress.rows
    window = incremental_window(plan.query)
    if window is not None:
        def carry_window(partials: DataFrame, out_cti: int | None, counts: Mapping[Shape, int]) -> Carried:
            new_state = RunState(
                batch=batch, inputs=inputs, out_floor=out_cti, keep_floor=None, out_cti=out_cti,
                dropped=state.dropped + dropped, adjusted=state.adjusted + adjusted,
                bad_rows=state.bad_rows + bad_rows,
                released=state.released + (counts[plan.shapes[0]] if plan.shapes else 0),
                flushed=state.flushed or out_cti == INFINITY_MICROS, signature=plan.signature)
            return Carried(new_state, {}, pending, {}, {PARTIALS: partials})

        return _window_step(plan, window, carried.partials.get(PARTIALS), flows, input_rows, persisted, carry_window)
    # the length batches whose first events per group earlier steps dropped number the rest from
    # the count dropped (their offsets, carried with the state)
    counted = counted_batches(plan.query)
    offsets = {node: carried.partials.get(c.name) for node, c in counted.items()}
    with batch_offsets(offsets):
        output = compile_node(plan.query, flows)
    out = output.frame.persist(StorageLevel.MEMORY_AND_DISK)
    persisted.append(out)
    # what ends before the previous output floor may be wrong (its inputs are gone) and was released
    candidates = out if state.out_floor is None else out.filter(F.col(END) >= F.lit(state.out_floor))

    def releasing(shape: Shape, candidates: DataFrame) -> DataFrame:
        """What ``shape``'s output releases now: what the release rule releases, minus what was
        released before."""
        releasable = release(candidates, output.cti, shape, plan.payload)
        before_set = carried.released.get(shape.name)
        return releasable if before_set is None else releasable.exceptAll(before_set)

    released_now = {shape: releasing(shape, candidates) for shape in plan.shapes}

    def carry(least: Least, counts: Mapping[Shape, int]) -> Carried:
        # both floors from one pass: the least start of an event not yet stable, and of any event
        # that a later step computes again (``keep_floor`` from the previous output floor: a little
        # lower than the new one would give, never too high)
        unstable, reaching = least
        out_floor = state.out_floor
        if output.cti is not None:
            lowest = output.cti if unstable is None else min(output.cti, int(unstable))
            out_floor = lowest if out_floor is None else max(out_floor, lowest)
        keep_floor = state.keep_floor
        if out_floor is not None:
            lowest = out_floor if reaching is None else min(out_floor, int(reaching))
            keep_floor = lowest if keep_floor is None else max(keep_floor, lowest)
        with batch_offsets(offsets):
            retention, offsets_now = offsets_after(counted, floors(plan.query, out_floor, flows), flows, offsets)
        kept = dict(accepted)
        carried_inputs = dict(inputs)
        for name in read:
            floor = retention.get(name)
            carried_inputs[name] = attrs.evolve(carried_inputs[name], floor=floor)
            if floor is not None:
                kept[name] = kept[name].filter(F.col(END) >= F.lit(floor))
        released_sets: dict[str, DataFrame] = {}
        for shape, fresh_release in released_now.items():
            before_set = carried.released.get(shape.name)
            df = fresh_release if before_set is None else before_set.unionByName(fresh_release)
            if shape is Shape.INTERVAL and out_floor is not None:
                # a released interval is computed again only while it ends at or after the output floor
                df = df.filter(F.col(END) >= F.lit(out_floor))
            elif shape is not Shape.INTERVAL and keep_floor is not None:
                # points and edges no longer show their event's end: keep what starts at or after the
                # earliest start of an event that a later step computes again
                df = df.filter(F.col(START) >= F.lit(keep_floor))
            released_sets[shape.name] = df
        new_state = RunState(
            batch=batch, inputs=carried_inputs, out_floor=out_floor, keep_floor=keep_floor, out_cti=output.cti,
            dropped=state.dropped + dropped, adjusted=state.adjusted + adjusted, bad_rows=state.bad_rows + bad_rows,
            released=state.released + (counts[plan.shapes[0]] if plan.shapes else 0),
            flushed=state.flushed or output.cti == INFINITY_MICROS, signature=plan.signature)
        own = {c.name: frame for node, c in counted.items() if (frame := offsets_now[node]) is not None}
        return Carried(new_state, kept, pending, released_sets, own)

    return Step(released_now, input_rows, persisted, output.cti, candidates, releasing, carry)


def _window_step(plan: Plan, window: WindowAggregate, before: DataFrame | None, flows: Mapping[str, Flow],
                 input_rows: Mapping[str, int], persisted: list[DataFrame],
                 carry: Callable[[DataFrame, int | None, Mapping[Shape, int]], Carried]) -> Step:
    """The step of a hopping or tumbling window on partial aggregates (``streamql.spark.
    incremental_windows``): ``flows`` hold only the micro-batch's accepted events, ``before`` the
    partials of the windows still open."""
    source = compile_node(window.source, flows)
    spec = window.window
    assert isinstance(spec, HoppingWindow)
    frame, keys, aggregates = window_input(window, source)
    members = window_members(spec, frame, source.keys, source.cti, False, None)
    fresh = members.select(*keys, WINDOW, *row_partials(aggregates))
    both = fresh if before is None else before.unionByName(fresh)
    # the sink's write computes it, the state's write reads it again
    merged = both.groupBy(*keys, WINDOW).agg(*merge_columns(aggregates)).persist(StorageLevel.MEMORY_AND_DISK)
    persisted.append(merged)
    formed = formed_windows(spec, merged.select(*keys, WINDOW, *result_columns(aggregates)), keys, source.cti)
    out_cti = spec.output_cti(source.cti)
    output = window_output(window, formed, keys, source, out_cti, spec.output_cti(source.finite_cti))
    cti = source.cti
    # the partials of the windows the CTI has not reached the end of (every other one is released now)
    still_open = merged if cti is None else merged.filter(
        shifted(F.col(WINDOW) * F.lit(spec.hop), spec.size) > F.lit(cti))

    def releasing(shape: Shape, candidates: DataFrame) -> DataFrame:
        # a window is released once, when the CTI reaches its end: nothing to take away
        return release(candidates, out_cti, shape, plan.payload)

    released_now = {shape: releasing(shape, output.frame) for shape in plan.shapes}
    return Step(released_now, input_rows, persisted, out_cti, output.frame, releasing,
                lambda least, counts: carry(still_open, out_cti, counts))


# --- persistence ----------------------------------------------------------------------------------

class StateStore:
    """Carried states under ``root``, one directory per micro-batch (``state-<batch>``), each
    written under a temporary name and renamed when complete: a directory that exists is whole.
    Files go through Hadoop's FileSystem, so the checkpoint may live on HDFS or an object store
    as well as on a local disk."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self._spark = spark
        self.root = root.rstrip("/")

    # --- Hadoop FileSystem helpers ----------------------------------------------------------
    def _jvm(self) -> Any:
        jvm = self._spark._jvm
        assert jvm is not None
        return jvm

    def _path(self, path: str) -> Any:
        return self._jvm().org.apache.hadoop.fs.Path(path)

    def _fs(self, path: str) -> Any:
        return self._path(path).getFileSystem(self._spark._jsc.hadoopConfiguration())

    def exists(self, path: str) -> bool:
        return bool(self._fs(path).exists(self._path(path)))

    def mkdirs(self, path: str) -> None:
        self._fs(path).mkdirs(self._path(path))

    def delete(self, path: str) -> None:
        self._fs(path).delete(self._path(path), True)

    def rename(self, source: str, target: str) -> bool:
        fs = self._fs(target)
        fs.mkdirs(self._path(target).getParent())
        return bool(fs.rename(self._path(source), self._path(target)))

    def write_text(self, path: str, text: str) -> None:
        out = self._fs(path).create(self._path(path), True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def read_text(self, path: str) -> str:
        stream = self._fs(path).open(self._path(path))
        try:
            return str(self._jvm().org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def children(self, path: str) -> list[str]:
        if not self.exists(path):
            return []
        return [str(s.getPath().getName()) for s in self._fs(path).listStatus(self._path(path))]

    def publish(self, df: DataFrame, target: str, format: str, staging: str,
                options: Mapping[str, str] | None = None, keep: Callable[[], bool] | None = None) -> bool:
        """Writes ``df`` to ``target`` whole or not at all: into a temporary directory under
        ``staging`` (on the same file system, outside what readers of ``target``'s parent list),
        renamed when complete — unless ``keep`` (asked once written) says no. A ``target`` that
        exists already (a repeated micro-batch) is kept as it is (``df`` is written all the same:
        what it observes is wanted); returns whether this call published it."""
        name = target.rsplit("/", 1)[1]
        temporary = f"{staging.rstrip('/')}/{name}-{uuid.uuid4().hex}"
        writer = df.write.format(format).mode("overwrite")
        for key, value in (options or {}).items():
            writer = writer.option(key, value)
        writer.save(temporary)
        if self.exists(target) or (keep is not None and not keep()) or not self.rename(temporary, target):
            self.delete(temporary)
            return False
        return True

    # --- states ---------------------------------------------------------------------------------
    def _state_dir(self, batch: int) -> str:
        return f"{self.root}/state-{batch:012d}"

    def committed(self) -> list[int]:
        return sorted(int(name[len("state-"):]) for name in self.children(self.root) if name.startswith("state-"))

    def has(self, batch: int) -> bool:
        return self.exists(self._state_dir(batch))

    def state(self, batch: int) -> RunState:
        """The committed state of ``batch`` without its DataFrames."""
        meta = json.loads(self.read_text(f"{self._state_dir(batch)}/meta.json"))
        return RunState.from_json(json.dumps(meta["state"]))

    def load(self, batch: int, session: SparkSession | None = None) -> Carried:
        """The committed state of ``batch`` with its DataFrames (read through ``session``, by
        default the store's)."""
        directory = self._state_dir(batch)
        meta = json.loads(self.read_text(f"{directory}/meta.json"))
        state = RunState.from_json(json.dumps(meta["state"]))
        reader = (session or self._spark).read
        frames: dict[str, dict[str, DataFrame]] = {"events": {}, "pending": {}, "released": {}, "partials": {}}
        together = reader.schema(T.StructType.fromJson(meta["schema"])).parquet(f"{directory}/frames") \
            if meta["frames"] else None
        for number, key in enumerate(meta["frames"]):
            kind, name = key.split("/", 1)
            assert together is not None
            frames[kind][name] = together.filter(F.col(_FRAME) == number).select(f"{_FRAME}{number}.*")
        return Carried(state, frames["events"], frames["pending"], frames["released"], frames["partials"])

    def commit(self, carried: Carried) -> tuple[Carried, int]:
        """Writes ``carried`` as the state after its micro-batch (its frames together, in one job)
        and returns it read back from the files (so the next step's plan starts from them, not from
        the whole lineage), with the number of rows it holds."""
        batch = carried.state.batch
        target = self._state_dir(batch)
        rows: int | None = None
        if not self.exists(target):
            temporary = f"{self.root}/_tmp-state-{batch:012d}-{uuid.uuid4().hex}"
            frames = carried.frames()
            together: DataFrame | None = None
            for number, df in enumerate(frames.values()):
                # a frame's rows are a struct column of their own, beside the frame's number
                part = df.select(F.lit(number).alias(_FRAME), F.struct(*[F.col(c) for c in df.columns])
                                 .alias(f"{_FRAME}{number}"))
                together = part if together is None else together.unionByName(part, allowMissingColumns=True)
            meta: dict[str, Any] = {"state": json.loads(carried.state.to_json()), "frames": list(frames)}
            if together is not None:
                counted = Observation()
                together.observe(counted, F.count(F.lit(1)).alias("rows")).write.parquet(f"{temporary}/frames")
                metrics = observed_metrics(counted)
                rows = 0 if metrics is None else int(metrics["rows"])
                meta["schema"] = json.loads(together.schema.json())
            else:
                rows = 0
            self.write_text(f"{temporary}/meta.json", json.dumps(meta))
            if not self.rename(temporary, target):
                self.delete(temporary)
                rows = None
        # older states are not needed once a later one is whole; the one before stays for a
        # micro-batch that Spark runs again
        for older in self.committed():
            if older < batch - 1:
                self.delete(self._state_dir(older))
        loaded = self.load(batch, carried_session(carried))
        return loaded, loaded.rows() if rows is None else rows

    def latest(self, before: int | None = None) -> int | None:
        """The last committed micro-batch (before ``before``), or None."""
        batches = [b for b in self.committed() if before is None or b < before]
        return batches[-1] if batches else None


__all__ = ["BATCH", "Carried", "InputState", "Plan", "RunState", "StateStore", "Step", "empty_carried", "scan_new_rows",
           "observed_metrics", "step"]
