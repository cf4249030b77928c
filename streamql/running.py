"""Running queries on Structured Streaming: ``Binder.start`` and ``RunningQuery`` (docs/streaming.md).

Every micro-batch runs one incremental step (``streamql.spark.incremental``) inside
``foreachBatch``. What a step releases goes to ``<sink>/micro_batch=<id>``, its EDGE output and
output CTI to the query's *feed* (``<checkpoint>/streamql/feed/micro_batch=<id>``, which
``RunningQuery.as_stream`` lets other queries read), and its carried state to
``<checkpoint>/streamql/state-<id>``. Each directory is written under a temporary name and
renamed when whole, in that order, so a micro-batch that Spark runs again after a crash finds
what it wrote before and writes nothing twice; Spark's own progress lives in
``<checkpoint>/spark``.
"""
from __future__ import annotations

import itertools
import math
import threading
import time
from typing import Any, Generic, Mapping, TypeVar

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as ST
from pyspark.sql.streaming.query import StreamingQuery

from streamql.errors import BindingError
from streamql.events import EdgeKind, Result, Shape
from streamql.query import nodes
from streamql.query.stream import Stream
from streamql.spark.incremental import Carried, Plan, StateStore, Step, empty_carried, step
from streamql.spark.ingress import Binding
from streamql.spark.release import EDGE_KIND, EDGE_TIME, user_columns, writer_options
from streamql.spark.schema import spark_type
from streamql.spark.columns import START
from streamql.time import from_micros

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


_NUMBERS = itertools.count(1)
#: the feed directories of the queries this process started, by the input node ``as_stream`` returns
_FEEDS: dict[nodes.Input, str] = {}


def feed_columns(released_edges: DataFrame, cti: int | None, payload: list[str], batch: int,
                 spark: SparkSession) -> DataFrame:
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


class _Runner:
    """Runs the steps of one query; Spark calls ``run_batch`` from its streaming thread."""

    def __init__(self, spark: SparkSession, plan: Plan, streaming: list[str], sink: str, checkpoint: str,
                 format: str, options: Mapping[str, str], output: Shape, feed: bool) -> None:
        self.spark = spark
        self.plan = plan
        self.streaming = streaming  # the inputs read from the unioned stream, by position
        self.sink = sink.rstrip("/")
        self.format = format
        self.options = options
        self.output = output
        self.feed = f"{checkpoint.rstrip('/')}/streamql/feed" if feed else None
        self.store = StateStore(spark, f"{checkpoint.rstrip('/')}/streamql")
        self.lock = threading.Lock()
        self.progress: list[Progress] = []

    def _previous(self, batch: int) -> Carried:
        latest = self.store.latest(before=batch)
        return empty_carried(self.plan) if latest is None else self.store.load(latest)

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

    def _split(self, df: DataFrame) -> dict[str, DataFrame]:
        if len(self.streaming) == 1:
            return {self.streaming[0]: df}
        return {name: df.filter(F.col(_INPUT) == index).select(f"_sq_in{index}.*")
                for index, name in enumerate(self.streaming)}

    def run_batch(self, df: DataFrame, batch: int) -> None:
        with self.lock:
            self.check_checkpoint()
            if self.store.has(batch):  # Spark runs a micro-batch again that was done before a crash
                return
            self._run(self._previous(batch), self._split(df), batch, final=False)

    def finish(self) -> None:
        """The final step when the query stops with flush: no new rows, final INFINITY CTIs."""
        with self.lock:
            self.check_checkpoint()
            latest = self.store.latest()
            batch = 0 if latest is None else latest + 1
            self._run(self._previous(batch), {}, batch, final=True)

    def _run(self, carried: Carried, new: dict[str, DataFrame], batch: int, final: bool) -> None:
        began = time.time()
        outcome: Step = step(self.spark, self.plan, carried, new, batch, final=final)
        try:
            payload = self.plan.payload
            released = outcome.released_now[self.output]
            count = outcome.released_counts[self.output]
            if count:
                # staged in the sink's hidden ``_staging`` directory, which batch readers skip
                self.store.publish(sink_columns(released, self.output, payload), f"{self.sink}/{MICRO_BATCH}={batch}",
                                   self.format, f"{self.sink}/_staging", self.options)
            if self.feed is not None:
                edges = outcome.released_now[Shape.EDGE]
                cti = outcome.carried.state.out_cti
                if cti != carried.state.out_cti or outcome.released_counts[Shape.EDGE]:
                    # staged outside the feed: its readers list the directory as it grows
                    self.store.publish(feed_columns(edges, cti, payload, batch, self.spark),
                                       f"{self.feed}/{MICRO_BATCH}={batch}", "parquet", f"{self.store.root}/_staging")
            committed = self.store.commit(outcome.carried)
        finally:
            outcome.unpersist()
        state = committed.state
        self.progress.append(Progress(
            batch=batch, input_rows=dict(outcome.input_rows), released=count,
            input_ctis={name: None if i.cti is None else from_micros(i.cti) for name, i in state.inputs.items()},
            output_cti=None if state.out_cti is None else from_micros(state.out_cti),
            dropped=state.dropped, adjusted=state.adjusted, bad_rows=state.bad_rows, state_rows=committed.rows(),
            started=began, seconds=time.time() - began))


class RunningQuery(Generic[T]):
    """A query running on Structured Streaming (``Binder.start``).

    >>> running = binding.start(averages, sink="/data/out", checkpoint="/data/ck")  # doctest: +SKIP
    >>> running.process_all_available(); running.stop()                              # doctest: +SKIP
    """

    def __init__(self, name: str, query: Stream[T], runner: _Runner, streaming_query: StreamingQuery) -> None:
        self.name = name
        self.query = query
        self._runner = runner
        self._streaming = streaming_query
        self._stopped = False

    @property
    def streaming_query(self) -> StreamingQuery:
        """Spark's handle on the underlying streaming query."""
        return self._streaming

    @property
    def is_active(self) -> bool:
        return bool(self._streaming.isActive)

    @property
    def progress(self) -> list[Progress]:
        """One record per micro-batch this process ran, oldest first."""
        return list(self._runner.progress)

    @property
    def last_progress(self) -> Progress | None:
        progress = self._runner.progress
        return progress[-1] if progress else None

    def result(self) -> Result[T]:
        """The counts so far and the output CTI (the events are in the sink)."""
        latest = self._runner.store.latest()
        if latest is None:
            return Result(events=[], edges=[], dropped=0, adjusted=0, bad_rows=0, final_cti=None)
        state = self._runner.store.state(latest)
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
        settings = [b.advance_time for b in self._runner.plan.bindings.values()]
        wants = any(s is not None and s.generation is not None and s.generation.flush for s in settings)
        if flush and wants:
            self._runner.finish()

    def exception(self) -> Any:
        """The exception that stopped the query, or None."""
        return self._streaming.exception()

    def as_stream(self) -> Stream[T]:
        """This query's output as an input of other queries: its EDGE output and output CTIs, read
        from the feed as they are released. ``Binder.start`` binds it by itself."""
        if self._runner.feed is None:
            raise BindingError(f"query {self.name!r} was started with feed=False: its output cannot be read as a stream")
        node = nodes.Input(self.name, self.query.node.schema, Shape.EDGE)
        _FEEDS[node] = self._runner.feed
        return Stream(node)


def feed_binding(spark: SparkSession, node: nodes.Input) -> Binding | None:
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
    StateStore(spark, feed).mkdirs(feed)  # the producer may not have released anything yet
    source = spark.readStream.schema(ST.StructType(fields)).parquet(feed)
    return Binding(node, source, "start", "end", "edge", "kind", "arrival", None, "error")


def start(spark: SparkSession, bindings: Mapping[str, Binding], q: Stream[T], *, sink: str, checkpoint: str,
          format: str, name: str | None, output: Shape, trigger: str | None, feed: bool) -> RunningQuery[T]:
    """``Binder.start``: the checks, the unioned source, the ``foreachBatch`` runner."""
    if not isinstance(q, Stream):
        raise BindingError(f"expected a query (sq.Stream), got {q!r}")
    if not isinstance(output, Shape):
        raise BindingError(f"output must be a sq.Shape, got {output!r}")
    options = writer_options(format, q.node.schema, "sink")
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
    for b in chosen.values():
        imported = b.advance_time.import_ if b.advance_time is not None else None
        if imported is not None and imported.from_input not in chosen:
            if imported.from_input not in bindings:
                raise BindingError(f"input {b.name!r} imports the CTIs of {imported.from_input!r}, which is not bound")
            chosen[imported.from_input] = bindings[imported.from_input]
    streaming = sorted(n for n, b in chosen.items() if b.source.isStreaming)
    if not streaming:
        raise BindingError("Binder.start runs queries over streaming DataFrames (spark.readStream...); every input "
                           "of this query is static: use run/collect/write")
    static = frozenset(n for n in chosen if n not in streaming)
    shapes = (output,) if not feed or output is Shape.EDGE else (output, Shape.EDGE)
    plan = Plan(q.node, chosen, shapes, static)
    query_name = name or f"streamql_{next(_NUMBERS)}"
    runner = _Runner(spark, plan, streaming, sink, checkpoint, format, options, output, feed)
    runner.check_checkpoint()  # a checkpoint of another query, or of a finished one, fails here
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
    return RunningQuery(query_name, q, runner, writer.start())


__all__ = ["MICRO_BATCH", "Progress", "RunningQuery", "feed_columns", "sink_columns", "start"]
