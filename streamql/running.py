"""Running queries on Structured Streaming: ``Binder.start`` and ``RunningQuery`` (docs/streaming.md).

Every micro-batch runs one incremental step (``streamql.spark.streaming.step``) inside
``foreachBatch``. What a step releases goes to ``<sink>/micro_batch=<id>``, its EDGE output and
output CTI to the query's *feed* (``<checkpoint>/streamql/feed/micro_batch=<id>``, which
``RunningQuery.as_stream`` lets other queries read), and its carried state to
``<checkpoint>/streamql/state-<id>``. Each directory is written under a temporary name and
renamed when whole, in that order, so a micro-batch that Spark runs again after a crash finds
what it wrote before and writes nothing twice; Spark's own progress lives in
``<checkpoint>/spark``.

``Binder.start_many`` runs several queries in one Structured Streaming query: each micro-batch
scans every input once for all of them, then runs each query's step; query ``n`` keeps its feed
and states under ``<checkpoint>/streamql/queries/<n>``, and commits them as a query alone does.
"""
from __future__ import annotations

import copy
import itertools
import json
import math
import re
import threading
import time
import uuid
import warnings
from contextlib import ExitStack
from typing import Any, Generic, Mapping, TypeVar, cast

import attrs
import streamql.spark  # noqa: F401 - first: a clear ImportError when no pyspark module is installed
from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as ST
from pyspark.sql.streaming.query import StreamingQuery

from streamql.errors import ArrivalOrderWarning, BindingError, StreamqlError, errors_naming
from streamql.events import EdgeKind, Result, Shape
from streamql.query import nodes
from streamql.query.stream import Stream
from streamql.spark.compat import ansi_mode, pyspark_version
from streamql.spark.streaming.state import Carried, InputState, StateStore, observed_metrics
from streamql.spark.streaming.step import (ArrivalWentBack, Plan, Step, empty_carried, planned, scan_new_rows,
                                           step)
from streamql.payload import PayloadSchema
from streamql.query.joins import least_cti
from streamql.spark.ingress.late import late_frame, with_partition, written_columns
from streamql.spark.ingress.binding import UNDECLARED, Binding
from streamql.spark.ingress.scan import Ingress
from streamql.spark.operators.release import EDGE_KIND, EDGE_TIME, user_columns, writer_options
from streamql.spark.runtime.connect import AnySession, is_connect, parallelism
from streamql.spark.runtime.delta import DELTA, app_id, append_once
from streamql.spark.runtime.files import Files
from streamql.spark.runtime.jobs import counting_jobs
from streamql.spark.runtime.origins import building
from streamql.spark.runtime.phases import phase, recording
from streamql.spark.base.schema import spark_type
from streamql.spark.base.columns import START
from streamql.time import from_micros, to_micros

T = TypeVar("T")

#: the column of a sink or feed directory that names the micro-batch
MICRO_BATCH = "micro_batch"
_INPUT = "_sq_input"


@attrs.frozen
class Progress:
    """One micro-batch of a running query: what came in, what it released, where the CTIs are and
    how much state it carries."""

    batch: int
    input_rows: Mapping[str, int]  # rows read per input (events, edges and CTI rows)
    released: int  # events (edges for EDGE output) written to the sink
    input_ctis: Mapping[str, Any]  # the current CTI per input (datetime, or None)
    output_cti: Any  # the query's output CTI (datetime, or None)
    dropped: int  # totals since the query first started
    adjusted: int
    bad_rows: int
    state_rows: int  # rows carried to the next micro-batch (kept events, open edges, released sets)
    started: float  # time.time() when the step began
    seconds: float  # how long the step took
    query: str = ""  # the query's name: its key in start_many, the running query's name for start
    jobs: int | None = 0  # the Spark jobs the step ran (its scan's included); None on Spark Connect
    #: the inputs whose arrival went back in this micro-batch: rows arrived with arrival values
    #: before the greatest of the input's earlier micro-batches (``ArrivalWentBack``: the least of
    #: this micro-batch, the greatest before), so their events can be late by the CTIs already
    #: committed (docs/streaming.md, "Why events of a stream are late")
    arrival_went_back: Mapping[str, ArrivalWentBack] = attrs.field(factory=dict)
    #: per partitioned input (``bind(..., partition=)``), each declared partition's current CTI
    #: (datetime, or None); ``input_ctis`` holds the input's, the least of them
    partition_ctis: Mapping[str, Mapping[int | str, Any]] = attrs.field(factory=dict)
    #: where the step's time went, per phase in the order they first ran: (own wall seconds, Spark
    #: jobs; None on Spark Connect) — only while ``RunningQuery.record_phases`` is on, else empty;
    #: ``other`` is what ran outside every named phase
    phases: Mapping[str, tuple[float, int | None]] = attrs.field(factory=dict)


def _time(micros: int | None) -> Any:
    return None if micros is None else from_micros(micros)


def step_partitions(session: AnySession) -> int:
    """The shuffle partitions of a live step in ``session`` (the stream's own, where adaptive
    execution is off): the session's ``spark.sql.shuffle.partitions``, at most as many as it runs
    tasks at once. Adaptive execution would coalesce a micro-batch's shuffles to about that many;
    without it, Spark's default of 200 makes every stage after a shuffle 200 tasks, most of them
    empty."""
    configured = int(session.conf.get("spark.sql.shuffle.partitions") or "200")
    return max(1, min(configured, parallelism(session)))


def _progress_json(p: Progress) -> str:
    """A progress record as JSON (times as microseconds): on Spark Connect the steps run on the
    server, which writes their records where the client reads them (``_Runner.records``)."""
    def micros(t: Any) -> int | None:
        return None if t is None else to_micros(t)
    return json.dumps({**attrs.asdict(p), "input_ctis": {k: micros(v) for k, v in p.input_ctis.items()},
                       "output_cti": micros(p.output_cti),
                       # pairs: a partition value may be an int, which a JSON key cannot be
                       "partition_ctis": {k: [[value, micros(v)] for value, v in parts.items()]
                                          for k, parts in p.partition_ctis.items()}})


def _progress_of(text: str) -> Progress:
    fields = json.loads(text)
    fields["input_ctis"] = {k: None if v is None else from_micros(v) for k, v in fields["input_ctis"].items()}
    fields["output_cti"] = None if fields["output_cti"] is None else from_micros(fields["output_cti"])
    fields["arrival_went_back"] = {k: ArrivalWentBack(**v) for k, v in fields.get("arrival_went_back", {}).items()}
    fields["partition_ctis"] = {k: {value: None if v is None else from_micros(v) for value, v in pairs}
                                for k, pairs in fields.get("partition_ctis", {}).items()}
    fields["phases"] = {k: (v[0], v[1]) for k, v in fields.get("phases", {}).items()}
    return Progress(**fields)


def went_back_message(query: str, name: str, batch: int, back: ArrivalWentBack, timestamps: bool = False) -> str:
    """The warning of a micro-batch in which input ``name``'s arrival went back (``timestamps``: its
    arrival column holds timestamps, shown as such)."""
    def shown(value: int) -> str:
        return from_micros(value).isoformat() if timestamps else str(value)

    return (f"query {query!r}, micro-batch {batch}: input {name!r} received rows with arrival values from "
            f"{shown(back.least)}, before {shown(back.greatest_before)}, the greatest of its earlier micro-batches; "
            "their events can be late by the CTIs already committed (dropped or adjusted by the policy). A file "
            "source takes "
            "the files of one modification time in directory order: write one file per trigger with increasing "
            "modification times and names, or read from Kafka (docs/streaming.md, 'Why events of a stream are late')")


_NUMBERS = itertools.count(1)
#: the feed directories of the queries this process started, by the input node ``as_stream`` returns
_FEEDS: dict[nodes.Input, str] = {}


def feed_columns(released_edges: DataFrame, cti: int | None, payload: list[str], batch: int,
                 spark: AnySession) -> DataFrame:
    """The feed rows of one micro-batch: its released edges (``edge`` START/END, ``start``, ``end``
    on END edges) then a CTI row at the output CTI, all arriving at ``batch``."""
    edges = released_edges.select(
        F.lit("INSERT").alias("kind"),
        F.when(F.col(EDGE_KIND) == EdgeKind.START.value, F.lit("START")).otherwise(F.lit("END")).alias("edge"),
        F.col(START).alias("start"),
        F.when(F.col(EDGE_KIND) == EdgeKind.END.value, F.col(EDGE_TIME)).alias("end"),
        F.lit(batch).cast("long").alias("arrival"), *payload)
    if cti is None:
        return edges
    row = spark.range(1).select(
        F.lit("CTI").alias("kind"), F.lit(None).cast("string").alias("edge"), F.lit(cti).cast("long").alias("start"),
        F.lit(None).cast("long").alias("end"), F.lit(batch).cast("long").alias("arrival"),
        *[F.lit(None).cast(released_edges.schema[name].dataType).alias(name) for name in payload])
    return edges.unionByName(row)


def sink_columns(released: DataFrame, output: Shape, payload: list[str]) -> DataFrame:
    """What the sink holds: ``start``, ``end`` (UTC timestamps; an open end is ``9999-12-31
    23:59:59.999999``) and the payload fields — or, for EDGE output, ``edge``, ``time``, ``start``
    and the payload fields."""
    if output is Shape.EDGE:
        return released.select(F.col(EDGE_KIND).alias("edge"), F.timestamp_micros(F.col(EDGE_TIME)).alias("time"),
                               F.timestamp_micros(F.col(START)).alias("start"), *payload)
    return user_columns(released, payload)


class _Query:
    """One query of a running query: its plan, its sink, its feed and its carried states (under
    ``root``)."""

    def __init__(self, spark: AnySession, name: str, plan: Plan, sink: str, root: str, format: str,
                 options: Mapping[str, str], output: Shape, feed: bool, late_sink: str | None = None) -> None:
        self.spark = spark
        self.name = name
        self.plan = plan
        self.sink = sink.rstrip("/")
        self.format = format
        self.options = options
        self.output = output
        self.feed = f"{root}/feed" if feed else None
        self.late_sink = None if late_sink is None else late_sink.rstrip("/")
        self.store = StateStore(spark, root)
        self.files = self.store.files
        #: a Delta sink's application id (``txnAppId``), kept in the checkpoint
        self.delta_app = app_id(self.files, self.store.root) if format == DELTA else None

    def reading(self, views: Mapping[str, str], session: AnySession) -> _Query:
        """This query with each of its static inputs in ``views`` (input name: global temporary
        view) read from its view in ``session``; the query itself if it has none."""
        names = sorted(n for n in self.plan.static if n in views)
        if not names:
            return self
        bindings = dict(self.plan.bindings)
        for name in names:
            bindings[name] = attrs.evolve(bindings[name], source=session.table(views[name]))
        reading = copy.copy(self)
        reading.plan = attrs.evolve(self.plan, bindings=bindings)
        return reading

    def previous(self, batch: int, session: SparkSession) -> Carried:
        latest = self.store.latest(before=batch)
        return empty_carried(self.plan) if latest is None else self.store.carried(latest, session)

    def check_checkpoint(self) -> None:
        """Refuses a checkpoint that belongs to another query or to one stopped with flush."""
        latest = self.store.latest()
        if latest is None:
            return
        state = self.store.state(latest)
        if state.signature != self.plan.signature:
            raise BindingError(f"the checkpoint under {self.store.root} belongs to another query "
                               f"({state.signature}); this one is {self.plan.signature}: use a new checkpoint")
        if state.flushed:
            raise BindingError(f"the checkpoint under {self.store.root} belongs to a query that was stopped with "
                               "flush: its output is complete; start with a new checkpoint")

    @property
    def flushes(self) -> bool:
        """Whether an input of the query gets a final INFINITY CTI when the run stops."""
        settings = [b.advance_time for b in self.plan.bindings.values()]
        return any(s is not None and s.generation is not None and s.generation.flush for s in settings)

    def run(self, carried: Carried, new: Mapping[str, DataFrame], batch: int, final: bool, session: SparkSession,
            scanned: Mapping[str, Ingress] | None = None, record_phases: bool = False) -> Progress:
        """One step in ``session``: writes what it releases to the sink, its EDGE output to the feed,
        then commits its state. ``scanned``: the new rows scanned already, for several queries;
        ``record_phases``: record where its time goes (``Progress.phases``)."""
        began = time.time()
        with ExitStack() as recorded:
            # the step's phases recorded in this (the streaming) thread: a recording is a context
            # variable of the thread that runs the step
            phases = recorded.enter_context(recording(self.spark)) if record_phases else None
            with counting_jobs(self.spark, f"streamql: {self.name}, micro-batch {batch}") as jobs:
                committed, rows, outcome, count = self._step_once(carried, new, batch, final, session, scanned)
        seconds = time.time() - began
        # the jobs outside every phase ran in the micro-batch's job group, each phase's in its own
        step_jobs = jobs.jobs if phases is None or jobs.jobs is None or phases.jobs is None else jobs.jobs + phases.jobs
        by_phase: dict[str, tuple[float, int | None]] = {}
        if phases is not None:
            by_phase = {p.name: (p.seconds, jobs.jobs if p.name == "other" else p.jobs)
                        for p in phases.by_name.values()}
        state = committed.state
        for name, back in sorted(outcome.arrival_went_back.items()):
            b = self.plan.bindings[name]
            timestamps = b.arrival is not None and isinstance(b.source.schema[b.arrival].dataType, ST.TimestampType)
            warnings.warn(went_back_message(self.name, b.name, batch, back, timestamps), ArrivalOrderWarning,
                          stacklevel=2)
        # a partitioned input's partitions are internal inputs of the plan: reported by the user's
        # input name, its CTI the least of its declared partitions'
        input_rows: dict[str, int] = {}
        for name, n in outcome.input_rows.items():
            input_rows[self.plan.bindings[name].name] = input_rows.get(self.plan.bindings[name].name, 0) + n
        ctis: dict[str, list[int | None]] = {}
        partition_ctis: dict[str, dict[int | str, Any]] = {}
        for name, i in state.inputs.items():
            b = self.plan.bindings[name]
            if b.part is None:
                ctis[name] = [i.cti]
            elif b.part != UNDECLARED:
                ctis.setdefault(b.name, []).append(i.cti)
                partition_ctis.setdefault(b.name, {})[b.part_value if b.part_value is not None else ""] = \
                    None if i.cti is None else from_micros(i.cti)
        return Progress(
            batch=batch, input_rows=input_rows, released=count,
            input_ctis={name: _time(least_cti(tuple(cs))) for name, cs in ctis.items()},
            output_cti=None if state.out_cti is None else from_micros(state.out_cti),
            dropped=state.dropped, adjusted=state.adjusted, bad_rows=state.bad_rows, state_rows=rows,
            started=began, seconds=seconds, query=self.name, jobs=step_jobs, phases=by_phase,
            arrival_went_back={self.plan.bindings[n].name: back for n, back in outcome.arrival_went_back.items()},
            partition_ctis=partition_ctis)

    def _step_once(self, carried: Carried, new: Mapping[str, DataFrame], batch: int, final: bool,
                   session: SparkSession, scanned: Mapping[str, Ingress] | None) -> tuple[Carried, int, Step, int]:
        """``_step``, once more from the committed files if the state in memory is gone."""
        try:
            with building():
                return self._step(carried, new, batch, final, session, scanned)
        except StreamqlError:
            raise
        except Exception:
            if not self.store.in_memory(carried):
                raise
            # the state in memory is gone (an executor lost with its blocks): the step again from
            # the committed files, as after a crash (what it published already stays as it is)
            self.store.forget()
            carried = self.store.load(carried.state.batch, session)
            with building():
                return self._step(carried, new, batch, final, session, scanned)

    def _step(self, carried: Carried, new: Mapping[str, DataFrame], batch: int, final: bool, session: SparkSession,
              scanned: Mapping[str, Ingress] | None) -> tuple[Carried, int, Step, int]:
        """The step's jobs: its scan's, one that writes the sink (and computes the step's output),
        one that writes the feed (if any), one that writes the state."""
        with phase("step plan"):  # the lazy plan of the step (its scan's and range borders' jobs apart)
            outcome: Step = step(session, self.plan, carried, new, batch, final=final, scanned=scanned)
        try:
            payload = self.plan.payload
            observed = outcome.observed()
            released = observed.frames[self.output]
            if self.delta_app is not None:
                # one idempotent Delta commit (txnAppId, txnVersion = the micro-batch) if it released
                # anything; staged in the checkpoint, the write that computes the step
                appended = sink_columns(released, self.output, payload).withColumn(MICRO_BATCH, F.lit(batch))
                with phase("sink write"):
                    append_once(appended, self.sink, f"{self.store.root}/_staging", self.delta_app, batch,
                                self.files, keep=lambda: observed.rows(self.output) > 0)
            else:
                # staged in the sink's hidden ``_staging`` directory, which batch readers skip; written
                # even when empty (the write computes the step), published only when it is not
                with phase("sink write"):
                    self.files.publish(sink_columns(released, self.output, payload),
                                       f"{self.sink}/{MICRO_BATCH}={batch}", self.format, f"{self.sink}/_staging",
                                       self.options, keep=lambda: observed.rows(self.output) > 0)
            if self.feed is not None:
                edges = observed.frames[Shape.EDGE]
                cti = outcome.out_cti
                # staged outside the feed: its readers list the directory as it grows
                with phase("feed write"):
                    self.files.publish(feed_columns(edges, cti, payload, batch, session),
                                       f"{self.feed}/{MICRO_BATCH}={batch}", "parquet", f"{self.store.root}/_staging",
                                       keep=lambda: cti != carried.state.out_cti or observed.rows(Shape.EDGE) > 0)
            if self.late_sink is not None:
                with phase("late write"):
                    self._publish_late(outcome, batch)
            with phase("carry"):  # the state to carry: the retention floors' jobs are phases of their own
                carrying = outcome.carry(observed)
            with phase("state write"):
                committed, rows = self.store.commit(carrying)
        finally:
            outcome.unpersist()
        return committed, rows, outcome, observed.rows(self.output)


    def _publish_late(self, outcome: Step, batch: int) -> None:
        """The step's late records to ``<late_sink>/micro_batch=<id>`` (published only if there are
        any; kept as it is when a repeated micro-batch finds it there)."""
        assert self.late_sink is not None
        frames: dict[str, tuple[PayloadSchema, DataFrame]] = {}
        for name, records in sorted(outcome.late.items()):
            frame = records.frame
            b = self.plan.bindings[name]
            if b.part is not None:  # a partition of a partitioned input: under the input's name
                frame = with_partition(frame, F.lit(b.part_value).cast(b.source.schema[b.partition or ""].dataType))
                if b.name in frames:
                    frame = frames[b.name][1].unionByName(frame, allowMissingColumns=True)
            frames[b.name] = (b.node.schema, frame)
        if not frames:
            return
        rows, options = written_columns(late_frame(frames), self.format)
        counted = Observation()
        rows = rows.observe(counted, F.count(F.lit(1)).alias("rows"))

        def any_rows() -> bool:
            metrics = observed_metrics(counted)
            return metrics is not None and int(metrics["rows"]) > 0

        if self.delta_app is not None:  # a Delta table too, one idempotent commit per micro-batch with records
            append_once(rows.withColumn(MICRO_BATCH, F.lit(batch)), self.late_sink, f"{self.store.root}/_staging",
                        self.delta_app, batch, self.files, keep=any_rows)
            return
        self.files.publish(rows, f"{self.late_sink}/{MICRO_BATCH}={batch}", self.format, f"{self.late_sink}/_staging",
                           options, keep=any_rows)


class _Runner:
    """Runs the micro-batches of a running query's queries (one for ``start``, several for
    ``start_many``); Spark calls ``run_batch`` from its streaming thread."""

    def __init__(self, spark: AnySession, queries: Mapping[str, _Query], streaming: list[str],
                 many: bool = False) -> None:
        self.spark = spark
        self.queries = dict(queries)
        self.streaming = streaming  # the inputs read from the unioned stream, by position
        self.many = many  # started with start_many: as_stream and result need a query's name
        self.lock = threading.Lock()
        self.progress: list[Progress] = []
        #: record each step's phases (``RunningQuery.record_phases``); off: no recording at all
        self.record_phases = False
        # on Spark Connect the micro-batches run on the server (foreachBatch there): each step's
        # record goes to <query root>/progress/<run>/, which ``records`` reads
        self.connect = is_connect(spark)
        self.run_id = uuid.uuid4().hex
        #: on Spark Connect, the global temporary view of each static input, by input name
        #: (``share_static``)
        self.views: dict[str, str] = {}

    def __getstate__(self) -> dict[str, Any]:
        # on Spark Connect, foreachBatch sends ``run_batch`` (and so the runner) to the server
        state = dict(self.__dict__)
        del state["lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()

    def records(self) -> list[Progress]:
        """The progress records of the micro-batches run so far, oldest first: on a classic session
        this process ran them; on Spark Connect the server did, and wrote them down."""
        if not self.connect:
            return list(self.progress)
        found = []
        for query in self.queries.values():
            where = f"{query.store.root}/progress/{self.run_id}"
            found += [(name, query.files.read_text(f"{where}/{name}")) for name in query.files.children(where)
                      if name.endswith(".json")]
        return [_progress_of(text) for _, text in sorted(found)]

    def check_checkpoint(self) -> None:
        for query in self.queries.values():
            query.check_checkpoint()

    def share_static(self) -> None:
        """On Spark Connect, each static input as a global temporary view, which the steps read by
        name in their own session (``drop_static`` drops them); nothing on a classic session.

        The steps run in the server's ``foreachBatch`` session, where a DataFrame of the client's
        session cannot be combined with the micro-batch (``SESSION_NOT_SAME``); a global temporary
        view belongs to the Spark application, whose sessions all read it. The view holds the
        bound DataFrame as it is (rows the client sent: the binder's checkpoint, so its partitions
        stay those the scan numbers), and the queries' plans read the view instead, so the runner
        that ``foreachBatch`` sends to the server carries the view's name, not the client's
        DataFrame."""
        if not self.connect:
            return
        bindings = {name: q.plan.bindings[name] for q in self.queries.values() for name in q.plan.static}
        database = self.spark.conf.get("spark.sql.globalTempDatabase", "global_temp") or "global_temp"
        for index, name in enumerate(sorted(bindings)):
            view = f"streamql_{self.run_id}_{index}"
            try:
                bindings[name].source.createOrReplaceGlobalTempView(view)
            except PySparkException as exc:
                self.drop_static()
                raise BindingError(
                    f"input {name!r} is bound to a static DataFrame, which a running query over Spark Connect "
                    "reads through a global temporary view (its steps run in the server's foreachBatch session, "
                    f"not in the client's); this server did not create one: {exc}. Read the input as a stream "
                    "too (e.g. spark.readStream on its files or table), or run the query on a classic session "
                    "(docs/spark-connect.md)") from exc
            self.views[name] = f"{database}.{view}"
        self.queries = {key: query.reading(self.views, self.spark) for key, query in self.queries.items()}

    def drop_static(self) -> None:
        """Drops the global temporary views of ``share_static`` (a restart makes its own)."""
        for qualified in self.views.values():
            self.spark.catalog.dropGlobalTempView(qualified.rsplit(".", 1)[1])

    def _split(self, df: DataFrame) -> dict[str, DataFrame]:
        if len(self.streaming) == 1:
            return {self.streaming[0]: df}
        return {name: df.filter(F.col(_INPUT) == index).select(f"_sq_in{index}.*")
                for index, name in enumerate(self.streaming)}

    def run_batch(self, df: DataFrame, batch: int) -> None:
        with self.lock:
            self.check_checkpoint()
            # Spark runs a micro-batch again that was done (by some of the queries) before a crash
            due = [q for q in self.queries.values() if not q.store.has(batch)]
            if not due:
                return
            # several queries read the micro-batch, or a partitioned input is split by partition value
            shared = len(due) > 1 or any(q.plan.unread for q in due)
            if shared:  # every query's scan and step reads the micro-batch: read its files once
                df = df.persist(StorageLevel.MEMORY_AND_DISK)
            # the micro-batch's session is the stream's own (a clone of the user's): its steps run
            # without adaptive execution, which would make every shuffle of a small micro-batch a
            # Spark job of its own (Structured Streaming's stateful operators run without it too),
            # and so with no partitions coalesced: their shuffles take as many partitions as the
            # session runs tasks at once, not Spark's default of 200 (docs/decisions.md)
            session = df.sparkSession
            if session is not self.spark:
                session.conf.set("spark.sql.adaptive.enabled", "false")
                session.conf.set("spark.sql.shuffle.partitions", str(step_partitions(session)))
            try:
                # a 64-bit overflow is an error in the steps too, whatever the session's ANSI mode
                with ansi_mode(session):
                    self._run(due, self._split(df), batch, final=False, session=session)
            finally:
                if shared:
                    df.unpersist()

    def finish(self) -> None:
        """The final step when the query stops with flush: no new rows, final INFINITY CTIs (for
        each query one of whose inputs flushes)."""
        with self.lock:
            self.check_checkpoint()
            by_batch: dict[int, list[_Query]] = {}
            for query in self.queries.values():
                if query.flushes:
                    latest = query.store.latest()
                    by_batch.setdefault(0 if latest is None else latest + 1, []).append(query)
            for batch, due in sorted(by_batch.items()):
                # a session of either kind: the step uses only the DataFrame API both have
                with ansi_mode(self.spark):
                    self._run(due, {}, batch, final=True, session=cast(SparkSession, self.spark))

    def _run(self, due: list[_Query], new: Mapping[str, DataFrame], batch: int, final: bool,
             session: SparkSession) -> None:
        due = [q.reading(self.views, session) for q in due]  # static inputs from their views (Spark Connect)
        carried = [q.previous(batch, session) for q in due]
        scanned = self._scan_once(due, carried, new, final, session) if len(due) > 1 else None
        try:
            for query, before in zip(due, carried):
                record = query.run(before, new, batch, final, session, scanned, self.record_phases)
                self.progress.append(record)
                if self.connect:
                    query.files.write_text(f"{query.store.root}/progress/{self.run_id}/{batch:020d}-{query.name}.json",
                                           _progress_json(record))
        finally:
            for ingress in (scanned or {}).values():
                for frame in ingress.persisted:
                    frame.unpersist()

    def _scan_once(self, due: list[_Query], carried: list[Carried], new: Mapping[str, DataFrame],
                   final: bool, session: SparkSession) -> dict[str, Ingress] | None:
        """The new rows of every input the queries read, scanned once for all of them — from the
        scan state they carry, which is the same for every query reading the input (it depends on
        the input's rows alone). None if it is not (then each query scans for itself)."""
        states: dict[str, InputState] = {}
        bindings: dict[str, Binding] = {}
        static: set[str] = set()
        for query, before in zip(due, carried):
            for name in query.plan.scanned:
                state = before.state.inputs.get(name, InputState())
                if name in states and (states[name].scan, states[name].fed) != (state.scan, state.fed):
                    return None
                states[name] = state
                bindings[name] = query.plan.bindings[name]
            static |= query.plan.static
        return scan_new_rows(session, bindings, frozenset(static), states, new, final)


class RunningQuery(Generic[T]):
    """A query running on Structured Streaming (``Binder.start``), or several run together in one
    (``Binder.start_many``: ``queries`` by name).

    >>> running = binding.start(averages, sink="/data/out", checkpoint="/data/ck")  # doctest: +SKIP
    >>> running.process_all_available(); running.stop()                              # doctest: +SKIP
    """

    def __init__(self, name: str, queries: Mapping[str, Stream[Any]], runner: _Runner,
                 streaming_query: StreamingQuery) -> None:
        self.name = name
        #: the queries it runs, by name (for ``start``, the one query under the running query's name)
        self.queries = dict(queries)
        self._runner = runner
        self._streaming = streaming_query
        self._stopped = False

    @property
    def query(self) -> Stream[T]:
        """The query it runs (``start_many``: the only one, else ``BindingError``; see ``queries``)."""
        return self.queries[self._chosen(None).name]

    def _chosen(self, name: str | None) -> _Query:
        """The query named ``name`` (None: the only one)."""
        queries = self._runner.queries
        if name is None and len(queries) == 1:
            return next(iter(queries.values()))
        choices = ", ".join(map(repr, queries))
        if name is None:
            raise BindingError(f"running query {self.name!r} runs several queries: name one of {choices}")
        if name not in queries:
            raise BindingError(f"running query {self.name!r} runs no query named {name!r}; its queries are {choices}")
        return queries[name]

    @property
    def streaming_query(self) -> StreamingQuery:
        """Spark's handle on the underlying streaming query."""
        return self._streaming

    @property
    def is_active(self) -> bool:
        return bool(self._streaming.isActive)

    @property
    def progress(self) -> list[Progress]:
        """One record per micro-batch this process ran, oldest first (``start_many``: one per
        micro-batch and query, ``Progress.query`` naming it)."""
        return self._runner.records()

    def record_phases(self, on: bool = True) -> None:
        """From the next micro-batch on, record where each step's time goes: ``Progress.phases``
        holds its wall seconds and Spark jobs per phase (the scan's passes, the sink's write, the
        retention floors, the state's write, ...; ``streamql.spark.runtime.phases``). Off by
        default: each phase then runs its jobs in a job group of its own, which costs a little.

        >>> running.record_phases(); running.process_all_available()  # doctest: +SKIP
        >>> running.last_progress.phases["state write"]                 # doctest: +SKIP
        (0.41, 1)
        """
        self._runner.record_phases = on

    @property
    def last_progress(self) -> Progress | None:
        progress = self._runner.records()
        return progress[-1] if progress else None

    def result(self, name: str | None = None) -> Result[T]:
        """The counts so far and the output CTI (the events are in the sink); ``name``: which
        query (``start_many``)."""
        store = self._chosen(name).store
        latest = store.latest()
        if latest is None:
            return Result(events=[], edges=[], dropped=0, adjusted=0, bad_rows=0, final_cti=None)
        state = store.state(latest)
        return Result(events=[], edges=[], dropped=state.dropped, adjusted=state.adjusted, bad_rows=state.bad_rows,
                      final_cti=None if state.out_cti is None else from_micros(state.out_cti))

    def process_all_available(self) -> None:
        """Blocks until every row the sources have now is processed (for tests and examples)."""
        self._streaming.processAllAvailable()

    def await_termination(self, timeout: float | None = None) -> bool | None:
        """Blocks until the query stops (or ``timeout`` seconds pass: returns whether it stopped)."""
        if timeout is None:
            self._streaming.awaitTermination()
            return None
        return bool(self._streaming.awaitTermination(max(1, math.ceil(timeout))))

    def stop(self, flush: bool = True) -> None:
        """Stops the query. Inputs with ``AdvanceTimeGeneration(flush=True)`` then get their final
        INFINITY CTI and what it releases is written (a final micro-batch) — unless ``flush=False``,
        which leaves the checkpoint ready for a restart that continues where this run stopped.
        Call ``process_all_available()`` first to stop only after the rows that have arrived."""
        if self._stopped:
            return
        self._streaming.stop()
        self._stopped = True
        try:
            if flush and any(q.flushes for q in self._runner.queries.values()):
                self._runner.finish()
        finally:
            self._runner.drop_static()

    def exception(self) -> Any:
        """The exception that stopped the query, or None."""
        return self._streaming.exception()

    def as_stream(self, name: str | None = None) -> Stream[T]:
        """This query's output as an input of other queries: its EDGE output and output CTIs, read
        from the feed as they are released. ``Binder.start`` binds it by itself. ``name``: which
        query, when it runs several (``start_many``); the input is then named
        ``<running query's name>.<name>``.

        >>> alerts = running.as_stream("busy").where(lambda e: e.consumption > 100)  # doctest: +SKIP
        """
        query = self._chosen(name)
        if query.feed is None:
            raise BindingError(f"query {self.name!r} was started with feed=False: its output cannot be read as a stream")
        input_name = f"{self.name}.{query.name}" if self._runner.many else self.name
        node = nodes.Input(input_name, query.plan.query.schema, Shape.EDGE)
        _FEEDS[node] = query.feed
        return Stream(node)


def feed_binding(spark: AnySession, node: nodes.Input) -> Binding | None:
    """The binding of an input that ``as_stream`` returned: the feed directory as a streaming source."""
    feed = _FEEDS.get(node)
    if feed is None:
        return None
    fields = [ST.StructField("kind", ST.StringType()), ST.StructField("edge", ST.StringType()),
              ST.StructField("start", ST.LongType()), ST.StructField("end", ST.LongType()),
              ST.StructField("arrival", ST.LongType())]
    fields += [ST.StructField(f.name, spark_type(f.type), True) for f in node.schema.fields]
    # the partition column of the feed's directories, named in the schema so that it is one from the
    # start (a feed that is empty when the reader starts would otherwise change schema later)
    fields.append(ST.StructField(MICRO_BATCH, ST.IntegerType()))
    Files(spark).mkdirs(feed)  # the producer may not have released anything yet
    source = spark.readStream.schema(ST.StructType(fields)).parquet(feed)
    return Binding(node, source, "start", "end", "edge", "kind", "arrival", None, "error")


def _chosen_bindings(spark: AnySession, bindings: Mapping[str, Binding], q: Stream[Any]) -> dict[str, Binding]:
    """The bindings of the inputs ``q`` reads (an input ``as_stream`` returned binds itself) and of
    those whose CTIs they import."""
    read = nodes.inputs_of(q.node)
    chosen: dict[str, Binding] = {}
    for input_name, node in read.items():
        b = bindings.get(input_name)
        if b is None:
            b = feed_binding(spark, node)
        if b is None:
            raise BindingError(f"the query reads an input that is not bound: {input_name!r} (bind it, or read a "
                               "running query with as_stream())")
        if b.node != node:
            raise BindingError(f"input {input_name!r} is bound as {b.node.schema.name}/{b.node.shape.name} but the "
                               f"query reads it as {node.schema.name}/{node.shape.name}")
        chosen[input_name] = b
    for b in list(chosen.values()):
        imported = b.advance_time.import_ if b.advance_time is not None else None
        if imported is not None and imported.from_input not in chosen:
            if imported.from_input not in bindings:
                raise BindingError(f"input {b.name!r} imports the CTIs of {imported.from_input!r}, which is not bound")
            chosen[imported.from_input] = bindings[imported.from_input]
    if not any(b.source.isStreaming for b in chosen.values()):
        raise BindingError("Binder.start runs queries over streaming DataFrames (spark.readStream...); every input "
                           "of this query is static: use run/collect/write")
    return chosen


def _launch(runner: _Runner, chosen: Mapping[str, Binding], checkpoint: str, query_name: str,
            trigger: str | None) -> StreamingQuery:
    """The one Structured Streaming query: the streaming inputs' rows in one stream (tagged by input
    when there are several), each micro-batch handed to ``runner``."""
    streaming = runner.streaming
    if len(streaming) == 1:
        source = chosen[streaming[0]].source
    else:
        parts = []
        for index, input_name in enumerate(streaming):
            df = chosen[input_name].source
            parts.append(df.select(F.lit(index).alias(_INPUT),
                                   F.struct(*[F.col(f"`{c}`") for c in df.columns]).alias(f"_sq_in{index}")))
        source = parts[0]
        for more in parts[1:]:
            source = source.unionByName(more, allowMissingColumns=True)
    writer = (source.writeStream.foreachBatch(runner.run_batch)
              .option("checkpointLocation", f"{checkpoint.rstrip('/')}/spark").queryName(query_name))
    if trigger is not None:
        writer = writer.trigger(processingTime=trigger)
    return writer.start()


def _launched(runner: _Runner, chosen: Mapping[str, Binding], checkpoint: str, query_name: str,
              trigger: str | None) -> StreamingQuery:
    """``_launch`` with the static inputs shared with the steps' session first (Spark Connect),
    and dropped again if the query does not start."""
    runner.share_static()
    try:
        return _launch(runner, chosen, checkpoint, query_name, trigger)
    except BaseException:
        runner.drop_static()
        raise


#: what a checkpoint of ``start_many`` lists: the names of its queries
_MANY = "queries.json"


def _check_live_over_connect(spark: AnySession) -> None:
    """Running queries read observed metrics (``Observation``) in every step; PySpark 3.5's Spark
    Connect client never fills an ``Observation`` in (its ``get`` fails), so there a running query
    is refused before it starts (docs/compatibility.md)."""
    if is_connect(spark) and pyspark_version() < (4, 0):
        import pyspark

        raise BindingError(f"running queries (start, start_many) over Spark Connect need PySpark 4.0 or later: "
                           f"this is PySpark {pyspark.__version__}, whose Spark Connect client gives no observed "
                           "metrics (DataFrame.observe with an Observation), which each step reads; run the query "
                           "on a classic session, or batch runs (run, write) over Spark Connect")


def start(spark: AnySession, bindings: Mapping[str, Binding], q: Stream[T], *, sink: str, checkpoint: str,
          format: str, name: str | None, output: Shape, trigger: str | None, feed: bool,
          late_sink: str | None = None) -> RunningQuery[T]:
    """``Binder.start``: the checks, the unioned source, the ``foreachBatch`` runner."""
    _check_live_over_connect(spark)
    if not isinstance(q, Stream):
        raise BindingError(f"expected a query (sq.Stream), got {q!r}")
    if not isinstance(output, Shape):
        raise BindingError(f"output must be a sq.Shape, got {output!r}")
    options = writer_options(format, q.node.schema, "sink")
    chosen = _chosen_bindings(spark, bindings, q)
    streaming = sorted(n for n, b in chosen.items() if b.source.isStreaming)
    static = frozenset(n for n in chosen if n not in streaming)
    shapes = (output,) if not feed or output is Shape.EDGE else (output, Shape.EDGE)
    plan = planned(q.node, chosen, shapes, static)
    query_name = name or f"streamql_{next(_NUMBERS)}"
    root = f"{checkpoint.rstrip('/')}/streamql"
    if late_sink is not None and (not isinstance(late_sink, str) or late_sink.rstrip("/") == sink.rstrip("/")):
        raise BindingError(f"late_sink must be a path other than the sink's, got {late_sink!r}")
    query = _Query(spark, query_name, plan, sink, root, format, options, output, feed, late_sink)
    if query.files.exists(f"{root}/{_MANY}"):
        raise BindingError(f"the checkpoint under {root} belongs to queries started with start_many: use a new "
                           "checkpoint")
    runner = _Runner(spark, {query_name: query}, streaming)
    runner.check_checkpoint()  # a checkpoint of another query, or of a finished one, fails here
    return RunningQuery(query_name, {query_name: q}, runner, _launched(runner, chosen, checkpoint, query_name, trigger))


_QUERY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def start_many(spark: AnySession, bindings: Mapping[str, Binding], queries: Mapping[str, Stream[Any]], *,
               sinks: Mapping[str, str], checkpoint: str, format: str, name: str | None) -> RunningQuery[Any]:
    """``Binder.start_many``: one ``_Query`` per query (its states and feed under
    ``<checkpoint>/streamql/queries/<name>``), one runner and one Structured Streaming query over
    the streaming inputs of them all."""
    _check_live_over_connect(spark)
    root = f"{checkpoint.rstrip('/')}/streamql"
    chosen: dict[str, Binding] = {}
    each: dict[str, _Query] = {}
    for query_name, q in queries.items():
        with errors_naming([query_name]):
            if not _QUERY_NAME.fullmatch(query_name):
                raise BindingError("a query name of start_many names its directory in the checkpoint: use letters, "
                                   "digits, '_', '-' and '.' (not first)")
            if not isinstance(q, Stream):
                raise BindingError(f"expected a query (sq.Stream), got {q!r}")
            options = writer_options(format, q.node.schema, "sink")
            its = _chosen_bindings(spark, bindings, q)
            static = frozenset(n for n, b in its.items() if not b.source.isStreaming)
            plan = planned(q.node, its, (Shape.INTERVAL, Shape.EDGE), static)
            each[query_name] = _Query(spark, query_name, plan, sinks[query_name], f"{root}/queries/{query_name}",
                                      format, options, Shape.INTERVAL, True)
            chosen.update(its)
    store = StateStore(spark, root)
    files = store.files
    if store.committed():
        raise BindingError(f"the checkpoint under {root} belongs to a query started with start: use a new checkpoint")
    names = sorted(queries)
    if files.exists(f"{root}/{_MANY}"):
        before = json.loads(files.read_text(f"{root}/{_MANY}"))
        if before != names:
            raise BindingError(f"the checkpoint under {root} belongs to the queries {', '.join(map(repr, before))}; "
                               f"these are {', '.join(map(repr, names))}: start the same queries, or use a new "
                               "checkpoint")
    streaming = sorted(n for n, b in chosen.items() if b.source.isStreaming)
    running_name = name or f"streamql_{next(_NUMBERS)}"
    runner = _Runner(spark, each, streaming, many=True)
    for query_name, query in each.items():
        with errors_naming([query_name]):
            query.check_checkpoint()  # a checkpoint of other queries, or of finished ones, fails here
    if not files.exists(f"{root}/{_MANY}"):
        files.write_text(f"{root}/{_MANY}", json.dumps(names))
    return RunningQuery(running_name, queries, runner, _launched(runner, chosen, checkpoint, running_name, None))


__all__ = ["ArrivalWentBack", "MICRO_BATCH", "Progress", "RunningQuery", "feed_columns", "sink_columns", "start", "start_many"]
