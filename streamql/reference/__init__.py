"""The reference evaluator: the executable specification of streamql's semantics.

``run(query, inputs)`` evaluates a query over plain Python events with the CTI semantics of
docs/ctis-and-release.md. It is small and unoptimised on purpose; every Spark operator is tested against it,
and it lets users unit-test small queries without a JVM.

>>> result = sq.reference.run(q, {"readings": sq.reference.ReferenceInput([...], settings)})  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Mapping, TypeVar

from streamql.errors import BindingError
from streamql.events import Edge, EdgeKind, EndEdge, Event, Result, Shape, StartEdge, late_order
from streamql.payload import PayloadSchema, sort_key
from streamql.query.nodes import inputs_of
from streamql.query.stream import Stream
from streamql.reference.inputs import AnyReferenceInput, PartitionedInput, ReferenceInput, ingest
from streamql.reference import windows as _windows  # noqa: F401 - registers the window operators
from streamql.reference import esper as _esper  # noqa: F401 - registers the Esper-style operators
from streamql.reference import joins as _joins  # noqa: F401 - registers the multi-stream operators
from streamql.reference import as_of as _as_of  # noqa: F401 - registers as_of_join and to_signal
from streamql.reference import patterns as _patterns  # noqa: F401 - registers followed_by and not_followed_by
from streamql.reference.operators import Ev, events_of, input_flow
from streamql.time import INFINITY_MICROS, from_micros, shift

T = TypeVar("T")

__all__ = ["PartitionedInput", "ReferenceInput", "run"]


def run(q: Stream[T], inputs: Mapping[str, AnyReferenceInput], output: Shape = Shape.INTERVAL,
        late: bool = False) -> Result[T]:
    """Evaluates ``q`` over ``inputs`` (keyed by input name: ``ReferenceInput`` or, for a partitioned
    input, ``PartitionedInput``) and applies the release rule.

    ``late``: fill ``Result.late`` with a record of every item of the inputs ``q`` reads that the
    violation policy dropped or moved, or ``bad_rows="drop"`` dropped (sorted by input and arrival)."""
    read = inputs_of(q.node)
    ingress = ingest(inputs, declared_inputs(q, inputs))
    output_flow = events_of(q.node, {name: input_flow(state) for name, state in ingress.items()})
    cti = output_flow.cti
    released = release(output_flow.events, cti, output)
    schema = q.node.schema
    events = sorted(released[0], key=lambda e: (e.start, e.end, sort_key(schema, e.payload)))
    edges = sorted(released[1], key=lambda e: (e.time, e.kind is EdgeKind.START, e.start, sort_key(schema, e.payload)))
    counted = [ingress[name] for name in read]
    return Result(
        events=events,
        edges=edges,
        dropped=sum(s.dropped for s in counted),
        adjusted=sum(s.adjusted for s in counted),
        bad_rows=sum(s.bad_rows for s in counted),
        final_cti=None if cti is None else from_micros(cti),
        late=sorted((r for s in counted for r in s.late), key=late_order) if late else [],
    )


def declared_inputs(q: Stream[Any], inputs: Mapping[str, AnyReferenceInput]
                    ) -> dict[str, tuple[PayloadSchema | None, Shape]]:
    """The payload type and shape of every given input: as the query declares the ones it reads;
    an input only imported from is not checked (None) and is EDGE if it holds edges."""
    read = inputs_of(q.node)
    missing = sorted(set(read) - set(inputs))
    if missing:
        raise BindingError(f"the query reads inputs that are not given: {', '.join(missing)}")
    declared: dict[str, tuple[PayloadSchema | None, Shape]] = {
        name: (node.schema, node.shape) for name, node in read.items()}
    for name, given in inputs.items():
        if name not in declared:
            imported_by = [n for n, i in inputs.items()
                           if i.advance_time is not None and i.advance_time.import_ is not None
                           and i.advance_time.import_.from_input == name]
            if not imported_by:
                raise BindingError(f"input {name!r} is not read by the query and no input imports its CTIs")
            declared[name] = (None, _source_shape(given))
    return declared


def release(events: list[Ev], cti: int | None, output: Shape) -> tuple[list[Event[Any]], list[Edge[Any]]]:
    """The release rule (docs/ctis-and-release.md#stability-and-the-release-rule) applied with the
    final output CTI."""
    if cti is None:
        return [], []
    if output is Shape.INTERVAL:
        return [Event(from_micros(e.start), from_micros(e.end), e.payload)
                for e in events if e.end_stable and e.start < cti], []
    if output is Shape.POINT:
        return [Event(from_micros(e.start), from_micros(shift(e.start, 1)), e.payload)
                for e in events if e.start < cti], []
    edges: list[Edge[Any]] = []
    for e in events:
        if e.start < cti:
            edges.append(Edge(EdgeKind.START, from_micros(e.start), from_micros(e.start), e.payload))
            if e.end_stable and e.end != INFINITY_MICROS:
                edges.append(Edge(EdgeKind.END, from_micros(e.end), from_micros(e.start), e.payload))
    return [], edges


def _source_shape(given: AnyReferenceInput) -> Shape:
    if any(isinstance(i, (StartEdge, EndEdge)) for i in given.events):
        return Shape.EDGE
    return Shape.INTERVAL
