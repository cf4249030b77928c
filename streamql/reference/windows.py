"""The reference semantics of windows, grouped windows and ``group_apply`` (docs/windows.md, docs/grouping.md).

Each window kind is a function from one group's events to its windows: the window's lifetime,
its member events (lifetimes clipped to the window) and whether the window is stable. The
aggregates and the projection then give one output event per window; ``top_k`` ranks the
members instead and gives one output event per kept member.
"""
from __future__ import annotations

import decimal
import math
from typing import Any, Iterable, Mapping

import attrs

from streamql.expr.nodes import Aggregate, Expr, GroupKey, Rank, aggregates_of
from streamql.payload import Kind, ValueType, value_key
from streamql.query import windows
from streamql.reference.expressions import evaluate
from streamql.reference.operators import GROUP, Ev, Flow, bounded, events_of
from streamql.time import INFINITY_MICROS, from_micros, shift


@attrs.frozen
class Formed:
    """One window: its lifetime, its members (clipped to it) and whether it is stable."""

    start: int
    end: int
    members: list[Ev]
    stable: bool
    head_stable: bool


def _clip(e: Ev, start: int, end: int) -> Ev:
    return attrs.evolve(e, start=max(e.start, start), end=min(e.end, end))


def snapshot(events: list[Ev], cti: int | None) -> list[Formed]:
    """One window per interval between consecutive endpoints in which some event is alive."""
    points = sorted({e.start for e in events} | {e.end for e in events})
    formed = []
    for a, b in zip(points, points[1:]):
        alive = [e for e in events if e.start <= a < e.end]
        if not alive:
            continue
        # a boundary at the CTI counts only if what makes it is stable
        # (docs/ctis-and-release.md#stability-and-the-release-rule)
        stable_boundary = (any(e.end == b and e.end_stable for e in alive)
                           or any(e.start == b and e.head_stable for e in events))
        stable = cti is not None and (cti == INFINITY_MICROS or b < cti or (b == cti and stable_boundary))
        formed.append(Formed(a, b, [_clip(e, a, b) for e in alive], stable, cti is not None and a < cti))
    return formed


def hopping(spec: windows.HoppingWindow, events: list[Ev], cti: int | None, horizon: int | None) -> list[Formed]:
    """Every window ``[k*hop, k*hop + size)`` that some event overlaps. An event with end INFINITY
    reaches every window after its start: while the CTI is finite, the ones that start before the
    CTI are produced (the later ones cannot be stable yet); once it is INFINITY, the event never
    ends and reaches the windows starting at or before ``horizon`` (docs/windows.md#events-that-never-end)."""
    members: dict[int, list[Ev]] = {}
    for e in events:
        first = spec.first_window_ending_after(e.start)
        if e.end == INFINITY_MICROS:
            if cti is None:
                last = first - 1
            elif cti != INFINITY_MICROS:
                last = (cti - 1) // spec.hop
            else:
                last = first - 1 if horizon is None else horizon // spec.hop
        else:
            last = (e.end - 1) // spec.hop
        for k in range(first, last + 1):
            members.setdefault(k, []).append(e)
    formed = []
    for k in sorted(members):
        start = k * spec.hop
        end = shift(start, spec.size)
        stable = cti is not None and (cti == INFINITY_MICROS or end <= cti)
        formed.append(Formed(start, end, [_clip(e, start, end) for e in members[k]], stable, stable))
    return formed


def counted(spec: windows.CountWindow, events: list[Ev], ctis: tuple[int | None, ...]
            ) -> tuple[list[Formed], tuple[int | None, ...]]:
    """Windows over ``n`` consecutive distinct start times, and the group's output CTI at every step.

    The output CTI of an earlier step is computed from the final events: what starts before a
    step's CTI was there, as it is now, at that step
    (docs/ctis-and-release.md#cti-propagation-through-operators), and only those
    starts decide it."""
    cti = ctis[-1] if ctis else None
    starts = sorted({e.start for e in events})
    formed = []
    for i in range(len(starts) - spec.n + 1):
        first, last = starts[i], starts[i + spec.n - 1]
        end = shift(last, 1)
        inside = [_clip(e, first, end) for e in events if first <= e.start <= last]
        stable = cti is not None and (cti == INFINITY_MICROS or last < cti)
        formed.append(Formed(first, end, inside, stable, stable))
    return formed, tuple(count_window_cti(spec, starts, c) for c in ctis)


def count_window_cti(spec: windows.CountWindow, starts: list[int], cti: int | None) -> int | None:
    """The start of the earliest count window that is not yet stable, or the CTI if that is earlier.

    At a CTI of INFINITY nothing can change, so the CTI stays INFINITY (decisions.md)."""
    if cti is None or cti == INFINITY_MICROS:
        return cti
    for i, first in enumerate(starts):
        if first >= cti:
            break
        filled = i + spec.n - 1 < len(starts)
        if not filled or starts[i + spec.n - 1] >= cti:
            return first
    return cti


def sessions(spec: windows.SessionWindow, events: list[Ev], ctis: tuple[int | None, ...]
             ) -> tuple[list[Formed], tuple[int | None, ...]]:
    """The sessions of one group (cut into pieces with ``max_duration``), and the group's output
    CTI at every step.

    Taken in start order, an event joins the current session when it starts before the greatest
    extended end ``e + gap`` of the session's events so far (its extended lifetime then overlaps
    that event's); otherwise it starts a new session. A session is stable once the CTI reaches
    its end: a later event starts at or after the CTI, and touching does not merge. As for count
    windows, the CTIs of earlier steps are computed from the final events (``session_cti``)."""
    cti = ctis[-1] if ctis else None
    found: list[tuple[int, int, list[Ev]]] = []  # (start, end, members) per session
    for e in sorted(events, key=lambda e: e.start):
        extended = shift(e.end, spec.gap)
        if found and e.start < found[-1][1]:
            start, end, members = found[-1]
            found[-1] = (start, max(end, extended), members + [e])
        else:
            found.append((e.start, extended, [e]))
    formed = []
    for start, end, members in found:
        stable = cti is not None and (cti == INFINITY_MICROS or end <= cti)
        if spec.max_duration is None:
            formed.append(Formed(start, end, members, stable, stable))
            continue
        pieces: dict[int, list[Ev]] = {}
        for e in members:
            pieces.setdefault((e.start - start) // spec.max_duration, []).append(e)
        for k in sorted(pieces):
            piece_start = start + k * spec.max_duration
            # the last piece ends with its session (Trill's session windows do the same)
            piece_end = min(shift(piece_start, spec.max_duration), end)
            formed.append(Formed(piece_start, piece_end, [_clip(e, piece_start, piece_end) for e in pieces[k]],
                                 stable, stable))
    bounds = [(start, end) for start, end, _ in found]
    return formed, tuple(session_cti(bounds, c) for c in ctis)


def session_cti(bounds: list[tuple[int, int]], cti: int | None) -> int | None:
    """The start of the earliest session (``(start, end)`` in ``bounds``) that is not yet stable —
    the CTI has not reached its end — or the CTI if that is earlier (INFINITY stays INFINITY)."""
    if cti is None or cti == INFINITY_MICROS:
        return cti
    return min([cti] + [start for start, end in bounds if end > cti])


def aggregate(agg: Aggregate, members: list[Ev]) -> Any:
    """The value of one aggregate over a window's members (nulls skipped; null when all are)."""
    if agg.fn == "count":
        return len(members)
    assert agg.arg is not None
    values = [evaluate(agg.arg, [m.payload]) for m in members]
    if agg.fn == "user":
        arg_type = agg.arg.type
        ordered = sorted(zip(members, values), key=lambda mv: (mv[0].start, mv[0].end, value_key(arg_type, mv[1])))
        return agg.user.fold([(v, from_micros(m.start), from_micros(m.end)) for m, v in ordered])
    present = [v for v in values if v is not None]
    if not present:
        return None
    if agg.fn == "sum":
        with decimal.localcontext(prec=80):  # decimal(38, 18) sums are exact on Spark: exact here too
            return sum(present[1:], present[0])
    if agg.fn == "avg":
        return float(sum(present)) / len(present)
    if agg.fn == "min":
        return min(present, key=_nan_greatest)
    if agg.fn == "max":
        return max(present, key=_nan_greatest)
    raise ValueError(f"unknown aggregate {agg.fn!r}")


def _nan_greatest(value: Any) -> tuple[bool, Any]:
    """Spark's order of floats: NaN above every other value (Python's min/max would depend on
    the order of the values)."""
    nan = isinstance(value, float) and math.isnan(value)
    return (nan, 0.0 if nan else value)


def _groups(key: Expr | None, events: Iterable[Ev]) -> dict[tuple[Any, ...], tuple[Any, list[Ev]]]:
    """Events by group key (keys compared as the payload order compares them: nulls equal)."""
    groups: dict[tuple[Any, ...], tuple[Any, list[Ev]]] = {}
    for e in events:
        value = None if key is None else evaluate(key, [e.payload])
        ident = () if key is None else value_key(key.type, value)
        groups.setdefault(ident, (value, []))[1].append(e)
    return groups


def _horizon(flow: Flow) -> int | None:
    """The greatest finite time seen at an operator's input: starts, finite ends, finite CTIs."""
    times = [e.start for e in flow.events] + [e.end for e in flow.events if e.end != INFINITY_MICROS]
    if flow.finite_cti is not None:
        times.append(flow.finite_cti)
    return max(times, default=None)


def _least_steps(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """Step by step, the lesser of two CTI histories (a step with no CTI in ``b`` keeps ``a``'s)."""
    return tuple(x if x is None or y is None else min(x, y) for x, y in zip(a, b))


def formed_windows(node: windows.WindowOperator, source: Flow) -> tuple[list[tuple[Any, Formed]], tuple[int | None, ...]]:
    """Every window of every group of ``node`` over ``source`` — each with its group's key value
    (None without a key) — and the operator's output CTI at every step."""
    spec, cti = node.window, source.cti
    horizon = _horizon(source)
    found: list[tuple[Any, Formed]] = []
    if spec.cti_depends_on_data:
        output_ctis = source.ctis
    else:
        output_ctis = tuple(spec.output_cti(c) for c in source.ctis)
    for key_value, group in _groups(node.key, source.events).values():
        if isinstance(spec, windows.SnapshotWindow):
            formed = snapshot(group, cti)
        elif isinstance(spec, windows.HoppingWindow):
            formed = hopping(spec, group, cti, horizon)
        elif isinstance(spec, windows.SessionWindow):
            formed, group_ctis = sessions(spec, group, source.ctis)
            output_ctis = _least_steps(output_ctis, group_ctis)
        else:
            assert isinstance(spec, windows.CountWindow)
            formed, group_ctis = counted(spec, group, source.ctis)
            output_ctis = _least_steps(output_ctis, group_ctis)
        found.extend((key_value, w) for w in formed)
    return found, output_ctis


def _window_flow(node: windows.WindowAggregate, source: Flow) -> Flow:
    aggregates = aggregates_of(node.projection)
    key_leaf = GroupKey(node.key.type) if node.key is not None else None
    formed, output_ctis = formed_windows(node, source)
    events: list[Ev] = []
    for key_value, w in formed:
        leaves: dict[Expr, Any] = {a: aggregate(a, w.members) for a in aggregates}
        if key_leaf is not None:
            leaves[key_leaf] = key_value
        events.append(Ev(w.start, w.end, evaluate(node.projection, [], leaves), w.stable, w.head_stable))
    return Flow(events, output_ctis)


@events_of.register
def _window_aggregate(node: windows.WindowAggregate, env: Mapping[str, Flow]) -> Flow:
    return _window_flow(node, events_of(node.source, env))


def ranked(node: windows.TopK, members: list[Ev]) -> list[tuple[Ev, int]]:
    """The members of rank at most ``k`` with their ranks: a member's rank is one more than the
    number of members whose ``by`` value ranks strictly before its own (SQL ``RANK``)."""
    values = [evaluate(node.by, [m.payload]) for m in members]
    ranks = [1 + sum(ranks_before(other, value, node.descending) for other in values) for value in values]
    return [(m, rank) for m, rank in zip(members, ranks) if rank <= node.k]


def ranks_before(a: Any, b: Any, descending: bool) -> bool:
    """Whether the value ``a`` ranks strictly before ``b``: the greater first when ``descending``,
    else the lesser; a null ranks after every value, in both directions, and nulls tie; NaN is
    greater than every other float and equal to itself (Spark's order; decisions.md)."""
    if a is None:
        return False
    if b is None:
        return True
    x, y = _nan_greatest(a), _nan_greatest(b)
    return bool(x > y) if descending else bool(x < y)


@events_of.register
def _top_k(node: windows.TopK, env: Mapping[str, Flow]) -> Flow:
    formed, output_ctis = formed_windows(node, events_of(node.source, env))
    rank_leaf = Rank(ValueType(Kind.INT))
    # each kept event takes its window's lifetime and stability: the window's members, and so the
    # ranks, are final exactly when the window is
    events = [Ev(w.start, w.end, evaluate(node.projection, [m.payload], {rank_leaf: rank}), w.stable, w.head_stable)
              for _, w in formed for m, rank in ranked(node, w.members)]
    return Flow(events, output_ctis)


@events_of.register
def _group_source(node: windows.GroupSource, env: Mapping[str, Flow]) -> Flow:
    return env[GROUP]


@events_of.register
def _group_apply(node: windows.GroupApply, env: Mapping[str, Flow]) -> Flow:
    source = events_of(node.source, env)
    key_leaf = GroupKey(node.key.type)
    # every group sees the same CTIs, including groups with no events yet
    # (docs/grouping.md#ctis-every-group-sees-the-same-ctis)
    empty = events_of(node.apply, {**env, GROUP: Flow([], source.ctis)})
    ctis = empty.ctis
    events: list[Ev] = []
    for key_value, group in _groups(node.key, source.events).values():
        inner = events_of(node.apply, {**env, GROUP: Flow(group, source.ctis)})
        ctis = _least_steps(ctis, inner.ctis)
        leaves: dict[Expr, Any] = {key_leaf: key_value}
        # an unstable end keeps its group's bound, not the least CTI over the groups (decisions.md)
        events.extend(attrs.evolve(bounded(e, inner.cti), payload=evaluate(node.result, [e.payload], leaves))
                      for e in inner.events)
    return Flow(events, ctis)
