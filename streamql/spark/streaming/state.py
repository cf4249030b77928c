"""What a running query carries from one step to the next, and how it is committed.

``RunState`` (per input the scan state and floors, the output floors and counts) is plain data,
kept as JSON; ``Carried`` adds the DataFrames (events kept, start edges pending, released sets,
operator partials). ``StateStore`` commits a step's ``Carried`` under the checkpoint, one
directory per micro-batch, written under a temporary name and renamed once whole, so that a
directory that exists is a whole state (docs/streaming.md).
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Mapping

import attrs
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.runtime.connect import AnySession, local_checkpoint, parallelism
from streamql.spark.runtime.files import Files
from streamql.spark.streaming.retention import Floor
from streamql.time import INFINITY_MICROS

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
    #: the greatest arrival value of its rows in the micro-batches so far (an input with an arrival
    #: column; None before any, and in a checkpoint written before it was kept): a later
    #: micro-batch's rows before it arrived out of order (``step.ArrivalWentBack``)
    arrival_max: int | None = None

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
    #: every event released so far starts before it (``None``: nothing released yet); a checkpoint
    #: written before it was kept reads as ``INFINITY_MICROS``: any released event may start anywhere
    released_below: int | None = None
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
        return RunState(**{"released_below": INFINITY_MICROS, **raw, "inputs": inputs})


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


def observed_metrics(observation: Observation) -> Mapping[str, Any] | None:
    """What ``observation`` observed once its action ran, or None when the action's plan did not
    run the observed part: Spark prunes a plan it proves empty (a release while the CTI is None
    filters on a literal false), observed metrics and all."""
    if not hasattr(observation, "_jo"):
        # Spark Connect: the action's response fills the observation in, or leaves it empty
        try:
            metrics = observation.get
        except PySparkException:
            return None
        return metrics or None
    if observation._jo is None:
        return None
    try:
        jvm_row = observation._jo.getRow()  # waits for the action
    except Exception as exc:  # py4j's Py4JError: no such method
        if type(exc).__name__ != "Py4JError":
            raise
        # Spark 4.0's Observation has no getRow (3.5's and 4.1's have): getOrEmpty waits for the
        # action, then gives the metrics or nothing
        if observation._jo.getOrEmpty().isEmpty():
            return None
        return observation.get
    if jvm_row is None or jvm_row.length() == 0:
        return None
    return observation.get


def carried_session(carried: Carried) -> SparkSession | None:
    """The session the carried frames were made in (the step's), if they have any."""
    for df in carried.frames().values():
        return df.sparkSession
    return None


class StateStore:
    """Carried states under ``root``, one directory per micro-batch (``state-<batch>``), each
    written under a temporary name and renamed when complete: a directory that exists is whole.
    Its files go through ``files`` (Hadoop's FileSystem), so the checkpoint may live on HDFS or an
    object store as well as on a local disk.

    >>> store = StateStore(spark, "/data/ck/streamql")      # doctest: +SKIP
    >>> carried, rows = store.commit(outcome.carried)       # doctest: +SKIP
    >>> store.latest()                                      # doctest: +SKIP
    0
    """

    def __init__(self, spark: AnySession, root: str) -> None:
        self._spark = spark
        self.root = root.rstrip("/")
        self.files = Files(spark)
        #: the state this store committed last in this process, its frames in memory (``commit``),
        #: and the mark of that write in its ``meta.json``
        self._memory: tuple[Carried, str] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # on Spark Connect, foreachBatch sends the runner (and its stores) to the server, where the
        # steps commit their own states: the client's frames stay with the client
        return {**self.__dict__, "_memory": None}

    def _state_dir(self, batch: int) -> str:
        return f"{self.root}/state-{batch:012d}"

    def _meta(self, batch: int) -> Any:
        """What ``meta.json`` of ``batch``'s state holds: the state, the frames' names and schema."""
        return json.loads(self.files.read_text(f"{self._state_dir(batch)}/meta.json"))

    def committed(self) -> list[int]:
        """The micro-batches whose states are committed, oldest first."""
        return sorted(int(name[len("state-"):]) for name in self.files.children(self.root)
                      if name.startswith("state-"))

    def has(self, batch: int) -> bool:
        """Whether the state after ``batch`` is committed."""
        return self.files.exists(self._state_dir(batch))

    def state(self, batch: int) -> RunState:
        """The committed state of ``batch`` without its DataFrames."""
        return RunState.from_json(json.dumps(self._meta(batch)["state"]))

    def carried(self, batch: int, session: SparkSession | None = None) -> Carried:
        """The committed state of ``batch``: the frames that this store's ``commit`` of it keeps in
        memory, else (another process or run committed it, or this commit found it committed
        already) the files, as ``load`` reads them."""
        if self._memory is not None:
            kept, written = self._memory
            # the directory holds what this store renamed into place (no other writer replaced it)
            if kept.state.batch == batch and self._meta(batch).get("written") == written:
                return kept
        return self.load(batch, session)

    def in_memory(self, carried: Carried) -> bool:
        """Whether ``carried`` is the state this store keeps in memory (``carried``)."""
        return self._memory is not None and self._memory[0] is carried

    def forget(self) -> None:
        """Drops the state kept in memory: the next ``carried`` reads the files (Spark's blocks of
        a local checkpoint go with an executor that is lost)."""
        self._memory = None

    def load(self, batch: int, session: SparkSession | None = None) -> Carried:
        """The committed state of ``batch`` with its DataFrames, read from its files (through
        ``session``, by default the store's)."""
        directory = self._state_dir(batch)
        meta = self._meta(batch)
        state = RunState.from_json(json.dumps(meta["state"]))
        reader = (session or self._spark).read
        together = reader.schema(T.StructType.fromJson(meta["schema"])).parquet(f"{directory}/frames") \
            if meta["frames"] else None
        return _apart(state, meta["frames"], together)

    def commit(self, carried: Carried) -> tuple[Carried, int]:
        """Writes ``carried`` as the state after its micro-batch (its frames together, in one job)
        and returns it as the next step starts from it, with the number of rows it holds.

        The frames are checkpointed locally (``DataFrame.localCheckpoint``, lazily): the job that
        writes the files materialises them in Spark's block storage too, and the state returned
        reads those blocks — a leaf of the next step's plan, neither the whole lineage nor the
        files just written. The store keeps that state (``carried``) until its next commit; it is
        exactly the committed one: kept only when this call renamed the directory into place. A
        state that was committed already (a micro-batch that Spark runs again) is read from its
        files, which are the truth."""
        batch = carried.state.batch
        target = self._state_dir(batch)
        written = None if self.files.exists(target) else self._write(carried, target)
        # older states are not needed once a later one is whole; the one before stays for a
        # micro-batch that Spark runs again
        for older in self.committed():
            if older < batch - 1:
                self.files.delete(self._state_dir(older))
        if written is not None:
            kept, rows, mark = written
            self._memory = kept, mark
            return kept, rows
        # the previous state's blocks go with their last reference (Spark's ContextCleaner)
        self._memory = None
        loaded = self.load(batch, carried_session(carried))
        return loaded, self._rows(batch, loaded)

    def _rows(self, batch: int, loaded: Carried) -> int:
        """The rows the committed state of ``batch`` holds: as its ``meta.json`` records them, or
        counted (one job) in a state written before they were recorded."""
        rows = self._meta(batch).get("rows")
        return loaded.rows() if rows is None else int(rows)

    def _write(self, carried: Carried, target: str) -> tuple[Carried, int, str] | None:
        """Writes ``carried`` under a temporary name, renamed ``target`` once whole; the state as
        committed (its frames read from their local checkpoint), the rows it holds and the mark of
        the write (``meta.json``'s ``written``), or None if the rename failed (the temporary
        directory is then deleted)."""
        mark = uuid.uuid4().hex
        temporary = f"{self.root}/_tmp-state-{carried.state.batch:012d}-{mark}"
        frames = carried.frames()
        together = _together(list(frames.values()))
        meta: dict[str, Any] = {"state": json.loads(carried.state.to_json()), "frames": list(frames),
                                "written": mark}
        rows = 0
        if together is not None:
            # lazily: the write below computes the frames once, into the files and the blocks. In
            # as many partitions as the session runs tasks at once: each frame of the next state
            # reads every partition of this one, and a union adds partitions up (a state read
            # from its files is packed by size instead)
            together = local_checkpoint(together.coalesce(parallelism(together.sparkSession)), eager=False)
            counted = Observation()
            together.observe(counted, F.count(F.lit(1)).alias("rows")).write.parquet(f"{temporary}/frames")
            metrics = observed_metrics(counted)
            rows = 0 if metrics is None else int(metrics["rows"])
            meta["schema"] = json.loads(together.schema.json())
        meta["rows"] = rows
        self.files.write_text(f"{temporary}/meta.json", json.dumps(meta))
        if not self.files.rename(temporary, target):
            self.files.delete(temporary)
            return None
        # the state as ``load`` reads it back (its JSON's round trip), over the checkpointed frames
        return _apart(RunState.from_json(json.dumps(meta["state"])), list(frames), together), rows, mark

    def latest(self, before: int | None = None) -> int | None:
        """The last committed micro-batch (before ``before``), or None."""
        batches = [b for b in self.committed() if before is None or b < before]
        return batches[-1] if batches else None


def _apart(state: RunState, names: list[str], together: DataFrame | None) -> Carried:
    """The ``Carried`` whose frames (``names``, as ``Carried.frames`` names them) ``together``
    holds (``_together``)."""
    frames: dict[str, dict[str, DataFrame]] = {"events": {}, "pending": {}, "released": {}, "partials": {}}
    for number, key in enumerate(names):
        kind, name = key.split("/", 1)
        assert together is not None
        frames[kind][name] = together.filter(F.col(_FRAME) == number).select(f"{_FRAME}{number}.*")
    return Carried(state, frames["events"], frames["pending"], frames["released"], frames["partials"])


def _together(frames: list[DataFrame]) -> DataFrame | None:
    """``frames`` as one DataFrame, to write in one job (``StateStore.load`` takes them apart):
    frame ``n``'s rows are a struct column of their own, ``_sq_frame<n>``, beside the frame's
    number, ``_sq_frame``. None without frames."""
    together: DataFrame | None = None
    for number, df in enumerate(frames):
        part = df.select(F.lit(number).alias(_FRAME), F.struct(*[F.col(c) for c in df.columns])
                         .alias(f"{_FRAME}{number}"))
        together = part if together is None else together.unionByName(part, allowMissingColumns=True)
    return together


__all__ = ["Carried", "InputState", "RunState", "StateStore", "carried_session", "observed_metrics"]
