"""Property tests: random inputs, arrival disorder, advance-time settings and operator pipelines
give identical Results on Spark and in the reference evaluator (the specification)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.frames import bind, frame


@dataclass(frozen=True)
class P:
    k: int
    v: int
    s: str
    o: Optional[int]


def us(n: int) -> timedelta:
    return timedelta(microseconds=n)

Op = Callable[[sq.Stream[P]], sq.Stream[P]]

WHERES: list[Op] = [
    lambda q: q.where(lambda e: e.v > 3),
    lambda q: q.where(lambda e: (e.k % 3 == 0) | sq.is_null(e.o)),
    lambda q: q.where(lambda e: e.s.startswith("a") & (e.v != 2)),
    lambda q: q.where(lambda e: sq.coalesce(e.o, 0) + e.k >= 4),
]
SELECTS: list[Op] = [
    lambda q: q.select(lambda e: P(e.k + 1, e.v * 2 - e.k, e.s.upper(), e.o)),
    lambda q: q.select(lambda e: P(e.v // 3, e.k % 4, e.s + "x", sq.if_(e.v > 2, e.o, None))),
    lambda q: q.select(lambda e: P(abs(e.k - 5), round(e.v / 2), e.s[1:], sq.greatest(e.k, e.v))),
]


@st.composite
def pipelines(draw: st.DrawFn) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["where", "select", "alter_duration", "alter_duration_payload",
                                     "alter_lifetime", "shift", "to_point"]))
        if kind == "where":
            ops.append((kind, draw(st.integers(0, len(WHERES) - 1))))
        elif kind == "select":
            ops.append((kind, draw(st.integers(0, len(SELECTS) - 1))))
        elif kind == "alter_duration":
            ops.append((kind, draw(st.integers(1, 40))))
        elif kind == "alter_duration_payload":
            ops.append((kind, None))
        elif kind == "alter_lifetime":
            ops.append((kind, (draw(st.integers(-30, 30)), draw(st.one_of(st.none(), st.integers(1, 30))))))
        elif kind == "shift":
            ops.append((kind, draw(st.integers(-30, 30))))
        else:
            ops.append((kind, None))
    return ops


def build(source: sq.Stream[P], ops: list[tuple[str, Any]]) -> sq.Stream[P]:
    q = source
    for kind, arg in ops:
        if kind == "where":
            q = WHERES[arg](q)
        elif kind == "select":
            q = SELECTS[arg](q)
        elif kind == "alter_duration":
            q = q.alter_duration(us(arg))
        elif kind == "alter_duration_payload":
            q = q.alter_duration(lambda e: us(1) * (e.v % 7) + us(2))
        elif kind == "alter_lifetime":
            q = q.alter_lifetime(us(arg[0]), None if arg[1] is None else us(arg[1]))
        elif kind == "shift":
            q = q.shift(us(arg))
        else:
            q = q.to_point()
    return q


payloads = st.builds(P, st.integers(-5, 9), st.integers(-3, 9), st.sampled_from(["a", "ab", "b", "", " c"]),
                     st.one_of(st.none(), st.integers(0, 5)))


@st.composite
def inputs(draw: st.DrawFn, shape: sq.Shape) -> list[Any]:
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.integers(0, 9)) == 0:
            items.append(sq.Cti(draw(st.integers(0, 120))))
            continue
        start = draw(st.integers(0, 100))
        length = 1 if shape is sq.Shape.POINT else draw(st.integers(1, 30))
        items.append(sq.Insert(start, start + length, draw(payloads)))
    return items


@st.composite
def advance_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings | None:
    if draw(st.integers(0, 6)) == 0:
        return None
    if draw(st.booleans()):
        generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 5)),
                                              delay=us(draw(st.sampled_from([-1, 0, 3, 10]))),
                                              flush=draw(st.booleans()))
    else:
        generation = sq.AdvanceTimeGeneration(every=us(draw(st.sampled_from([1, 5, 20]))),
                                              delay=us(draw(st.sampled_from([-1, 0, 3, 10]))),
                                              flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(inputs(shape), label="items")
    at = data.draw(advance_settings(), label="settings")
    ops = data.draw(pipelines(), label="ops")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    arrival = data.draw(st.booleans(), label="arrival column")
    partitions = data.draw(st.integers(1, 4), label="partitions")
    source = sq.input("in", P, shape)
    q = build(source, ops)
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)}, output=output)
    df = frame(spark, P, shape, items, partitions=partitions, arrival=arrival, seed=len(items))
    actual = bind(sq.Binder(spark), source, df, shape, at, arrival=arrival).run(q, output=output)
    assert actual == expected
