"""The reference semantics of join, anti_join, clip and union (docs/joins.md, docs/union.md).

Stability (docs/ctis-and-release.md#stability-and-the-release-rule) comes from two facts about
any stream at CTI ``c`` that the operators keep:
an event whose start or payload may still change starts at or after ``c``; an event whose end may
still change will end at or after ``c`` (or its own ``end_floor``, operators.end_floor). So a
partner whose end is not stable is still alive before that bound, and a boundary at ``t < c`` of
the other stream cannot move.
"""
from __future__ import annotations

from typing import Mapping

from streamql.expr.nodes import Expr
from streamql.query import joins
from streamql.reference.expressions import evaluate
from streamql.reference.operators import Ev, Flow, bounded, end_floor, events_of


def _holds(on: Expr | None, left: Ev, right: Ev) -> bool:
    return on is None or evaluate(on, [left.payload, right.payload]) is True


def _alive_at(e: Ev, t: int, cti: int | None) -> bool:
    """Whether ``e`` (with a stable head) is certain to be alive at ``t``, a time inside its current
    lifetime: ``t`` is its start, or its end, whatever it becomes, is after ``t``."""
    floor = end_floor(e, cti)
    return t == e.start or (floor is not None and t < floor)


def _least(*times: int | None) -> int | None:
    """The least of ``times``, or None if any is unknown."""
    if any(t is None for t in times):
        return None
    return min(t for t in times if t is not None)


def _reaches(left: Ev, left_cti: int | None, right: Ev) -> bool:
    """Whether ``right``, starting after ``left``'s start, cuts ``left`` whatever ``left``'s end becomes:
    it starts inside ``left``'s lifetime, or exactly at an end that may still grow but not shrink
    (a cut there keeps the end where it is)."""
    return right.start < left.end or (not left.end_stable and right.start == end_floor(left, left_cti) == left.end)


def _boundary_final(b: int, left: Ev, makers: list[Ev], left_cti: int | None, right_cti: int | None) -> bool:
    """Whether the end ``b`` of a piece of ``left`` — ``left``'s own end, or the start of the right
    events ``makers`` — is final: no right event can still start before it (``b`` is at or before
    the right CTI), and it cannot move later: it is ``left``'s stable end, or a right event with a
    stable start and payload starts at ``b`` and ``left`` surely lasts until ``b``."""
    if right_cti is None or b > right_cti:
        return False
    if b == left.end and left.end_stable:
        return True
    floor = end_floor(left, left_cti)
    return any(r.head_stable for r in makers) and floor is not None and b <= floor


def binary_flow(node: joins.Binary | joins.Union, sources: list[Flow], events: list[Ev]) -> Flow:
    """``events`` with the least of the sources' CTIs at every step."""
    return Flow(events, tuple(node.output_cti(step) for step in zip(*(s.ctis for s in sources))))


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
            floor = _least(end_floor(l, left.cti), end_floor(r, right.cti))
            events.append(Ev(start, end, payload, stable, head, None if stable else floor))
    return binary_flow(node, [left, right], events)


@events_of.register
def _anti_join(node: joins.AntiJoin, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for l in left.events:
        candidates = [r for r in right.events if l.start < r.end and _reaches(l, left.cti, r) and _holds(node.on, l, r)]
        matches = sorted((r for r in candidates if r.start < l.end), key=lambda r: r.start)
        pieces, t = [], l.start
        for r in matches:
            if r.start > t:
                pieces.append((t, r.start))
            t = max(t, r.end)
        if t < l.end:
            pieces.append((t, l.end))
        # an end that may still change is cut by a right event starting at or after the right CTI at the earliest
        floor = _least(end_floor(l, left.cti), right.cti)
        for a, b in pieces:
            # a piece keeps its start once no later right event can start before it and left surely reaches it
            head = (l.head_stable and right.cti is not None and a < right.cti and _alive_at(l, a, left.cti))
            makers = [r for r in candidates if r.start == b]
            stable = head and _boundary_final(b, l, makers, left.cti, right.cti)
            events.append(Ev(a, b, l.payload, stable, head, None if stable else floor))
    return binary_flow(node, [left, right], events)


@events_of.register
def _clip(node: joins.Clip, env: Mapping[str, Flow]) -> Flow:
    left, right = events_of(node.left, env), events_of(node.right, env)
    events = []
    for l in left.events:
        cuts = [r for r in right.events if l.start < r.start and _reaches(l, left.cti, r) and _holds(node.on, l, r)]
        end = min((r.start for r in cuts), default=l.end)
        makers = [r for r in cuts if r.start == end]
        stable = l.head_stable and _boundary_final(end, l, makers, left.cti, right.cti)
        floor = _least(end_floor(l, left.cti), right.cti)
        events.append(Ev(l.start, end, l.payload, stable, l.head_stable, None if stable else floor))
    return binary_flow(node, [left, right], events)


@events_of.register
def _union(node: joins.Union, env: Mapping[str, Flow]) -> Flow:
    sources = [events_of(s, env) for s in node.inputs]
    # an event keeps the bound its own stream proves (the stream's CTI, or its own floor if later),
    # not the union's lesser CTI: derived events (keep_last's, a window's) have no floor of their own
    return binary_flow(node, sources, [bounded(e, s.cti) for s in sources for e in s.events])
