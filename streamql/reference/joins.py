"""The reference semantics of join, anti_join, clip and union (DESIGN §4–§5, API.md).

Stability (DESIGN §5) comes from two facts about any stream at CTI ``c`` that the operators keep:
an event whose start or payload may still change starts at or after ``c``; an event whose end may
still change will end at or after ``c``. So a partner whose end is not stable is still alive at
any ``t < c`` of its stream, and a boundary at ``t < c`` of the other stream cannot move.
"""
from __future__ import annotations

from typing import Mapping

from streamql.expr.nodes import Expr
from streamql.query import joins
from streamql.reference.expressions import evaluate
from streamql.reference.operators import Ev, Flow, events_of


def _holds(on: Expr | None, left: Ev, right: Ev) -> bool:
    return on is None or evaluate(on, [left.payload, right.payload]) is True


def _alive_at(e: Ev, t: int, cti: int | None) -> bool:
    """Whether ``e`` (with a stable head) is certain to be alive at ``t``, a time inside its current
    lifetime: ``t`` is its start, its end is stable, or ``t`` is before its stream's CTI (an
    unstable end will be at or after the CTI)."""
    return t == e.start or e.end_stable or (cti is not None and t < cti)


def _boundary_final(b: int, left: Ev, makers: list[Ev], left_cti: int | None, right_cti: int | None) -> bool:
    """Whether the end ``b`` of a piece of ``left`` — ``left``'s own end, or the start of the right
    events ``makers`` — is final: no later right event can start before it (``b`` passes the right
    CTI, or reaches it and what makes it is stable) and ``left`` will still be alive there."""
    stable_maker = (b == left.end and left.end_stable) or any(r.head_stable for r in makers)
    against_right = right_cti is not None and (b < right_cti or (b == right_cti and stable_maker))
    if b == left.end:
        return against_right and left.end_stable
    return against_right and (left.end_stable or (left_cti is not None and b <= left_cti))


def binary_flow(node: joins.Binary | joins.Union, sources: list[Flow], events: list[Ev]) -> Flow:
    """``events`` with the least of the sources' CTIs; the greatest finite CTI is the least of theirs."""
    return Flow(events, node.output_cti(tuple(s.cti for s in sources)),
                joins.least_finite_cti(tuple(s.finite_cti for s in sources)))


@events_of.register
def _join(node: joins.Join, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for l in left.events:
        for r in right.events:
            start, end = max(l.start, r.start), min(l.end, r.end)
            if start >= end or not _holds(node.on, l, r):
                continue
            payload = evaluate(node.projection, [l.payload, r.payload])
            # the pair exists for good once both heads are stable and both partners surely reach its start
            head = (l.head_stable and r.head_stable
                    and _alive_at(l, start, left.cti) and _alive_at(r, start, right.cti))
            # the end is the lesser end: final when both are, or when one is final and the other
            # surely lasts until it
            stable = head and ((l.end_stable and r.end_stable)
                               or (l.end_stable and _alive_at(r, l.end - 1, right.cti) and l.end <= r.end)
                               or (r.end_stable and _alive_at(l, r.end - 1, left.cti) and r.end <= l.end))
            events.append(Ev(start, end, payload, stable, head))
    return binary_flow(node, [left, right], events)


@events_of.register
def _anti_join(node: joins.AntiJoin, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for l in left.events:
        matches = sorted((r for r in right.events if r.start < l.end and l.start < r.end and _holds(node.on, l, r)),
                         key=lambda r: r.start)
        pieces, t = [], l.start
        for r in matches:
            if r.start > t:
                pieces.append((t, r.start))
            t = max(t, r.end)
        if t < l.end:
            pieces.append((t, l.end))
        for a, b in pieces:
            # a piece keeps its start once no later right event can start before it and left surely reaches it
            head = (l.head_stable and right.cti is not None and a < right.cti and _alive_at(l, a, left.cti))
            makers = [r for r in matches if r.start == b]
            events.append(Ev(a, b, l.payload, head and _boundary_final(b, l, makers, left.cti, right.cti), head))
    return binary_flow(node, [left, right], events)


@events_of.register
def _clip(node: joins.Clip, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for l in left.events:
        cuts = [r for r in right.events if l.start < r.start < l.end and _holds(node.on, l, r)]
        end = min((r.start for r in cuts), default=l.end)
        makers = [r for r in cuts if r.start == end]
        stable = l.head_stable and _boundary_final(end, l, makers, left.cti, right.cti)
        events.append(Ev(l.start, end, l.payload, stable, l.head_stable))
    return binary_flow(node, [left, right], events)


@events_of.register
def _union(node: joins.Union, env: Mapping[str, Flow]) -> Flow:
    sources = [events_of(s, env) for s in node.inputs]
    return binary_flow(node, sources, [e for s in sources for e in s.events])
