"""The fluent API builds immutable query values (docs/architecture.md#the-layers): structural equality and
hashing, no mutation of the receiver, ``shift`` as ``alter_lifetime``, argument checks."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

import streamql as sq
from streamql.query import nodes

MINUTE = timedelta(minutes=1)


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclasses.dataclass(frozen=True)
class Usage:
    meter: str
    watts: float


@dataclasses.dataclass(frozen=True)
class Other:
    meter: str
    consumption: float


def build() -> sq.Stream[Usage]:
    readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
    return (
        readings.where(lambda e: (e.consumption > 100) & (e.meter != "m0"))
        .alter_duration(timedelta(minutes=3))
        .shift(MINUTE)
        .select(lambda e: Usage(e.meter, e.consumption * 1000))
        .to_point()
    )


def test_queries_built_twice_are_equal_and_hash_equal() -> None:
    a, b = build(), build()
    assert a is not b
    assert a == b
    assert hash(a) == hash(b)
    assert a.node == b.node
    assert len({a, b}) == 1
    assert {a: 1}[b] == 1


def test_queries_that_differ_are_not_equal() -> None:
    readings = sq.input("readings", Reading)
    assert readings.where(lambda e: e.consumption > 1) != readings.where(lambda e: e.consumption > 2)
    assert readings.shift(MINUTE) != readings.shift(2 * MINUTE)
    assert readings != sq.input("other", Reading)
    assert readings != sq.input("readings", Reading, shape=sq.Shape.INTERVAL)
    assert readings != sq.input("readings", Other)
    assert readings.to_point() != readings
    assert readings != readings.node  # a Stream is only equal to a Stream


def test_building_does_not_change_the_receiver() -> None:
    readings = sq.input("readings", Reading)
    before = readings.node
    filtered = readings.where(lambda e: e.consumption > 100)
    readings.select(lambda e: Usage(e.meter, e.consumption))
    readings.alter_duration(MINUTE)
    readings.shift(MINUTE)
    readings.to_point()
    assert readings.node is before
    assert readings == sq.input("readings", Reading)
    # the derived query keeps its receiver as its source, unchanged
    assert isinstance(filtered.node, nodes.Where)
    assert filtered.node.source is before
    shifted = filtered.shift(MINUTE)
    assert isinstance(shifted.node, nodes.AlterLifetime)
    assert shifted.node.source is filtered.node


def test_nodes_are_frozen() -> None:
    node = sq.input("readings", Reading).shift(MINUTE).node
    assert isinstance(node, nodes.AlterLifetime)
    with pytest.raises(AttributeError):
        node.start_shift = timedelta(0)  # type: ignore[misc]


def test_shift_is_alter_lifetime_with_a_start_shift() -> None:
    readings = sq.input("readings", Reading)
    assert readings.shift(MINUTE) == readings.alter_lifetime(start_shift=MINUTE)
    assert readings.shift(-MINUTE) == readings.alter_lifetime(-MINUTE)
    assert readings.shift(MINUTE).node == nodes.AlterLifetime(readings.node, MINUTE, None)
    assert readings.alter_lifetime(MINUTE, 2 * MINUTE) != readings.shift(MINUTE)


def test_payload_types_flow_through() -> None:
    q = build()
    assert q.payload_type is Usage
    assert q.node.schema.cls is Usage
    assert sq.input("readings", Reading).where(lambda e: e.consumption > 0).payload_type is Reading
    assert repr(q) == "Stream[Usage](ToPoint)"


@pytest.mark.parametrize("d", [timedelta(0), -sq.TICK, -MINUTE])
def test_alter_duration_needs_a_positive_duration(d: timedelta) -> None:
    readings = sq.input("readings", Reading)
    with pytest.raises(sq.ExpressionError, match="alter_duration needs a positive duration"):
        readings.alter_duration(d)
    with pytest.raises(ValueError):  # ExpressionError is a ValueError as well
        readings.alter_duration(d)


@pytest.mark.parametrize("d", [timedelta(0), -MINUTE])
def test_alter_lifetime_needs_a_positive_duration(d: timedelta) -> None:
    with pytest.raises(sq.ExpressionError, match="alter_lifetime needs a positive duration"):
        sq.input("readings", Reading).alter_lifetime(MINUTE, d)


def test_lifetime_arguments_must_be_timedeltas() -> None:
    readings = sq.input("readings", Reading)
    with pytest.raises(sq.ExpressionError, match="shift: d must be a timedelta, got 5"):
        readings.shift(5)  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match="alter_lifetime: start_shift must be a timedelta"):
        readings.alter_lifetime(5)  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match="alter_duration needs a timedelta or a function"):
        readings.alter_duration(5)  # type: ignore[arg-type]


def test_alter_duration_by_a_payload_expression() -> None:
    readings = sq.input("readings", Reading)
    a = readings.alter_duration(lambda e: MINUTE * sq.if_(e.consumption > 100, 3, 1))
    b = readings.alter_duration(lambda r: MINUTE * sq.if_(r.consumption > 100, 3, 1))
    assert a == b
    assert isinstance(a.node, nodes.AlterDuration)
    assert a.node.duration.show() == "(datetime.timedelta(seconds=60) * if((e.consumption > 100), 3, 1))"
    # a lambda that ignores its argument returns a constant, not an expression
    with pytest.raises(sq.ExpressionError, match="plain Python value"):
        readings.alter_duration(lambda e: MINUTE * 2)
    with pytest.raises(sq.ExpressionError, match="alter_duration needs a timedelta expression"):
        readings.alter_duration(lambda e: e.consumption)  # type: ignore[arg-type, return-value]


def test_input_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="non-empty name"):
        sq.input("", Reading)
    with pytest.raises(ValueError, match="shape must be a sq.Shape"):
        sq.input("r", Reading, shape="POINT")  # type: ignore[arg-type]


def test_two_inputs_with_one_name_are_an_error() -> None:
    a = sq.input("readings", Reading)
    b = sq.input("readings", Other)
    assert nodes.inputs_of(_Pair(a.node, a.where(lambda e: e.consumption > 0).node)) == {"readings": a.node}
    # multi-stream operators are not built yet: a two-source node stands in for them
    with pytest.raises(sq.BindingError, match="two different inputs named 'readings'"):
        nodes.inputs_of(_Pair(a.node, b.node))


@dataclasses.dataclass(frozen=True)
class _Pair(nodes.Node):
    """A two-source node, standing in for the multi-stream operators."""

    left: nodes.Node
    right: nodes.Node

    @property
    def sources(self) -> tuple[nodes.Node, ...]:
        return (self.left, self.right)
