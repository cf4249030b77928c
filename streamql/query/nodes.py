"""The operator tree. Each node declares its inputs, derives its payload schema and states
its CTI propagation rule (docs/ctis-and-release.md#cti-propagation-through-operators);
it never knows how it runs.

Nodes are frozen attrs classes: structurally equal queries are ``==`` and hash equal.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Mapping

import attrs

from streamql.events import Shape
from streamql.expr.nodes import Expr
from streamql.payload import PayloadSchema
from streamql.time import duration_micros, shift


@attrs.frozen(cache_hash=True)
class Node:
    @property
    def schema(self) -> PayloadSchema:
        raise NotImplementedError

    @property
    def sources(self) -> tuple[Node, ...]:
        return ()

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        """The operator's output CTI given its inputs' CTIs (one per source)."""
        return input_ctis[0]

    @property
    def cti_depends_on_data(self) -> bool:
        """Whether the output CTI depends on the events (count windows), not only on the input CTIs:
        then the evaluators compute it from the data and ``output_cti`` does not apply."""
        return any(s.cti_depends_on_data for s in self.sources)

    @property
    def may_be_open(self) -> bool:
        """Whether the node can output events that never end (end ``INFINITY``), judged statically."""
        return any(s.may_be_open for s in self.sources)


def struct_schema(expr: Expr) -> PayloadSchema:
    """The payload schema an expression builds: a ``select``'s STRUCT (the fluent API checks the
    kind before it makes a node, so it is there)."""
    schema = expr.type.schema
    assert schema is not None
    return schema


class Projected:
    """A node whose payload is the STRUCT its ``projection`` builds: its ``schema`` is that one.
    Each such node declares ``projection`` among its own attrs fields, where it stands in the
    constructor, and names ``Projected`` first among its bases so that this ``schema`` wins.

    >>> Select(source, projection).schema == projection.type.schema  # doctest: +SKIP
    True
    """

    __slots__ = ()
    projection: Expr

    @property
    def schema(self) -> PayloadSchema:
        return struct_schema(self.projection)


@attrs.frozen(cache_hash=True)
class Input(Node):
    name: str
    payload: PayloadSchema
    shape: Shape

    @property
    def schema(self) -> PayloadSchema:
        return self.payload

    @property
    def may_be_open(self) -> bool:
        # an edge may never get its end edge; an interval may be given the end INFINITY
        return self.shape is not Shape.POINT


@attrs.frozen(cache_hash=True)
class Unary(Node):
    source: Node

    @property
    def schema(self) -> PayloadSchema:
        return self.source.schema

    @property
    def sources(self) -> tuple[Node, ...]:
        return (self.source,)


@attrs.frozen(cache_hash=True)
class Where(Unary):
    """Keeps the events whose payload satisfies ``predicate`` (a BOOL expression)."""

    predicate: Expr


@attrs.frozen(cache_hash=True)
class Select(Projected, Unary):
    """Maps each payload through ``projection`` (a STRUCT expression)."""

    projection: Expr


@attrs.frozen(cache_hash=True)
class AlterDuration(Unary):
    """Sets each lifetime to ``[start, start + duration)``; ``duration`` is a TIMEDELTA
    expression of the payload (a literal for a constant). Events whose new lifetime is
    empty (duration <= 0 or null) are removed."""

    duration: Expr

    @property
    def may_be_open(self) -> bool:
        return True  # a long enough duration saturates at INFINITY


@attrs.frozen(cache_hash=True)
class AlterLifetime(Unary):
    """Moves the start by ``start_shift``; the end moves too (``duration=None``) or becomes
    ``start + duration``. ``shift(d)`` is ``AlterLifetime(d, None)``. The CTI moves with the start."""

    start_shift: timedelta
    duration: timedelta | None

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        cti = input_ctis[0]
        return None if cti is None else shift(cti, duration_micros(self.start_shift))

    @property
    def may_be_open(self) -> bool:
        # moving a late end forward (or lengthening a lifetime) can saturate at INFINITY
        return self.duration is not None or self.start_shift > timedelta(0) or self.source.may_be_open


@attrs.frozen(cache_hash=True)
class ToPoint(Unary):
    """Turns each event into a point event at its start."""

    @property
    def may_be_open(self) -> bool:
        return False


def query_cti(node: Node, input_ctis: Mapping[str, int | None]) -> int | None:
    """A query's output CTI from its inputs' CTIs (by input name), for queries whose CTI rules do
    not depend on the data (``Node.cti_depends_on_data``)."""
    if isinstance(node, Input):
        return input_ctis[node.name]
    return node.output_cti(tuple(query_cti(s, input_ctis) for s in node.sources))


def inputs_of(node: Node) -> dict[str, Input]:
    """The input declarations a query reads, by name; two different inputs with one name are an error."""
    found: dict[str, Input] = {}
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Input):
            other = found.setdefault(current.name, current)
            if other != current:
                from streamql.errors import BindingError

                raise BindingError(
                    f"the query reads two different inputs named {current.name!r} "
                    f"({other.schema.name}/{other.shape.name} and {current.schema.name}/{current.shape.name})"
                )
        stack.extend(current.sources)
    return found


#: the operators that map each event by itself: its lifetime and payload from its own alone
EACH_EVENT: tuple[type[Unary], ...] = (Where, Select, AlterDuration, AlterLifetime, ToPoint)


def input_through(node: Node, operators: tuple[type[Unary], ...] = EACH_EVENT) -> Input | None:
    """The input whose events ``node`` outputs through ``operators`` alone (each of the
    ``EACH_EVENT`` kind), else None.

    >>> input_through(readings.where(lambda e: e.v > 0).alter_duration(d).node)  # doctest: +SKIP
    Input(name='readings', ...)
    """
    while isinstance(node, operators):
        node = node.source
    return node if isinstance(node, Input) else None

