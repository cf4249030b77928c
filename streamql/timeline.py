"""What a run did, event by event, on one time axis: the model behind ``sq.plot.timeline``.

``trace(q, inputs)`` replays a run with the reference evaluator and records, per input, the events
it accepted (adjusted ones with their original start), the ones it dropped and every CTI it took;
for the output, each *release step* — a moment at which the output CTI moved (or, in EDGE output,
an end edge of an event released before became known) — with what it released. The release steps come from re-running the reference over the input so far at every
arrival position (as a streaming run that releases after every item would), so the replay costs
one reference run per input item: it is for small data (``max_events``).

``trace_binding(binder, q)`` does the same for inputs bound to Spark DataFrames (small ones: they
are collected to the driver) and draws the events the Spark run released.

>>> tl = trace(usage, {"readings": sq.reference.ReferenceInput(items, settings)})  # doctest: +SKIP
>>> [len(step.released) for step in tl.steps]                                      # doctest: +SKIP
[0, 3, 2, 4]
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Sequence

import attrs

from streamql.errors import BindingError
from streamql.events import Edge, EdgeKind, EndEdge, Event, Insert, InputItem, Result, Shape, StartEdge
from streamql.payload import PayloadSchema, sort_key
from streamql.query.stream import Stream
from streamql.reference import declared_inputs, run
from streamql.reference.inputs import IngressState, Lifetime, PartitionedState, ReferenceInput, ingest
from streamql.time import INFINITY, TICK, from_micros, to_micros

if TYPE_CHECKING:
    from streamql.binder import Binder

#: the default of ``max_events``: the replay re-runs the reference once per input item
MAX_EVENTS = 500


class Mark(Enum):
    """How an event is drawn."""

    INTERVAL = "interval"  # a closed lifetime: a bar
    POINT = "point"        # a one-tick lifetime: a tick
    OPEN = "open"          # an edge event whose end has not come (or was dropped): a bar with an arrow


@attrs.frozen
class Bar:
    """One event on a lane. ``step`` is the release step (1, 2, ...) that released an output
    event, None for input events and for output events the replay did not release."""

    start: datetime
    end: datetime
    payload: Any
    mark: Mark
    dropped: bool = False
    adjusted: bool = False  # the ADJUST policy moved its start or its end edge to the CTI
    original_start: datetime | None = None  # where it started before the adjustment moved its start
    step: int | None = None
    end_step: int | None = None  # EDGE output: the release step of the end edge


@attrs.frozen
class CtiMark:
    """A CTI a lane took: its time, and the release step it is (output lanes only)."""

    time: datetime
    step: int | None = None


@attrs.frozen
class Lane:
    name: str
    bars: list[Bar]
    ctis: list[CtiMark]
    output: bool = False


@attrs.frozen
class Step:
    """One release step: after arrival position ``position`` (``None``: when the input ended and
    the flush CTIs came) the output CTI is ``cti`` and ``events`` (INTERVAL and POINT output) or
    ``edges`` (EDGE output) were released — because the CTI moved, or (EDGE output) because the
    end edge of an event whose start edge was released came."""

    number: int
    position: int | None
    cti: datetime
    events: list[Event[Any]]
    edges: list[Edge[Any]]

    @property
    def released(self) -> Sequence[Event[Any] | Edge[Any]]:
        """``edges`` in a run with EDGE output, else ``events``."""
        return self.edges if self.edges else self.events


@attrs.frozen
class Timeline:
    """A run as lanes of events and CTIs: the inputs first, then the output (one lane per group
    key when the output was grouped), with the release steps of the output."""

    lanes: list[Lane]
    steps: list[Step]
    output: Shape
    result: Result[Any]

    def lane(self, name: str) -> Lane:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(f"no lane {name!r}; lanes: {', '.join(lane.name for lane in self.lanes)}")


def trace(q: Stream[Any], inputs: Mapping[str, ReferenceInput[Any]], output: Shape = Shape.INTERVAL, *,
          result: Result[Any] | None = None, group_by: Callable[[Any], Hashable] | None = None,
          max_events: int = MAX_EVENTS) -> Timeline:
    """Replays ``q`` over ``inputs`` with the reference evaluator. ``result``: draw these output
    events instead of the reference's (a Spark run's, say); each is matched to the release step
    that released the same event in the replay. ``group_by`` splits the output lane by a key of
    the payload. More than ``max_events`` input items is an error."""
    if not isinstance(q, Stream):
        raise BindingError(f"timeline needs a query (sq.Stream), got {q!r}")
    if not isinstance(output, Shape):
        raise BindingError(f"output must be a sq.Shape, got {output!r}")
    items = sum(len(i.events) for i in inputs.values())
    if items > max_events:
        raise BindingError(f"the timeline replays {items} input items, more than max_events={max_events}: "
                           "draw a smaller sample, or raise max_events (the replay re-runs the reference "
                           "evaluator after every item)")
    for name, given in inputs.items():
        if not isinstance(given, ReferenceInput):
            raise BindingError(f"input {name!r}: a timeline draws inputs without partitions "
                               f"(sq.reference.ReferenceInput), got {type(given).__name__}")
    declared = declared_inputs(q, inputs)
    final = run(q, inputs, output)
    schema = q.node.schema
    whole = ingest(inputs, declared)
    history = _positions(inputs, declared)
    lanes = [_input_lane(name, inputs, _plain(whole[name]), history) for name in inputs]
    steps = _release_steps(q, inputs, output, final)
    shown = final if result is None else result
    lanes += _output_lanes(shown, steps, output, schema, group_by)
    return Timeline(lanes, steps, output, shown)


def trace_binding(binder: Binder, q: Stream[Any], output: Shape = Shape.INTERVAL, *,
                  group_by: Callable[[Any], Hashable] | None = None, max_events: int = MAX_EVENTS) -> Timeline:
    """Runs ``q`` on Spark with ``binder`` and traces it: the inputs are collected to the driver
    (an error beyond ``max_events`` rows, counted before anything is collected) and replayed by the
    reference evaluator for the input lanes and the release steps; the output lane shows the events
    the Spark run released."""
    from streamql.spark.ingress.replay import reference_inputs

    inputs = reference_inputs(binder, q, max_events)
    return trace(q, inputs, output, result=binder.run(q, output), group_by=group_by, max_events=max_events)


# --- inputs ------------------------------------------------------------------------------

def _positions(inputs: Mapping[str, ReferenceInput[Any]],
               declared: Mapping[str, tuple[PayloadSchema | None, Shape]]) -> list[dict[str, tuple[int | None, int]]]:
    """Per arrival position, every input's CTI and dropped count after it (the run not ended)."""
    history = []
    for position in range(_length(inputs)):
        states = ingest(_prefix(inputs, position + 1), declared)
        history.append({name: (s.cti, s.dropped) for name, s in states.items()})
    return history


def _plain(state: IngressState | PartitionedState) -> IngressState:
    assert isinstance(state, IngressState)  # trace refuses partitioned inputs
    return state


def _input_lane(name: str, inputs: Mapping[str, ReferenceInput[Any]], state: IngressState,
                history: list[dict[str, tuple[int | None, int]]]) -> Lane:
    """The input's accepted events from the whole run (``state``); its dropped events and CTIs from
    the replay one arrival position at a time (an item was dropped where the dropped count grew)."""
    bars = [_accepted(e) for e in state.events]
    ctis: list[CtiMark] = []
    previous_cti: int | None = None
    previous_dropped = 0
    own = inputs[name].events
    for position, after in enumerate(history):
        cti, dropped = after[name]
        if position < len(own) and dropped > previous_dropped:
            bars.append(_dropped(own[position]))
        if cti is not None and cti != previous_cti:
            ctis.append(CtiMark(from_micros(cti)))
        previous_cti, previous_dropped = cti, dropped
    if state.cti is not None and state.cti != previous_cti:  # the flush
        ctis.append(CtiMark(from_micros(state.cti)))
    return Lane(name, bars, ctis)


def _mark(start: datetime, end: datetime) -> Mark:
    return Mark.OPEN if end == INFINITY else (Mark.POINT if end - start == TICK else Mark.INTERVAL)


def _accepted(e: Lifetime) -> Bar:
    start, end = from_micros(e.start), from_micros(e.end)
    original = from_micros(e.original_start) if e.original_start != e.start else None
    return Bar(start, end, e.payload, _mark(start, end), adjusted=e.adjusted, original_start=original)


def _dropped(item: InputItem[Any]) -> Bar:
    if isinstance(item, Insert):
        start, end = _as_datetime(item.start), _as_datetime(item.end)
        return Bar(start, end, item.payload, _mark(start, end), dropped=True)
    if isinstance(item, StartEdge):
        return Bar(_as_datetime(item.start), INFINITY, item.payload, Mark.OPEN, dropped=True)
    assert isinstance(item, EndEdge), item  # a late end edge under DROP: its event stays open
    return Bar(_as_datetime(item.start), _as_datetime(item.end), item.payload, Mark.INTERVAL, dropped=True)


def _as_datetime(t: Any) -> datetime:
    return from_micros(to_micros(t))


def _length(inputs: Mapping[str, ReferenceInput[Any]]) -> int:
    return max((len(i.events) for i in inputs.values()), default=0)


def _prefix(inputs: Mapping[str, ReferenceInput[Any]], count: int) -> dict[str, ReferenceInput[Any]]:
    """The first ``count`` arrival positions of every input, as a run that has not ended (no flush)."""
    return {name: ReferenceInput(i.events[:count], i.advance_time and i.advance_time.without_flush(), i.bad_rows)
            for name, i in inputs.items()}


# --- output ------------------------------------------------------------------------------

def _release_steps(q: Stream[Any], inputs: Mapping[str, ReferenceInput[Any]], output: Shape,
                   final: Result[Any]) -> list[Step]:
    """The reference over the input up to every arrival position, then over all of it: a step
    wherever the output CTI moved or something new was released. (Only CTIs release output, but
    an output CTI can move without an input CTI moving — a count window completed by a new event.)"""
    schema = q.node.schema
    steps: list[Step] = []
    released: Counter[Hashable] = Counter()
    output_cti: datetime | None = None
    for position in range(_length(inputs)):
        so_far = run(q, _prefix(inputs, position + 1), output)
        output_cti = _step(steps, position, so_far, output_cti, released, output, schema)
    _step(steps, None, final, output_cti, released, output, schema)
    return steps


def _step(steps: list[Step], position: int | None, so_far: Result[Any], output_cti: datetime | None,
          released: Counter[Hashable], output: Shape, schema: PayloadSchema) -> datetime | None:
    """Records a step if the output CTI moved or something new was released; returns the output CTI."""
    if so_far.final_cti is None:
        return output_cti
    now = Counter(_key(v, schema) for v in _values(so_far, output))
    new = now - released
    if so_far.final_cti == output_cti and not new:
        return output_cti
    fresh: list[Event[Any] | Edge[Any]] = []
    for value in _values(so_far, output):
        key = _key(value, schema)
        if new[key] > 0:
            new[key] -= 1
            fresh.append(value)
    released.update(_key(v, schema) for v in fresh)
    events = [v for v in fresh if isinstance(v, Event)]
    edges = [v for v in fresh if isinstance(v, Edge)]
    steps.append(Step(len(steps) + 1, position, so_far.final_cti, events, edges))
    return so_far.final_cti


def _values(result: Result[Any], output: Shape) -> Sequence[Event[Any] | Edge[Any]]:
    return result.edges if output is Shape.EDGE else result.events


def _key(value: Event[Any] | Edge[Any], schema: PayloadSchema) -> Hashable:
    if isinstance(value, Edge):
        return (value.kind, value.time, value.start, sort_key(schema, value.payload))
    return (value.start, value.end, sort_key(schema, value.payload))


def _output_lanes(result: Result[Any], steps: list[Step], output: Shape, schema: PayloadSchema,
                  group_by: Callable[[Any], Hashable] | None) -> list[Lane]:
    step_of: dict[Hashable, list[int]] = {}
    for step in steps:
        for value in step.released:
            step_of.setdefault(_key(value, schema), []).append(step.number)

    def take(value: Event[Any] | Edge[Any]) -> int | None:
        found = step_of.get(_key(value, schema))
        return found.pop(0) if found else None

    bars: list[Bar] = []
    if output is Shape.EDGE:
        ends: dict[Hashable, list[Edge[Any]]] = {}
        for edge in result.edges:
            if edge.kind is EdgeKind.END:
                ends.setdefault((edge.start, sort_key(schema, edge.payload)), []).append(edge)
        for edge in result.edges:
            if edge.kind is EdgeKind.START:
                closing = ends.get((edge.start, sort_key(schema, edge.payload)))
                if closing:
                    end = closing.pop(0)
                    bars.append(Bar(edge.start, end.time, edge.payload, Mark.INTERVAL, step=take(edge),
                                    end_step=take(end)))
                else:
                    bars.append(Bar(edge.start, INFINITY, edge.payload, Mark.OPEN, step=take(edge)))
    else:
        for event in result.events:
            bars.append(Bar(event.start, event.end, event.payload, _mark(event.start, event.end), step=take(event)))
    ctis = [CtiMark(step.cti, step.number) for step in steps]
    if group_by is None:
        return [Lane("output", bars, ctis, output=True)]
    groups: dict[Hashable, list[Bar]] = {}
    for bar in bars:
        groups.setdefault(group_by(bar.payload), []).append(bar)
    return [Lane(f"output {key}", groups[key], ctis, output=True) for key in sorted(groups, key=repr)]
