"""The reference semantics of each operator over whole streams of lifetimes.

An operator's output is a ``Flow``: its events and its CTI after every step of the run (the last
is the final CTI). An ``Ev`` carries its lifetime, payload and what of it is stable
(docs/ctis-and-release.md#stability-and-the-release-rule):
``head_stable`` — start and payload; ``end_stable`` — the whole event. An event starting before
its stream's CTI has a stable head, and an end that is not stable will be at or after the
stream's CTI — or at or after the event's own ``end_floor``, when that is later (the event of a
union keeps its own input's bound).
"""
from __future__ import annotations

from functools import singledispatch
from typing import Any, Mapping

import attrs

from streamql.query import nodes
from streamql.reference.expressions import evaluate
from streamql.query.joins import least_cti
from streamql.reference.inputs import IngressState, PartitionedState
from streamql.time import INFINITY_MICROS, duration_micros, shift

#: the key of the group's stream inside a ``group_apply`` sub-query in an evaluation environment
GROUP = ""


@attrs.frozen
class Ev:
    start: int
    end: int
    payload: Any
    end_stable: bool
    head_stable: bool = True
    #: an end that is not stable will be at or after this time (None: the stream's CTI bounds it)
    end_floor: int | None = None


def end_floor(e: Ev, cti: int | None) -> int | None:
    """The least end ``e`` (with a stable head) can still get in a stream whose CTI is ``cti``."""
    if e.end_stable:
        return e.end
    bounds = [t for t in (e.end_floor, cti) if t is not None]
    return max(bounds) if bounds else None


def bounded(e: Ev, cti: int | None) -> Ev:
    """``e`` with the bound of its stream (CTI ``cti``) on its open end made its own, for a stream
    whose CTI may be less (a union's, ``group_apply``'s): the stream's CTI bounds every unstable
    end in it (its output before the CTI is final), whichever operator made the event."""
    return e if e.end_stable else attrs.evolve(e, end_floor=end_floor(e, cti))


@attrs.frozen
class Flow:
    """A stream at some operator's output: its events and its CTI after every step of the run
    (all flows of a run have as many steps; the last is the final CTI)."""

    events: list[Ev]
    ctis: tuple[int | None, ...]

    @property
    def cti(self) -> int | None:
        return self.ctis[-1] if self.ctis else None

    @property
    def finite_cti(self) -> int | None:
        """The greatest finite CTI the stream has had (the horizon, "as they arrive":
        docs/windows.md#events-that-never-end)."""
        return max((c for c in self.ctis if c is not None and c != INFINITY_MICROS), default=None)

    def derived(self, node: nodes.Node, events: list[Ev]) -> Flow:
        """``events`` with the CTIs of ``node`` (a one-input operator with a static CTI rule) over this flow."""
        return Flow(events, tuple(node.output_cti((c,)) for c in self.ctis))


def input_flow(state: IngressState | PartitionedState) -> Flow:
    """An input's accepted events as a stream; a partitioned input's are the union of its
    partitions' (each event bounded by its own partition's CTI), with the least of their CTIs."""
    if isinstance(state, PartitionedState):
        parts = [input_flow(p) for p in state.parts.values()]
        return Flow([bounded(e, f.cti) for f in parts for e in f.events],
                    tuple(least_cti(step) for step in zip(*(f.ctis for f in parts))))
    cti = state.cti
    events = []
    for e in state.events:
        # once the final CTI is INFINITY, no end edge can come: an open event never ends, stably
        closed = e.closed or cti == INFINITY_MICROS
        # a start edge that ADJUST moved to the CTI c is emptied by an end edge at c: nothing of
        # it is stable until its end edge comes or the CTI passes c
        # (docs/ctis-and-release.md#stability-and-the-release-rule)
        head = closed or not e.adjusted or (cti is not None and cti > e.start)
        events.append(Ev(e.start, e.end, e.payload, closed, head, None if closed else cti))
    return Flow(events, tuple(state.history))


@singledispatch
def events_of(node: nodes.Node, env: Mapping[str, Flow]) -> Flow:
    """The output of ``node`` given the flows of the inputs (by name; ``GROUP`` inside a group)."""
    raise NotImplementedError(f"the reference evaluator does not support {type(node).__name__} yet")


@events_of.register
def _input(node: nodes.Input, env: Mapping[str, Flow]) -> Flow:
    return env[node.name]


@events_of.register
def _where(node: nodes.Where, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    return source.derived(node, [e for e in source.events if evaluate(node.predicate, [e.payload]) is True])


@events_of.register
def _select(node: nodes.Select, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    return source.derived(node, [attrs.evolve(e, payload=evaluate(node.projection, [e.payload]))
                                 for e in source.events])


@events_of.register
def _alter_duration(node: nodes.AlterDuration, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    result = []
    for e in source.events:
        duration = evaluate(node.duration, [e.payload])
        if duration is None:
            continue
        end = shift(e.start, duration_micros(duration))
        if end > e.start:
            # the end follows the start: the event is stable once its start and payload are
            result.append(Ev(e.start, end, e.payload, e.head_stable, e.head_stable))
    return source.derived(node, result)


@events_of.register
def _alter_lifetime(node: nodes.AlterLifetime, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    moved = duration_micros(node.start_shift)
    result = []
    for e in source.events:
        start = shift(e.start, moved)
        floor = None
        if node.duration is None:
            end, stable = shift(e.end, moved), e.end_stable
            floor = None if e.end_floor is None else shift(e.end_floor, moved)
        else:
            end, stable = shift(start, duration_micros(node.duration)), e.head_stable
        if end > start and start < INFINITY_MICROS:
            result.append(Ev(start, end, e.payload, stable, e.head_stable, floor))
    return source.derived(node, result)


@events_of.register
def _to_point(node: nodes.ToPoint, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    return source.derived(node, [Ev(e.start, shift(e.start, 1), e.payload, e.head_stable, e.head_stable)
                                 for e in source.events if e.start < INFINITY_MICROS])
