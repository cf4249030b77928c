"""The reference semantics of the Esper-style lifetimes ``keep_last``, ``time_batch`` and
``length_batch`` (docs/esper-windows.md).

``keep_last`` and ``length_batch`` order events by start, then payload fields in order (nulls
first, NaN above every other float, as Spark sorts), then end. Events starting before the CTI
have their places in that order for good: every later event starts at or after the CTI.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from streamql.payload import Kind, PayloadSchema, ValueType
from streamql.query import esper
from streamql.reference.operators import Ev, Flow, events_of
from streamql.time import INFINITY_MICROS, shift


def order_key(schema: PayloadSchema, payload: Any) -> tuple[Any, ...]:
    """The order of payloads among events with one start: fields in order, nulls first, NaN last."""
    return tuple(_value_order(f.type, getattr(payload, f.name)) for f in schema.fields)


def _value_order(vtype: ValueType, value: Any) -> tuple[Any, ...]:
    if value is None:
        return (0,)
    if vtype.kind is Kind.STRUCT:
        assert vtype.schema is not None
        return (1, order_key(vtype.schema, value))
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    return (1, value)


def in_order(events: list[Ev], schema: PayloadSchema) -> list[Ev]:
    return sorted(events, key=lambda e: (e.start, order_key(schema, e.payload), e.end))


def _reached(t: int, cti: int | None, ordered: list[Ev], upto: int) -> bool:
    """Whether a lifetime boundary at ``t``, the start of ``ordered[upto - 1]``, is final: ``t``
    passes the CTI, or reaches it and ``upto`` events with stable heads start at or before ``t``
    (every event before ``t`` has one; an event at ``t`` whose head is not stable may vanish or
    take another place among those at ``t``, but as long as enough stable ones remain, the
    ``upto``-th start stays at ``t``; no new event can start before ``t``)."""
    if cti is None:
        return False
    return t < cti or (t == cti and sum(1 for e in ordered if e.start <= t and e.head_stable) >= upto)


@events_of.register
def _keep_last(node: esper.KeepLast, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    cti, ordered = source.cti, in_order(source.events, node.source.schema)
    events = []
    for i, e in enumerate(ordered):
        j = i + node.n
        end = ordered[j].start if j < len(ordered) else INFINITY_MICROS
        if end <= e.start:
            continue  # n later events start with it: an empty lifetime
        if cti == INFINITY_MICROS:
            events.append(Ev(e.start, end, e.payload, True, True))
            continue
        head = e.head_stable and cti is not None and e.start < cti
        stable = head and j < len(ordered) and _reached(end, cti, ordered, j + 1)
        events.append(Ev(e.start, end, e.payload, stable, head))
    return source.derived(node, events)


@events_of.register
def _length_batch(node: esper.LengthBatch, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    cti, ordered, n = source.cti, in_order(source.events, node.source.schema), node.n
    full = len(ordered) // n
    lasts = [ordered[k * n + n - 1].start for k in range(full)]
    events: list[Ev] = []
    for k in range(full):
        batch = ordered[k * n:(k + 1) * n]
        start = lasts[k]
        end = lasts[k + 1] if k + 1 < full else INFINITY_MICROS
        if end <= start:
            continue  # the next batch fills at the same instant: an empty lifetime
        if cti == INFINITY_MICROS:
            head = stable = True
        else:
            head = cti is not None and start < cti and all(e.head_stable for e in batch)
            stable = head and k + 1 < full and _reached(end, cti, ordered, (k + 2) * n)
        events.extend(Ev(start, end, e.payload, stable, head) for e in batch)
    return source.derived(node, events)


@events_of.register
def _time_batch(node: esper.TimeBatch, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    events = []
    for e in source.events:
        start = shift(node.batch_start(e.start), node.size)
        if start >= INFINITY_MICROS:
            continue
        # the lifetime follows from the start alone: stable once the start and payload are
        events.append(Ev(start, shift(start, node.size), e.payload, e.head_stable, e.head_stable))
    return source.derived(node, events)
