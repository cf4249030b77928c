"""The reference semantics of ``as_of_join`` and ``to_signal`` (docs/as-of-joins.md;
docs/decisions.md).

Stability rests on the two facts every stream keeps at its CTI ``c`` (``reference.operators``):
an event whose start or payload may still change starts at or after ``c``, and so does every
event still to come.

- ``as_of_join``: an output event has the left event's lifetime; its payload depends on which
  right event is the latest match at or before the left start ``s``. That is final once no right
  event can still appear or change in ``(m, s]``, ``m`` the partner's start: when the right CTI
  passes ``s``, or when ``m == s`` (a later right event at ``s`` would be one more partner, not
  another one). So the output's head is stable when the left event's and the partner's are and
  one of those holds; the whole event when, besides, the left event's end is stable.
- ``to_signal``: an event's end is the next start ``t`` of its key; it is final when ``t`` passes
  the CTI, or reaches it and an event of the key with a stable start and payload starts at
  ``t`` (docs/ctis-and-release.md#stability-and-the-release-rule). An end ``INFINITY`` is
  final only once the CTI is ``INFINITY``.
"""
from __future__ import annotations

from typing import Any, Mapping

from streamql.query import as_of
from streamql.reference.expressions import evaluate
from streamql.reference.operators import Ev, Flow, end_floor, events_of
from streamql.reference.joins import binary_flow
from streamql.payload import value_key
from streamql.time import INFINITY_MICROS


@events_of.register
def _as_of_join(node: as_of.AsOfJoin, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for l in left.events:
        earliest = None if node.within is None else l.start - node.within
        matches = [r for r in right.events
                   if r.start <= l.start and (earliest is None or r.start >= earliest)
                   and evaluate(node.on, [l.payload, r.payload]) is True]
        if not matches:
            continue
        latest = max(r.start for r in matches)
        # no right event can still come or change in (latest, l.start]: the right CTI passed the
        # left start, or that interval is empty
        settled = latest == l.start or (right.cti is not None and l.start < right.cti)
        for r in (r for r in matches if r.start == latest):
            payload = evaluate(node.projection, [l.payload, r.payload])
            head = l.head_stable and r.head_stable and settled
            stable = head and l.end_stable
            events.append(Ev(l.start, l.end, payload, stable, head, None if stable else end_floor(l, left.cti)))
    return binary_flow(node, [left, right], events)


@events_of.register
def _to_signal(node: as_of.ToSignal, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    cti = source.cti
    by_key: dict[tuple[Any, ...], list[Ev]] = {}
    for e in source.events:
        by_key.setdefault(value_key(node.key.type, evaluate(node.key, [e.payload])), []).append(e)
    events = []
    for same_key in by_key.values():
        for e in same_key:
            later = [x for x in same_key if x.start > e.start]
            end = min((x.start for x in later), default=INFINITY_MICROS)
            if cti == INFINITY_MICROS:
                stable = e.head_stable  # no event can come any more
            else:
                made = any(x.head_stable for x in later if x.start == end)
                stable = e.head_stable and cti is not None and (end < cti or (end == cti and made))
            events.append(Ev(e.start, end, e.payload, stable, e.head_stable))
    return source.derived(node, events)
