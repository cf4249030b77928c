"""Multi-stream nodes: temporal join, anti-semi join, clip and union (docs/joins.md, docs/union.md).

Every multi-stream operator's output CTI is the minimum of its inputs' CTIs (none while any input
has none). Predicates and projections are expressions of two payloads: ``Param`` 0 is the left
event's, ``Param`` 1 the right event's.
"""
from __future__ import annotations

from typing import Sequence

import attrs

from streamql.expr.nodes import Binary as BinaryExpr
from streamql.expr.nodes import Expr, Param
from streamql.payload import PayloadSchema
from streamql.query.nodes import Node, Projected
from streamql.time import INFINITY_MICROS


def least_cti(ctis: tuple[int | None, ...]) -> int | None:
    """The minimum of the inputs' CTIs, or ``None`` while any input has no CTI."""
    if any(c is None for c in ctis):
        return None
    return min(c for c in ctis if c is not None)


#: where a stream's CTI reaches INFINITY by the flush: after every arrival
FLUSHED = INFINITY_MICROS


def greatest_finite_cti(ctis: tuple[int | None, ...], finite_ctis: tuple[int | None, ...],
                        reached: tuple[int | None, ...], inputs: Sequence[frozenset[str]] = ()
                        ) -> tuple[int | None, int | None]:
    """A multi-stream operator's greatest finite CTI (the horizon of windows over events that never
    end, docs/windows.md#events-that-never-end) and the arrival at which its CTI reaches INFINITY,
    from its inputs' final CTIs
    (``ctis``), greatest finite CTIs and arrivals at which they reached INFINITY (``reached``: an
    arrival position, ``FLUSHED``, or None while finite) — for a compiler that keeps no CTI history.

    The operator's CTI is the least of its inputs' at every step, and every input's CTI only grows:
    while it is finite, its greatest finite CTI is its final CTI; once every input is at INFINITY,
    it reached INFINITY with the last of them. The inputs that reached INFINITY at that arrival did
    so in no assumed order: the one that came last was at its greatest finite CTI the step before,
    the others at INFINITY already, so the operator was at that input's — the greatest of those
    over the inputs that had one (None if none had: the operator had no CTI before). The reference
    evaluator reads the same from the history (docs/decisions.md).

    ``inputs``: per input stream, the query inputs whose CTI takes it to INFINITY (empty where not
    known). Streams that one and the same input takes there (the branches of one input) get there
    in one step, not in some order: where every stream reaching INFINITY at the last arrival is of
    one input, the operator was at the least of their greatest finite CTIs the step before."""
    cti = least_cti(ctis)
    if cti is None or cti != INFINITY_MICROS:
        return cti, None
    if any(r is None for r in reached):  # an input that cannot say when: the least of them all
        known = [c for c in finite_ctis if c is not None]
        return (min(known) if known else None), FLUSHED
    last = max(r for r in reached if r is not None)
    if len(reached_by(reached, inputs)) == 1:  # every stream that came last is of one and the same input
        together = [c for c, r in zip(finite_ctis, reached) if r == last]
        return (None if None in together else min(c for c in together if c is not None)), last
    at_last = [c for c, r in zip(finite_ctis, reached) if r == last and c is not None]
    return (max(at_last) if at_last else None), last


def reached_by(reached: tuple[int | None, ...], inputs: Sequence[frozenset[str]]) -> frozenset[str]:
    """The query inputs whose CTI takes a multi-stream operator to INFINITY: those of its input
    streams that reach it last (none while one of them is finite, or where one is not known)."""
    if not reached or None in reached or len(inputs) != len(reached):
        return frozenset()
    last = max(r for r in reached if r is not None)
    at_last = [s for s, r in zip(inputs, reached) if r == last]
    return frozenset() if any(not s for s in at_last) else frozenset().union(*at_last)


def params_read(expr: Expr) -> set[int]:
    """The lambda parameters an expression reads (0: the left payload, 1: the right payload)."""
    if isinstance(expr, Param):
        return {expr.index}
    found: set[int] = set()
    for value in attrs.astuple(expr, recurse=False):
        children = value if isinstance(value, tuple) else (value,)
        for child in children:
            if isinstance(child, Expr):
                found |= params_read(child)
    return found


def conjuncts(expr: Expr) -> list[Expr]:
    """The operands of a predicate's top-level ``&``s (the predicate itself if it has none)."""
    if isinstance(expr, BinaryExpr) and expr.op == "&":
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


def equality_key(conjunct: Expr) -> tuple[Expr, Expr] | None:
    """``(a, b)`` if ``conjunct`` is ``a == b`` (either way round) with ``a`` reading only the
    left payload and ``b`` only the right one: an equi-join key. None otherwise."""
    if not (isinstance(conjunct, BinaryExpr) and conjunct.op == "=="):
        return None
    reads = params_read(conjunct.left), params_read(conjunct.right)
    if reads == ({0}, {1}):
        return conjunct.left, conjunct.right
    if reads == ({1}, {0}):
        return conjunct.right, conjunct.left
    return None


def equality_keys(on: Expr | None) -> list[tuple[Expr, Expr]]:
    """The pairs ``(a, b)`` of the conjuncts ``a == b`` of ``on`` (either way round) where ``a``
    reads only the left payload and ``b`` only the right one: equi-join keys. Pairs for which
    ``on`` holds have equal, non-null keys.

    >>> equality_keys(trace(lambda l, r: (l.k == r.k) & (l.v > r.o), ...))  # doctest: +SKIP
    [(l.k, r.k)]
    """
    if on is None:
        return []
    return [key for c in conjuncts(on) if (key := equality_key(c)) is not None]


@attrs.frozen(cache_hash=True)
class Binary(Node):
    """An operator over a left and a right stream; its CTI is the lesser of theirs."""

    left: Node
    right: Node

    @property
    def sources(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    @property
    def schema(self) -> PayloadSchema:
        return self.left.schema

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        return least_cti(input_ctis)


@attrs.frozen(cache_hash=True)
class Join(Projected, Binary):
    """Pairs of a left and a right event whose lifetimes overlap and for which ``on`` holds
    (``None``: every overlapping pair); the output lifetime is the intersection and the payload
    ``projection`` of the two payloads."""

    on: Expr | None
    projection: Expr

    @property
    def may_be_open(self) -> bool:
        return self.left.may_be_open and self.right.may_be_open


@attrs.frozen(cache_hash=True)
class AntiJoin(Binary):
    """Each left event restricted to the parts of its lifetime where no right event for which ``on``
    holds (``None``: any right event) is alive: one left event may become several, or none."""

    on: Expr | None

    @property
    def may_be_open(self) -> bool:
        return self.left.may_be_open


@attrs.frozen(cache_hash=True)
class Clip(Binary):
    """StreamInsight's ClipEventDuration: each left event's end is cut at the start of the first
    right event, for which ``on`` holds, that starts strictly after the left event's start."""

    on: Expr

    @property
    def may_be_open(self) -> bool:
        return self.left.may_be_open


@attrs.frozen(cache_hash=True)
class Union(Node):
    """The events of all ``inputs`` (duplicates kept); they share one payload type."""

    inputs: tuple[Node, ...]

    @property
    def sources(self) -> tuple[Node, ...]:
        return self.inputs

    @property
    def schema(self) -> PayloadSchema:
        return self.inputs[0].schema

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        return least_cti(input_ctis)
