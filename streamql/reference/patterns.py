"""The reference semantics of ``followed_by`` and ``not_followed_by`` (docs/patterns.md;
docs/decisions.md, "Patterns (issue 26)").

A left event's *partners* are the right events for which ``on`` holds that start strictly after
it and, with ``within``, before its start plus ``within``. Only starts matter, and every output
is a point, so an output is stable once its start and payload are.

Stability rests on the two facts every stream keeps at its CTI ``c`` (``reference.operators``):
an event whose start or payload may still change starts at or after ``c``, and so does every
event still to come.

- ``followed_by``: a match ``(a, b)`` is a point at ``b``'s start. With ``all_matches`` it exists
  for good once ``a`` and ``b`` have stable heads. By default it must also stay the *earliest*:
  no partner of ``a`` may still appear or change before ``b`` — true once ``b`` starts at or before
  the right CTI (every right event starting before ``b`` is then stable, none can still come
  there, and one still to come at ``b``'s start ties: one more match, not another one).
- ``not_followed_by``: the absence of ``a`` is a point at ``a.start + within``; it is final once
  ``a`` has a stable head and the right CTI is at or after ``a.start + within`` (every right event
  that could be a partner is then stable, and none can still come).
"""
from __future__ import annotations

from typing import Mapping

from streamql.query import patterns
from streamql.reference.expressions import evaluate
from streamql.reference.joins import binary_flow
from streamql.reference.operators import Ev, Flow, events_of
from streamql.time import INFINITY_MICROS, shift


def _partners(a: Ev, right: Flow, node: patterns.FollowedBy | patterns.NotFollowedBy) -> list[Ev]:
    """The right events for which ``on`` holds that start after ``a`` starts and before its start
    plus ``within`` (any time after it without one)."""
    until = INFINITY_MICROS if node.within is None else shift(a.start, node.within)
    return [b for b in right.events
            if a.start < b.start < until and evaluate(node.on, [a.payload, b.payload]) is True]


@events_of.register
def _followed_by(node: patterns.FollowedBy, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for a in left.events:
        partners = _partners(a, right, node)
        if not node.all_matches:
            earliest = min((b.start for b in partners), default=None)
            partners = [b for b in partners if b.start == earliest]
        for b in partners:
            stable = a.head_stable and b.head_stable
            if not node.all_matches:
                # no earlier partner can still come or change: the right CTI reached b's start
                stable = stable and right.cti is not None and b.start <= right.cti
            payload = evaluate(node.projection, [a.payload, b.payload])
            events.append(Ev(b.start, shift(b.start, 1), payload, stable, stable))
    return binary_flow(node, [left, right], events)


@events_of.register
def _not_followed_by(node: patterns.NotFollowedBy, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for a in left.events:
        at = shift(a.start, node.within)
        if at == INFINITY_MICROS or _partners(a, right, node):
            continue
        # no partner can still come or change before a.start + within
        stable = a.head_stable and right.cti is not None and right.cti >= at
        events.append(Ev(at, shift(at, 1), a.payload, stable, stable))
    return binary_flow(node, [left, right], events)
