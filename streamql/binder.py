"""The user-facing ``Binder``: binds inputs to DataFrames, runs queries on Spark, returns results."""
from __future__ import annotations

import functools
import posixpath
import uuid
import warnings
from types import MappingProxyType
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Literal, Mapping, Sequence, TypeVar

import attrs
import streamql.spark  # noqa: F401 - first: a clear ImportError when no pyspark module is installed
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from streamql.advance_time import AdvanceTimeSettings
from streamql.errors import ArrivalOrderWarning, BindingError, errors_naming
from streamql.events import Edge, EdgeKind, Event, Late, Result, Shape, late_order
from streamql.payload import PayloadSchema, sort_key
from streamql.query.nodes import Input, Node, inputs_of
from streamql.query.stream import Stream
from streamql.spark.base.columns import END, START
from streamql.spark.ingress.binding import UNDECLARED, Binding, check_binding
from streamql.spark.ingress.partitioned import combined, expanded, parts_of
from streamql.spark.ingress.scan import Ingress
from streamql.spark.ingress.imports import first_passes, ordered_passes, scan_input, scan_order
from streamql.spark import operators as _operators  # noqa: F401 - registers the multi-stream operators
from streamql.spark import windows as _windows  # noqa: F401 - registers the window operators
from streamql.spark.operators.flow import Flow, compile_node, input_flow, union_flow
from streamql.spark.compat import in_ansi_mode
from streamql.spark.runtime.files import Files
from streamql.spark.runtime.origins import building
from streamql.spark.runtime.phases import phase
from streamql.spark.base.deferred import Deferred
from streamql.spark.ingress.late import late_frame, late_records, written_columns
from streamql.spark.operators.release import EDGE_KIND, EDGE_TIME, release, user_columns, writer_options
from streamql.spark.base.schema import collectable, payload_from_row
from streamql.spark.operators.sharing import TAG, compiled_together
from streamql.spark.runtime.connect import AnySession, is_dataframe, is_session, with_stable_partitions
from streamql.spark.runtime.sources import rereads_source, snapshot
from streamql.spark.runtime.workers import check_workers, passed as workers_passed
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
    #: run with others (``run_many``) as one query grouped by a tag: the flow of them all, and its tag
    tagged: tuple[Flow, int] | None = attrs.field(default=None, eq=False)
    #: the late records of the inputs the query reads (``streamql.spark.ingress.late``), by input;
    #: their plans are made only if asked for (``late_records``, ``late_frame``)
    late: Mapping[str, tuple[PayloadSchema, Deferred]] = attrs.field(factory=dict, eq=False)

    def released(self, output: Shape) -> DataFrame:
        return release(self.events, self.cti, output, [f.name for f in self.node.schema.fields])

    def unpersist(self) -> None:
        for df in self.persisted:
            df.unpersist()

    def result(self, events: list[Event[T]], edges: list[Edge[T]]) -> Result[T]:
        return Result(events=events, edges=edges, dropped=self.dropped, adjusted=self.adjusted,
                      bad_rows=self.bad_rows, final_cti=None if self.cti is None else from_micros(self.cti))

    def late_records(self) -> list[Late]:
        """The late records of the inputs the query reads, collected (``run(q, late=True)``)."""
        with phase("late records"):
            records = [r for name, (schema, deferred) in self.late.items()
                       for r in late_records(name, schema, deferred.frame)]
        return sorted(records, key=late_order)

    def late_frame(self) -> DataFrame:
        return late_frame({name: (schema, deferred.frame) for name, (schema, deferred) in self.late.items()})


class Binder:
    """Binds query inputs to Spark DataFrames and runs queries.

    A Binder is immutable: ``bind`` returns a new one.

    >>> binding = sq.Binder(spark).bind(readings, df, start="ts", advance_time=settings)  # doctest: +SKIP
    >>> events = binding.collect(averages)                                                 # doctest: +SKIP
    """

    def __init__(self, spark: AnySession, _bindings: dict[str, Binding] | None = None) -> None:
        if not is_session(spark):
            raise BindingError(f"Binder needs a SparkSession (classic or Spark Connect), got {spark!r}")
        self._spark = spark
        self._bindings: dict[str, Binding] = dict(_bindings or {})

    @property
    def spark(self) -> AnySession:
        return self._spark

    @property
    def bindings(self) -> Mapping[str, Binding]:
        """The bound inputs by name (read-only): each input's DataFrame and how it is read."""
        return MappingProxyType(self._bindings)

    @in_ansi_mode
    @building()
    def bind(self, stream: Stream[T], source: DataFrame, *, start: str, end: str | None = None,
             edge: str | None = None, kind: str | None = None, arrival: str | None = None,
             partition: str | None = None, partitions: Sequence[int | str] | None = None,
             advance_time: AdvanceTimeSettings | None = None,
             bad_rows: Literal["error", "drop"] = "error") -> Binder:
        """Binds an input declared with ``sq.input`` to a DataFrame.

        ``start``/``end`` name timestamp or integer-microsecond columns (a POINT input takes only
        ``start``); ``kind`` a column of ``"INSERT"``/``"CTI"``; ``arrival`` the arrival order
        (default: the DataFrame's partition order). Columns named like the payload fields hold them.
        An EDGE input also needs ``edge``, a column of ``"START"``/``"END"``: an end edge carries its
        event's ``start`` and ``end`` and closes the open event with that start and payload
        (docs/edges.md).

        ``partition`` names a column and ``partitions`` declares its values (both or neither): each
        declared partition has its own arrival order, CTI generation and violation check, and the
        input's CTI is the least of its partitions' CTIs; a row whose partition value is not declared
        is a bad row (docs/partitioned-inputs.md). A Kafka topic binds with
        ``partition="partition", arrival="offset", partitions=[0, 1, ...]``.

        >>> sq.Binder(spark).bind(sessions, df, start="start", end="end", edge="edge")  # doctest: +SKIP
        """
        if not isinstance(stream, Stream) or not isinstance(stream.node, Input):
            raise BindingError("bind takes an input stream declared with sq.input(...), "
                               f"not a derived query ({stream!r})")
        if not is_dataframe(source):
            raise BindingError(f"input {stream.node.name!r}: bind needs a Spark DataFrame, got {type(source).__name__}")
        if bad_rows not in ("error", "drop"):
            raise BindingError(f"bad_rows must be 'error' or 'drop', got {bad_rows!r}")
        if advance_time is not None and not isinstance(advance_time, AdvanceTimeSettings):
            raise BindingError(f"advance_time must be sq.AdvanceTimeSettings, got {advance_time!r}")
        if partitions is not None and (isinstance(partitions, (str, bytes)) or not isinstance(partitions, Sequence)):
            raise BindingError(f"input {stream.node.name!r}: partitions= takes a sequence of partition values "
                               f"(ints or strings), got {partitions!r}")
        binding = Binding(stream.node, source, start, end, edge, kind, arrival, advance_time, bad_rows,
                          partition, None if partitions is None else tuple(partitions))
        check_binding(binding)
        if not source.isStreaming:
            _warn_of_file_order(binding)
            binding = attrs.evolve(binding, source=with_stable_partitions(source))
        return Binder(self._spark, {**self._bindings, stream.node.name: binding})

    # --- running ------------------------------------------------------------------------
    def _execute(self, q: Stream[T]) -> _Execution[T]:
        read = self._check_query(q)
        ingresses, flows = self._scan_inputs(read)
        with phase("plan"):
            output = compile_node(q.node, flows)
        persisted = [df for i in ingresses.values() for df in i.persisted]
        return _execution(q, read, ingresses, flows, output, persisted)

    def _check_query(self, q: Stream[Any]) -> dict[str, Input]:
        """The inputs ``q`` reads, each checked to be bound, as ``q`` reads it, to a batch DataFrame."""
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
        return read

    def _scan_inputs(self, read: Mapping[str, Input],
                     readers: Mapping[str, Sequence[str]] | None = None) -> tuple[dict[str, Ingress], dict[str, Flow]]:
        """Scans the inputs ``read`` (and those whose CTIs they import), each once, in import order;
        returns the scans and the flows of ``read``. ``readers``: the queries reading each input
        (``run_many``), which an error while scanning it names."""
        ingresses: dict[str, Ingress] = {}
        parts: dict[str, dict[str, Ingress]] = {}  # a partitioned input's partitions' scans, by key
        order = self._scan_order(set(read))
        bound, snapshots = self._read_once(order)
        try:
            # a partitioned input is scanned as one input per partition (streamql.spark.ingress.partitioned)
            scanned = expanded(bound, order)
            bindings = {**bound, **scanned}
            # the inputs' first summary passes in one job (each input's own job where there is one)
            first = first_passes(bindings, list(scanned))
            # and the second passes of those found out of storage order, in one job
            first.update(ordered_passes(bindings, first))
            for name in order:
                with errors_naming(readers.get(name, ()) if readers is not None else ()):
                    if not bound[name].partitioned:
                        ingresses[name] = scan_input(bindings, name, ingresses, first=first.get(name))
                        continue
                    own = parts.setdefault(name, {})
                    for key in parts_of(bound[name]):
                        own[key] = scan_input(bindings, key, ingresses, first=first.get(key))
                    ingresses[name] = combined(bound[name], own, bindings)
        except BaseException:
            for done in [*ingresses.values(), *(i for p in parts.values() for i in p.values())]:
                for df in done.persisted:
                    df.unpersist()
            for df in snapshots.values():
                df.unpersist()
            raise
        for name, rows in snapshots.items():  # released with the run's cached frames
            ingresses[name] = attrs.evolve(ingresses[name], persisted=[*ingresses[name].persisted, rows])
        if not workers_passed(self._spark):  # the session's first summary pass checks them (workers.collected)
            with phase("worker check"):
                check_workers(self._spark)  # no summary pass ran a Python worker (inputs without rows): the probe
        flows = {name: _input_flow(ingresses[name], parts.get(name), bindings) for name in read}
        return ingresses, flows

    def _read_once(self, names: Sequence[str]) -> tuple[dict[str, Binding], dict[str, DataFrame]]:
        """The bindings a run scans, and the rows read once for it: an input whose DataFrame reads a
        connector's source (Kafka, JDBC, a Python data source: ``sources.rereads_source``) is bound
        to its rows as they are now, read in one job (``sources.snapshot``), which every job of the
        run reads instead of the source — the same rows in each, and the source read once."""
        bound, snapshots = dict(self._bindings), {}
        for name in names:
            b = bound[name]
            if not b.source.isStreaming and rereads_source(b.source):
                with phase("input snapshot"):
                    snapshots[name] = snapshot(b.source)
                bound[name] = attrs.evolve(b, source=snapshots[name])
        return bound, snapshots

    @contextmanager
    def _executions(self, queries: Mapping[str, Stream[Any]], what: str) -> Iterator[dict[str, _Execution[Any]]]:
        """The queries of ``run_many``/``write_many``/... compiled over one scan of each input they
        read, sub-queries they share compiled once; what was cached is released on exit."""
        if not isinstance(queries, Mapping):
            raise BindingError(f"{what} takes a mapping of names to queries (dict[str, sq.Stream]), got {queries!r}")
        for name in queries:
            if not isinstance(name, str):
                raise BindingError(f"{what}: query names must be strings, got {name!r}")
        reads: dict[str, dict[str, Input]] = {}
        for name, q in queries.items():
            with errors_naming([name]):
                reads[name] = self._check_query(q)
                self._scan_order(set(reads[name]))  # imports that are not bound, or a cycle
        read: dict[str, Input] = {}
        readers: dict[str, list[str]] = {}
        for name, its_inputs in reads.items():
            read.update(its_inputs)
            for input_name in its_inputs:
                readers.setdefault(input_name, []).append(name)
        # the scan of an input whose CTIs others import serves the queries reading those
        for input_name in reversed(self._scan_order(set(read))):
            settings = self._bindings[input_name].advance_time
            if settings is not None and settings.import_ is not None:
                source = readers.setdefault(settings.import_.from_input, [])
                source += [n for n in readers.get(input_name, []) if n not in source]
        ingresses, flows = self._scan_inputs(read, readers)
        persisted = [df for i in ingresses.values() for df in i.persisted]
        try:
            executions: dict[str, _Execution[Any]] = {}
            with compiled_together([q.node for q in queries.values()], flows) as shared:
                persisted += shared.persisted
                for name, q in queries.items():
                    with errors_naming([name]):
                        execution = _execution(q, reads[name], ingresses, flows, compile_node(q.node, flows), [])
                        executions[name] = attrs.evolve(execution, tagged=shared.grouped.get(q.node))
            yield executions
        finally:
            for df in persisted:
                df.unpersist()

    def _scan_order(self, read: set[str]) -> list[str]:
        return scan_order(self._bindings, read)

    @in_ansi_mode
    @building()
    def start(self, q: Stream[T], *, sink: str, checkpoint: str, format: str = "parquet",
              name: str | None = None, output: Shape = Shape.INTERVAL, trigger: str | None = None,
              feed: bool = True, late_sink: str | None = None) -> RunningQuery[T]:
        """Runs ``q`` on Structured Streaming over the streaming DataFrames bound to its inputs
        (static ones are read whole in the first micro-batch) and returns the running query.

        Each micro-batch writes what it releases as ``output`` to ``<sink>/micro_batch=<id>`` in
        ``format`` — or, with ``format="delta"``, appends it to the Delta table ``sink`` in one
        idempotent commit per micro-batch that released (docs/kafka-and-delta.md); ``checkpoint`` holds Spark's progress and the carried state, so a query started
        again with the same checkpoint continues where it stopped. ``trigger``: a processing-time
        interval such as ``"10 seconds"`` (default: as fast as data comes). ``feed=False`` skips
        writing the EDGE output that ``RunningQuery.as_stream`` reads. Inputs that ``as_stream``
        returned are bound by themselves. ``late_sink``: each micro-batch's late records (the rows
        of ``late``, docs/late-events.md) go to ``<late_sink>/micro_batch=<id>`` in ``format``,
        exactly once across restarts, like the output.

        >>> running = binding.start(averages, sink="/data/out", checkpoint="/data/ck")  # doctest: +SKIP
        """
        from streamql.running import start

        check_workers(self._spark)
        return start(self._spark, self._bindings, q, sink=sink, checkpoint=checkpoint, format=format, name=name,
                     output=output, trigger=trigger, feed=feed, late_sink=late_sink)

    @in_ansi_mode
    @building()
    def to_dataframe(self, q: Stream[T]) -> DataFrame:
        """The released events as a DataFrame: ``start``, ``end`` (UTC timestamps, ``9999-12-31
        23:59:59.999999`` for an open end), then the payload fields. The input scans run now;
        the returned plan is lazy."""
        execution = self._execute(q)
        # what was cached for the scan is recomputed, identically, if the plan needs it again
        execution.unpersist()
        return _user_columns(execution.released(Shape.INTERVAL), q)

    @in_ansi_mode
    @building()
    def explain(self, q: Stream[T], output: Shape = Shape.INTERVAL) -> str:
        """``q.explain()`` with the operators numbered, then the Spark physical plan of the bound
        query (released as ``output``) with every plan line named by the streamql operator it
        implements (``[2] where``; ``release`` for the release rule). The input scans run now.

        >>> print(binding.explain(averages))  # doctest: +SKIP
        """
        from streamql.spark.operators.explain import explain_bound

        if not isinstance(output, Shape):
            raise BindingError(f"output must be a sq.Shape, got {output!r}")
        execution = self._execute(q)
        try:
            return explain_bound(q.node, execution.flows, execution.released(output), output.name)
        finally:
            execution.unpersist()

    @in_ansi_mode
    @building()
    def run(self, q: Stream[T], output: Shape = Shape.INTERVAL, late: bool = False) -> Result[T]:
        """Runs ``q`` and collects what it releases as ``output`` (INTERVAL, POINT or EDGE).

        ``late``: also collect, as ``Result.late``, a ``sq.Late`` record of every row of the inputs
        ``q`` reads that the violation policy dropped or moved, or ``bad_rows="drop"`` dropped
        (docs/late-events.md)."""
        if not isinstance(output, Shape):
            raise BindingError(f"output must be a sq.Shape, got {output!r}")
        if not isinstance(late, bool):
            raise BindingError(f"late must be True or False, got {late!r}")
        execution = self._execute(q)
        try:
            with phase("collect"):
                result = _collected(execution, output)
            return attrs.evolve(result, late=execution.late_records()) if late else result
        finally:
            execution.unpersist()

    @in_ansi_mode
    @building()
    def late(self, q: Stream[Any]) -> DataFrame:
        """One row per row of the inputs ``q`` reads that the violation policy dropped or moved, or
        ``bad_rows="drop"`` dropped: ``input``, ``arrival`` (the arrival column as a long —
        microseconds for a timestamp — else the row's position in storage order), ``action``
        (``"dropped"``, ``"adjusted"``, ``"bad_row"``), ``kind`` (``"INSERT"``, ``"START"``,
        ``"END"``), ``start``/``end`` as the row has them, ``cti`` (the CTI it violated),
        ``new_start``/``new_end`` (after ADJUST), ``payload`` (a struct of the payload fields) and
        ``reason`` (a bad row's). The input scans run now; the returned plan is lazy.

        >>> binding.late(averages).filter("action = 'dropped'").show()  # doctest: +SKIP
        """
        read = self._check_query(q)
        ingresses, _ = self._scan_inputs(read)
        for ingress in ingresses.values():
            for df in ingress.persisted:  # recomputed, identically, if the plan needs it again
                df.unpersist()
        return late_frame({name: (schema, deferred.frame)
                           for name, (schema, deferred) in _late_inputs(read, ingresses).items()})

    @in_ansi_mode
    @building()
    def collect(self, q: Stream[T]) -> list[Event[T]]:
        """The released events of ``q`` (``run(q).events``)."""
        return self.run(q).events

    @in_ansi_mode
    @building()
    def write(self, q: Stream[T], path: str, format: str = "parquet", mode: str = "errorifexists",
              late_path: str | None = None) -> Result[T]:
        """Writes the released events (as ``to_dataframe``) to ``path`` and returns the counts and
        the final CTI; ``Result.events`` is empty because the events went to ``path``. ``format``:
        ``parquet``, ``json``, ``csv``, ``orc`` or ``delta`` (a Delta table, one commit; the session
        needs Delta Lake's jars: docs/kafka-and-delta.md).

        ``late_path``: also write the rows of ``late(q)`` there, in ``format`` with ``mode`` (CSV
        has no structs: its payload fields become columns ``payload_<field>``)."""
        options = writer_options(format, q.node.schema, "write")
        if late_path is not None:
            if not isinstance(late_path, str) or late_path.rstrip("/") == path.rstrip("/"):
                raise BindingError(f"late_path must be a path other than the output's, got {late_path!r}")
            if mode == "errorifexists" and Files(self._spark).exists(late_path):
                # before anything is written: a write refused halfway would leave the output alone
                raise BindingError(f"late_path {late_path!r} already exists (mode='errorifexists')")
        execution = self._execute(q)
        try:
            out = _user_columns(execution.released(Shape.INTERVAL), q)
            with phase("write"):
                out.write.mode(save_mode(mode)).format(format).options(**options).save(path)
            if late_path is not None:
                with phase("late records"):
                    _write_late(execution.late_frame(), late_path, format, mode)
            return execution.result([], [])
        finally:
            execution.unpersist()

    # --- many queries over one scan -------------------------------------------------------
    @in_ansi_mode
    @building()
    def run_many(self, queries: Mapping[str, Stream[Any]], output: Shape = Shape.INTERVAL) -> dict[str, Result[Any]]:
        """Runs several queries together: under each name, exactly what ``run`` of that query alone
        returns. Every input is scanned once for all the queries that read it, and the operators
        that queries share (equal sub-queries, such as a common prefix) are compiled once. An
        error in one query names it (``query 'name': ...``).

        >>> results = binding.run_many({"busy": busy, "averages": averages})  # doctest: +SKIP
        >>> results["busy"].events                                            # doctest: +SKIP
        """
        if not isinstance(output, Shape):
            raise BindingError(f"output must be a sq.Shape, got {output!r}")
        if not queries:
            return {}
        with self._executions(queries, "run_many") as executions:
            # queries grouped by one tag are collected at once, the others one by one
            return _by_group(executions, lambda name, execution: _collected(execution, output),
                             functools.partial(_collected_together, output=output))

    @in_ansi_mode
    @building()
    def write_many(self, queries: Mapping[str, Stream[Any]], paths: Mapping[str, str], format: str = "parquet",
                   mode: str = "errorifexists") -> dict[str, Result[Any]]:
        """``write`` for several queries over one scan of each input (as ``run_many``): query
        ``name`` goes to ``paths[name]``; the keys of ``paths`` are the names of ``queries``.
        Returns each query's counts and final CTI, with empty ``events``.

        >>> binding.write_many({"busy": busy, "averages": averages},                   # doctest: +SKIP
        ...                    {"busy": "/data/busy", "averages": "/data/averages"})
        """
        _check_names("write_many", queries, paths, "paths")
        options: dict[str, dict[str, str]] = {}
        for name, q in queries.items():
            with errors_naming([name]):
                if not isinstance(q, Stream):
                    raise BindingError(f"expected a query (sq.Stream), got {q!r}")
                options[name] = writer_options(format, q.node.schema, "write")
        if not queries:
            return {}
        writes = _Writes(Files(self._spark), paths, format, mode, options)  # the paths may be on any file system
        with self._executions(queries, "write_many") as executions:
            # a query whose path exists is written alone, for its mode to say what happens
            return _by_group(executions, writes.alone, writes.together, may_group=writes.is_new)

    @in_ansi_mode
    @building()
    def start_many(self, queries: Mapping[str, Stream[Any]], *, sinks: Mapping[str, str], checkpoint: str,
                   format: str = "parquet", name: str | None = None) -> RunningQuery[Any]:
        """``start`` for several queries as ONE Structured Streaming query with one checkpoint: each
        micro-batch scans every input once for all the queries, then runs each query's
        incremental step, writing query ``n`` to ``sinks[n]`` (``<sink>/micro_batch=<id>``); the
        keys of ``sinks`` are the names of ``queries`` (letters, digits, ``_``, ``-``, ``.``). Started
        again with the same checkpoint and the same queries, it continues where it stopped.
        ``RunningQuery.as_stream(n)`` reads query ``n``'s output.

        >>> running = binding.start_many({"busy": busy, "averages": averages}, checkpoint="/data/ck",  # doctest: +SKIP
        ...                              sinks={"busy": "/data/busy", "averages": "/data/averages"})
        """
        from streamql.running import start_many

        _check_names("start_many", queries, sinks, "sinks")
        if not queries:
            raise BindingError("start_many needs at least one query")
        check_workers(self._spark)
        return start_many(self._spark, self._bindings, queries, sinks=sinks, checkpoint=checkpoint, format=format,
                          name=name)


def _warn_of_file_order(b: Binding) -> None:
    """Warns (``ArrivalOrderWarning``) when a batch input whose arrival order decides its CTIs
    (generated, imported or CTI rows) reads several files and has no arrival column: its arrival
    order is then the order Spark reads the files in — largest first, as Spark packs a scan's
    files into partitions by size, not by name — and events of a file read after a later one can
    be late (docs/binding.md#arrival-order-and-files)."""
    if b.arrival is not None or (b.advance_time is None and b.kind is None):
        return
    files = b.source.inputFiles()
    if len(files) > 1:
        warnings.warn(
            f"input {b.node.name!r} reads {len(files)} files and has no arrival column: its arrival order is the "
            "order Spark reads the files in (the largest first, not by name), so the events of a file read after "
            "a later one can be late by its CTIs. Bind arrival= to a column that gives the arrival order (e.g. a "
            "load time or offset, or the start column for data that arrived in time order)",
            ArrivalOrderWarning, stacklevel=3)


def _input_flow(ingress: Ingress, parts: Mapping[str, Ingress] | None, bindings: Mapping[str, Binding]) -> Flow:
    """An input's flow; a partitioned input's is the union of its declared partitions' (each open
    event bounded by its own partition's CTI, as a ``union`` bounds it), with their least CTI."""
    if parts is None:
        return input_flow(ingress.events, ingress.final_cti, ingress.finite_cti, ingress.reached, ingress.starts)
    flows = [input_flow(i.events, i.final_cti, i.finite_cti, i.reached) for k, i in parts.items()
             if bindings[k].part != UNDECLARED]
    return union_flow(flows, ingress.final_cti, ingress.finite_cti, ingress.reached, ingress.starts)


def save_mode(mode: str) -> str:
    """A save mode as both kinds of session take it: Spark Connect knows ``"error"`` but not its
    alias ``"errorifexists"``."""
    return "error" if mode.lower() == "errorifexists" else mode


def _write_late(frame: DataFrame, path: str, format: str, mode: str) -> None:
    """``Binder.late``'s rows written to ``path`` (CSV gets the payload's fields as columns)."""
    written, options = written_columns(frame, format)
    written.write.mode(save_mode(mode)).format(format).options(**options).save(path)


def _user_columns(released: DataFrame, q: Stream[Any]) -> DataFrame:
    return user_columns(released, [f.name for f in q.node.schema.fields])


def _execution(q: Stream[T], read: Mapping[str, Input], ingresses: Mapping[str, Ingress], flows: Mapping[str, Flow],
               output: Flow, persisted: list[DataFrame]) -> _Execution[T]:
    """``q`` compiled to ``output``, with the counts of the inputs it reads (not of those it only
    imports CTIs from)."""
    counted = [ingresses[name] for name in read]
    return _Execution(q.node, output.frame, output.cti, sum(i.dropped for i in counted),
                      sum(i.adjusted for i in counted), sum(i.bad_rows for i in counted), persisted, flows,
                      late=_late_inputs(read, ingresses))


def _late_inputs(read: Mapping[str, Input], ingresses: Mapping[str, Ingress]
                 ) -> dict[str, tuple[PayloadSchema, Deferred]]:
    """The late records of the inputs ``read``, by name, with their payload schemas (deferred:
    ``Deferred``)."""
    late = {}
    for name in sorted(read):
        records = ingresses[name].late
        assert records is not None  # a batch scan builds them
        late[name] = (read[name].schema, records)
    return late


def _collected(execution: _Execution[T], output: Shape) -> Result[T]:
    """What ``execution`` releases as ``output``, collected and sorted (``Binder.run``)."""
    return _result(execution, output, _released_columns(execution.released(output), execution.node, output).collect())


def _collected_together(executions: Mapping[str, _Execution[Any]], output: Shape) -> dict[str, Result[Any]]:
    """``_collected`` of queries grouped by one tag (``run_many``): their flow released and
    collected once, its rows shared out by tag."""
    first = next(iter(executions.values()))
    assert first.tagged is not None
    flow = first.tagged[0]
    payload = [f.name for f in first.node.schema.fields]
    released = release(flow.frame, flow.cti, output, payload + [TAG])
    rows: dict[int, list[Row]] = {}
    for row in _released_columns(released, first.node, output, F.col(TAG)).collect():
        rows.setdefault(row[-1], []).append(row)
    return {name: _result(e, output, rows.get(e.tagged[1] if e.tagged else -1, [])) for name, e in executions.items()}


def _released_columns(released: DataFrame, node: Node, output: Shape, *more: Column) -> DataFrame:
    """The released rows as ``_result`` reads them: times as microseconds, payloads as Python values."""
    payload = [collectable(F.col(f.name), f.type).alias(f.name) for f in node.schema.fields]
    if output is Shape.EDGE:
        return released.select(EDGE_KIND, EDGE_TIME, START, *payload, *more)
    return released.select(START, END, *payload, *more)


def _result(execution: _Execution[T], output: Shape, rows: Sequence[Row]) -> Result[T]:
    """``execution``'s result from its released rows (``_released_columns``), sorted."""
    schema = execution.node.schema
    count = len(schema.fields)
    if output is Shape.EDGE:
        edges = [Edge(EdgeKind(r[0]), from_micros(r[1]), from_micros(r[2]), payload_from_row(schema, r[3:3 + count]))
                 for r in rows]
        edges.sort(key=lambda e: (e.time, e.kind is EdgeKind.START, e.start, sort_key(schema, e.payload)))
        return execution.result([], edges)
    events: list[Event[Any]] = [Event(from_micros(r[0]), from_micros(r[1]), payload_from_row(schema, r[2:2 + count]))
                                for r in rows]
    events.sort(key=lambda e: (e.start, e.end, sort_key(schema, e.payload)))
    return execution.result(events, [])


#: how many of the queries of ``run_many``/``write_many`` run their Spark jobs at a time: jobs
#: that wait on the driver (planning, committing files) leave the cores to the others
PARALLEL_QUERIES = 4


def _in_parallel(jobs: Sequence[tuple[Sequence[str], Callable[[], T]]]) -> list[T]:
    """Each job's outcome, in order, running up to ``PARALLEL_QUERIES`` of them at a time; an error
    names the queries of its job (the first failed job's, in order, once all have finished)."""
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(PARALLEL_QUERIES, len(jobs))) as pool:
        futures = [pool.submit(job) for _, job in jobs]
        outcomes: list[T] = []
        for (names, _), future in zip(jobs, futures):
            with errors_naming(names):
                outcomes.append(future.result())
        return outcomes


def _by_group(executions: Mapping[str, _Execution[Any]], alone: Callable[[str, _Execution[Any]], Result[Any]],
              together: Callable[[Mapping[str, _Execution[Any]]], dict[str, Result[Any]]],
              may_group: Callable[[str], bool] = lambda name: True) -> dict[str, Result[Any]]:
    """Each query's result (by name, in the order of ``executions``): the queries whose flow is
    tagged (``_Execution.tagged``) by ``together``, one job per tagged flow, the others (and a
    tagged one that ``may_group`` refuses) by ``alone``, one job each; ``_in_parallel``.

    >>> _by_group(executions, lambda name, e: _collected(e, output), together)  # doctest: +SKIP
    """
    grouped: dict[int, list[str]] = {}
    jobs: list[tuple[list[str], Callable[[], dict[str, Result[Any]]]]] = []
    for name, execution in executions.items():
        if execution.tagged is not None and may_group(name):
            grouped.setdefault(id(execution.tagged[0]), []).append(name)
        else:
            jobs.append(([name], functools.partial(_alone, alone, name, execution)))
    for names in grouped.values():
        jobs.append((names, functools.partial(together, {n: executions[n] for n in names})))
    results: dict[str, Result[Any]] = {}
    for part in _in_parallel(jobs):
        results.update(part)
    return {name: results[name] for name in executions}


def _alone(alone: Callable[[str, _Execution[Any]], Result[Any]], name: str,
           execution: _Execution[Any]) -> dict[str, Result[Any]]:
    """``alone``'s result for query ``name``, under its name."""
    return {name: alone(name, execution)}


@attrs.frozen
class _Writes:
    """How ``write_many`` writes its queries: query ``name`` to ``paths[name]`` in ``format`` with
    ``mode`` and the writer options ``options[name]``, through ``files``.

    >>> writes = _Writes(Files(spark), {"busy": "/data/busy"}, "parquet", "overwrite", {"busy": {}})  # doctest: +SKIP
    >>> writes.alone("busy", execution).dropped                                                       # doctest: +SKIP
    0
    """

    files: Files = attrs.field(eq=False)
    paths: Mapping[str, str]
    format: str
    mode: str
    options: Mapping[str, Mapping[str, str]]

    def is_new(self, name: str) -> bool:
        """Whether query ``name``'s path does not exist yet (only then may it be written with others)."""
        return not self.files.exists(self.paths[name])

    def alone(self, name: str, execution: _Execution[Any]) -> Result[Any]:
        """Query ``name``'s released events written to its path in a job of their own; its counts
        and final CTI."""
        out = user_columns(execution.released(Shape.INTERVAL), [f.name for f in execution.node.schema.fields])
        out.write.mode(save_mode(self.mode)).format(self.format).options(**self.options[name]).save(self.paths[name])
        return execution.result([], [])

    def together(self, executions: Mapping[str, _Execution[Any]]) -> dict[str, Result[Any]]:
        """Queries grouped by one tag, written in one job (partitioned by the tag) whose parts are
        then renamed to their paths; a query with nothing to write, or whose part cannot be
        renamed there, is written alone."""
        names = list(executions)
        first = executions[names[0]]
        assert first.tagged is not None
        flow = first.tagged[0]
        columns = [f.name for f in first.node.schema.fields] + [TAG]
        out = user_columns(release(flow.frame, flow.cti, Shape.INTERVAL, columns), columns)
        staging = f"{posixpath.dirname(self.paths[names[0]].rstrip('/')) or '.'}/.streamql-staging-{uuid.uuid4().hex}"
        results: dict[str, Result[Any]] = {}
        try:
            # one task per query's part: a file each, not one per query and partition of the flow
            out.repartition(TAG).write.partitionBy(TAG).format(self.format).options(**self.options[names[0]]) \
                .save(staging)
            parts = set(self.files.children(staging))
            for name, execution in executions.items():
                assert execution.tagged is not None
                part = f"{TAG}={execution.tagged[1]}"
                if part in parts and self.files.rename(f"{staging}/{part}", self.paths[name]):
                    parts.remove(part)
                    self.files.write_text(f"{self.paths[name]}/_SUCCESS", "")  # as a write of its own leaves
                    results[name] = execution.result([], [])
                else:
                    results[name] = self.alone(name, execution)
        finally:
            self.files.delete(staging)
        return results


def _check_names(what: str, queries: Mapping[str, Any], other: Mapping[str, Any], role: str) -> None:
    """``other`` (the paths of ``write_many``, the sinks of ``start_many``) has exactly the names of
    ``queries``."""
    if not isinstance(other, Mapping):
        raise BindingError(f"{what}: {role} must be a mapping of the query names to {role}, got {other!r}")
    missing = [n for n in queries if n not in other]
    extra = [n for n in other if n not in queries]
    if missing or extra:
        parts = ([f"no {role[:-1]} for {', '.join(map(repr, missing))}"] if missing else []) + \
                ([f"{role} for no query: {', '.join(map(repr, extra))}"] if extra else [])
        raise BindingError(f"{what}: the keys of {role} must be the query names ({', '.join(map(repr, queries))}); "
                           + "; ".join(parts))


