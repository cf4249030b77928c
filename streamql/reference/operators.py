"""The reference semantics of each operator over whole streams of lifetimes.

An ``Ev`` is an event at an operator's output: its lifetime, its payload and whether its end
is stable (start and payload of every event here are stable: they come from accepted input).
"""
from __future__ import annotations

from functools import singledispatch
from typing import Any, Mapping

import attrs

from streamql.query import nodes
from streamql.reference.expressions import evaluate
from streamql.reference.inputs import IngressState
from streamql.time import INFINITY_MICROS, duration_micros, shift


@attrs.frozen
class Ev:
    start: int
    end: int
    payload: Any
    end_stable: bool


@singledispatch
def events_of(node: nodes.Node, ingress: Mapping[str, IngressState]) -> list[Ev]:
    raise NotImplementedError(f"the reference evaluator does not support {type(node).__name__} yet")


@events_of.register
def _input(node: nodes.Input, ingress: Mapping[str, IngressState]) -> list[Ev]:
    state = ingress[node.name]
    # once the final CTI is INFINITY, no end edge can come: an open event never ends, stably
    forever = state.cti == INFINITY_MICROS
    return [Ev(e.start, e.end, e.payload, e.closed or forever) for e in state.events]


@events_of.register
def _where(node: nodes.Where, ingress: Mapping[str, IngressState]) -> list[Ev]:
    return [e for e in events_of(node.source, ingress) if evaluate(node.predicate, [e.payload]) is True]


@events_of.register
def _select(node: nodes.Select, ingress: Mapping[str, IngressState]) -> list[Ev]:
    return [attrs.evolve(e, payload=evaluate(node.projection, [e.payload])) for e in events_of(node.source, ingress)]


@events_of.register
def _alter_duration(node: nodes.AlterDuration, ingress: Mapping[str, IngressState]) -> list[Ev]:
    result = []
    for e in events_of(node.source, ingress):
        duration = evaluate(node.duration, [e.payload])
        if duration is None:
            continue
        end = shift(e.start, duration_micros(duration))
        if end > e.start:
            result.append(Ev(e.start, end, e.payload, True))
    return result


@events_of.register
def _alter_lifetime(node: nodes.AlterLifetime, ingress: Mapping[str, IngressState]) -> list[Ev]:
    moved = duration_micros(node.start_shift)
    result = []
    for e in events_of(node.source, ingress):
        start = shift(e.start, moved)
        if node.duration is None:
            end, stable = shift(e.end, moved), e.end_stable
        else:
            end, stable = shift(start, duration_micros(node.duration)), True
        if end > start and start < INFINITY_MICROS:
            result.append(Ev(start, end, e.payload, stable))
    return result


@events_of.register
def _to_point(node: nodes.ToPoint, ingress: Mapping[str, IngressState]) -> list[Ev]:
    return [Ev(e.start, shift(e.start, 1), e.payload, True) for e in events_of(node.source, ingress)
            if e.start < INFINITY_MICROS]
