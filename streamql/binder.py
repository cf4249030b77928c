"""The user-facing ``Binder``: binds inputs to DataFrames, runs queries on Spark, returns results."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, Mapping, TypeVar

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streamql.advance_time import AdvanceTimeSettings
from streamql.errors import BindingError
from streamql.events import Edge, EdgeKind, Event, Result, Shape
from streamql.payload import sort_key
from streamql.query.nodes import Input, Node, inputs_of
from streamql.query.stream import Stream
from streamql.spark.arrival_scan import ScanState
from streamql.spark.ingress import END, START, Binding, Ingress, check_binding, run_ingress
from streamql.spark import esper as _esper  # noqa: F401 - registers the Esper-style operators
from streamql.spark import joins as _joins  # noqa: F401 - registers the multi-stream operators
from streamql.spark import windows as _windows  # noqa: F401 - registers the window operators
from streamql.spark.operators import Flow, compile_node
from streamql.spark.release import EDGE_KIND, EDGE_TIME, release, user_columns, writer_options
from streamql.spark.schema import collectable, payload_from_row
from streamql.time import from_micros

if TYPE_CHECKING:
    from streamql.running import RunningQuery

T = TypeVar("T")


@attrs.frozen
class _Execution(Generic[T]):
    """A query compiled over its scanned inputs: the output events before release, the output
    CTI and the counts."""

    node: Node
    events: DataFrame = attrs.field(eq=False)
    cti: int | None
    dropped: int
    adjusted: int
    bad_rows: int
    persisted: list[DataFrame] = attrs.field(eq=False)
    flows: Mapping[str, Flow] = attrs.field(eq=False)  # the scanned inputs

    def released(self, output: Shape) -> DataFrame:
        return release(self.events, self.cti, output, [f.name for f in self.node.schema.fields])

    def unpersist(self) -> None:
        for df in self.persisted:
            df.unpersist()

    def result(self, events: list[Event[T]], edges: list[Edge[T]]) -> Result[T]:
        return Result(events=events, edges=edges, dropped=self.dropped, adjusted=self.adjusted,
                      bad_rows=self.bad_rows, final_cti=None if self.cti is None else from_micros(self.cti))


class Binder:
    """Binds query inputs to Spark DataFrames and runs queries.

    A Binder is immutable: ``bind`` returns a new one.

    >>> binding = sq.Binder(spark).bind(readings, df, start="ts", advance_time=settings)  # doctest: +SKIP
    >>> events = binding.collect(averages)                                                 # doctest: +SKIP
    """

    def __init__(self, spark: SparkSession, _bindings: dict[str, Binding] | None = None) -> None:
        if not isinstance(spark, SparkSession):
            raise BindingError(f"Binder needs a SparkSession, got {spark!r}")
        self._spark = spark
        self._bindings: dict[str, Binding] = dict(_bindings or {})

    @property
    def spark(self) -> SparkSession:
        return self._spark

    def bind(self, stream: Stream[T], source: DataFrame, *, start: str, end: str | None = None,
             edge: str | None = None, kind: str | None = None, arrival: str | None = None,
             advance_time: AdvanceTimeSettings | None = None,
             bad_rows: Literal["error", "drop"] = "error") -> Binder:
        """Binds an input declared with ``sq.input`` to a DataFrame.

        ``start``/``end`` name timestamp or integer-microsecond columns (a POINT input takes only
        ``start``); ``kind`` a column of ``"INSERT"``/``"CTI"``; ``arrival`` the arrival order
        (default: the DataFrame's partition order). Columns named like the payload fields hold them.
        An EDGE input also needs ``edge``, a column of ``"START"``/``"END"``: an end edge carries its
        event's ``start`` and ``end`` and closes the open event with that start and payload
        (docs/edges.md).

        >>> sq.Binder(spark).bind(sessions, df, start="start", end="end", edge="edge")  # doctest: +SKIP
        """
        if not isinstance(stream, Stream) or not isinstance(stream.node, Input):
            raise BindingError("bind takes an input stream declared with sq.input(...), "
                               f"not a derived query ({stream!r})")
        if not isinstance(source, DataFrame):
            raise BindingError(f"input {stream.node.name!r}: bind needs a Spark DataFrame, got {type(source).__name__}")
        if bad_rows not in ("error", "drop"):
            raise BindingError(f"bad_rows must be 'error' or 'drop', got {bad_rows!r}")
        if advance_time is not None and not isinstance(advance_time, AdvanceTimeSettings):
            raise BindingError(f"advance_time must be sq.AdvanceTimeSettings, got {advance_time!r}")
        binding = Binding(stream.node, source, start, end, edge, kind, arrival, advance_time, bad_rows)
        check_binding(binding)
        return Binder(self._spark, {**self._bindings, stream.node.name: binding})

    # --- running ------------------------------------------------------------------------
    def _execute(self, q: Stream[T]) -> _Execution[T]:
        if not isinstance(q, Stream):
            raise BindingError(f"expected a query (sq.Stream), got {q!r}")
        read = inputs_of(q.node)
        missing = sorted(set(read) - set(self._bindings))
        if missing:
            raise BindingError(f"the query reads inputs that are not bound: {', '.join(missing)}")
        for name, node in read.items():
            if self._bindings[name].source.isStreaming:
                raise BindingError(f"input {name!r} is bound to a streaming DataFrame: run the query with "
                                   "Binder.start(q, sink=..., checkpoint=...)")
            if self._bindings[name].node != node:
                bound = self._bindings[name].node
                raise BindingError(f"input {name!r} is bound as {bound.schema.name}/{bound.shape.name} but the query "
                                   f"reads it as {node.schema.name}/{node.shape.name}")
        ingresses: dict[str, Ingress] = {}
        for name in self._scan_order(set(read)):
            ingresses[name] = self._scan(name, ingresses, read)
        flows = {name: Flow(ingresses[name].events, ingresses[name].final_cti, ingresses[name].finite_cti)
                 for name in read}
        output = compile_node(q.node, flows)
        counted = [ingresses[name] for name in read]
        persisted = [df for i in ingresses.values() for df in i.persisted]
        return _Execution(q.node, output.frame, output.cti, sum(i.dropped for i in counted),
                          sum(i.adjusted for i in counted), sum(i.bad_rows for i in counted), persisted, flows)

    def _scan_order(self, read: set[str]) -> list[str]:
        order: list[str] = []

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in path:
                raise BindingError("CTI imports form a cycle: " + " -> ".join(path + (name,)))
            if name in order:
                return
            if name not in self._bindings:
                raise BindingError(f"input {path[-1]!r} imports the CTIs of {name!r}, which is not bound")
            settings = self._bindings[name].advance_time
            if settings is not None and settings.import_ is not None:
                visit(settings.import_.from_input, path + (name,))
            order.append(name)

        for name in sorted(read):
            visit(name, ())
        return order

    def _scan(self, name: str, done: dict[str, Ingress], read: dict[str, Input],
              initial: ScanState = ScanState(), match_edges: bool = True, final: bool = True) -> Ingress:
        """Scans input ``name`` (``done``: the inputs scanned before it). A streaming step scans its
        micro-batch from the carried state (``initial``), matches edges itself, and flushes only
        when the run stops (``final``)."""
        b = self._bindings[name]
        settings = b.advance_time
        imported = None
        imported_arrival = False
        if settings is not None and settings.import_ is not None:
            source = settings.import_.from_input
            imported = done[source]
            imported_arrival = b.arrival is not None and self._bindings[source].arrival is not None
            if imported_arrival:
                mine = b.source.schema[b.arrival].dataType if b.arrival else None
                theirs = self._bindings[source].source.schema[self._bindings[source].arrival or ""].dataType
                if mine != theirs:
                    raise BindingError(f"inputs {name!r} and {source!r} share one arrival clock, but their "
                                       f"arrival columns have different types ({mine} and {theirs})")
        want_steps = any(
            other.advance_time is not None and other.advance_time.import_ is not None
            and other.advance_time.import_.from_input == name and other.arrival is not None
            and b.arrival is not None
            for other in self._bindings.values())
        flush = final and settings is not None and settings.generation is not None and settings.generation.flush
        return run_ingress(b, imported, flush, want_steps, imported_arrival, initial, match_edges)

    def start(self, q: Stream[T], *, sink: str, checkpoint: str, format: str = "parquet",
              name: str | None = None, output: Shape = Shape.INTERVAL, trigger: str | None = None,
              feed: bool = True) -> RunningQuery[T]:
        """Runs ``q`` on Structured Streaming over the streaming DataFrames bound to its inputs
        (static ones are read whole in the first micro-batch) and returns the running query.

        Each micro-batch writes what it releases as ``output`` to ``<sink>/micro_batch=<id>`` in
        ``format``; ``checkpoint`` holds Spark's progress and the carried state, so a query started
        again with the same checkpoint continues where it stopped. ``trigger``: a processing-time
        interval such as ``"10 seconds"`` (default: as fast as data comes). ``feed=False`` skips
        writing the EDGE output that ``RunningQuery.as_stream`` reads. Inputs that ``as_stream``
        returned are bound by themselves.

        >>> running = binding.start(averages, sink="/data/out", checkpoint="/data/ck")  # doctest: +SKIP
        """
        from streamql.running import start

        return start(self._spark, self._bindings, q, sink=sink, checkpoint=checkpoint, format=format, name=name,
                     output=output, trigger=trigger, feed=feed)

    def to_dataframe(self, q: Stream[T]) -> DataFrame:
        """The released events as a DataFrame: ``start``, ``end`` (UTC timestamps, ``9999-12-31
        23:59:59.999999`` for an open end), then the payload fields. The input scans run now;
        the returned plan is lazy."""
        execution = self._execute(q)
        # what was cached for the scan is recomputed, identically, if the plan needs it again
        execution.unpersist()
        return _user_columns(execution.released(Shape.INTERVAL), q)

    def explain(self, q: Stream[T], output: Shape = Shape.INTERVAL) -> str:
        """``q.explain()`` with the operators numbered, then the Spark physical plan of the bound
        query (released as ``output``) with every plan line named by the streamql operator it
        implements (``[2] where``; ``release`` for the release rule). The input scans run now.

        >>> print(binding.explain(averages))  # doctest: +SKIP
        """
        from streamql.spark.explain import explain_bound

        if not isinstance(output, Shape):
            raise BindingError(f"output must be a sq.Shape, got {output!r}")
        execution = self._execute(q)
        try:
            return explain_bound(q.node, execution.flows, execution.released(output), output.name)
        finally:
            execution.unpersist()

    def run(self, q: Stream[T], output: Shape = Shape.INTERVAL) -> Result[T]:
        """Runs ``q`` and collects what it releases as ``output`` (INTERVAL, POINT or EDGE)."""
        if not isinstance(output, Shape):
            raise BindingError(f"output must be a sq.Shape, got {output!r}")
        execution = self._execute(q)
        try:
            released = execution.released(output)
            schema = q.node.schema
            payload = [collectable(F.col(f.name), f.type).alias(f.name) for f in schema.fields]
            count = len(schema.fields)
            if output is Shape.EDGE:
                rows = released.select(EDGE_KIND, EDGE_TIME, START, *payload).collect()
                edges = [Edge(EdgeKind(r[0]), from_micros(r[1]), from_micros(r[2]), payload_from_row(schema, r[3:3 + count]))
                         for r in rows]
                edges.sort(key=lambda e: (e.time, e.kind is EdgeKind.START, e.start, sort_key(schema, e.payload)))
                return execution.result([], edges)
            rows = released.select(START, END, *payload).collect()
            events: list[Event[Any]] = [Event(from_micros(r[0]), from_micros(r[1]), payload_from_row(schema, r[2:2 + count]))
                                        for r in rows]
            events.sort(key=lambda e: (e.start, e.end, sort_key(schema, e.payload)))
            return execution.result(events, [])
        finally:
            execution.unpersist()

    def collect(self, q: Stream[T]) -> list[Event[T]]:
        """The released events of ``q`` (``run(q).events``)."""
        return self.run(q).events

    def write(self, q: Stream[T], path: str, format: str = "parquet", mode: str = "errorifexists") -> Result[T]:
        """Writes the released events (as ``to_dataframe``) to ``path`` and returns the counts and
        the final CTI; ``Result.events`` is empty because the events went to ``path``."""
        options = writer_options(format, q.node.schema, "write")
        execution = self._execute(q)
        try:
            out = _user_columns(execution.released(Shape.INTERVAL), q)
            out.write.mode(mode).format(format).options(**options).save(path)
            return execution.result([], [])
        finally:
            execution.unpersist()


def _user_columns(released: DataFrame, q: Stream[Any]) -> DataFrame:
    return user_columns(released, [f.name for f in q.node.schema.fields])
