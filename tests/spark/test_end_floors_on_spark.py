"""Each event's end floor on Spark (``_sq_floor``; ``reference.operators.end_floor``): hand-worked
examples where it decides what is released, on the equi-join path of the multi-stream operators
(tests/spark/test_release_cases_on_spark.py runs the issue's cases, on the time-bucket path), each
against the reference evaluator in INTERVAL and EDGE output.

Inputs, times in microseconds: ``a`` (EDGE) has only ``Cti(6)``; ``b`` (EDGE, a CTI after every
event) has ``S(-4, v0), S(7, v6)`` — its CTI is 7, so v0's open end is at 7 or later, although
the CTI of ``a.union(b)`` is min(6, 7) = 6.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping, Sequence

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query.nodes import inputs_of
from streamql.time import from_micros
from support.depth import tiered
from support.frames import bind, frame, run_in_shapes


@dataclass(frozen=True)
class KV:
    k: int
    v: str


def us(n: int) -> timedelta:
    return timedelta(microseconds=n)


def gen(every_events: int, delay: int = 0, flush: bool = False) -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=every_events, delay=us(delay), flush=flush))


A = sq.input("a", KV, sq.Shape.EDGE)
B = sq.input("b", KV, sq.Shape.EDGE)
C = sq.input("c", KV, sq.Shape.INTERVAL)
Side = tuple[sq.Stream[KV], sq.Shape, list[Any], sq.AdvanceTimeSettings | None]

UNION_A: Side = (A, sq.Shape.EDGE, [sq.Cti(6)], None)
UNION_B: Side = (B, sq.Shape.EDGE, [sq.StartEdge(-4, KV(0, "v0")), sq.StartEdge(7, KV(0, "v6"))], gen(1))
# keep_last(3).keep_last(1) of these gives v0 [-3, 5) with an end that is not stable (the start at
# 5 comes after the CTI 5) but cannot move earlier: a right start at 5 cuts it there for good
KEPT: Side = (A, sq.Shape.EDGE, [sq.StartEdge(-3, KV(0, "v0")), sq.StartEdge(6, KV(0, "v1")),
                                 sq.StartEdge(5, KV(0, "v1"))], gen(2, 1))


def pair(l: KV, r: KV) -> KV:
    return KV(l.k, l.v + r.v)


def run_both(spark: SparkSession, q: sq.Stream[Any], sides: Sequence[Side],
             *outputs: sq.Shape) -> list[tuple[sq.Result[Any], sq.Result[Any]]]:
    """The reference's Result and Spark's for ``q`` over ``sides``, for each output shape."""
    inputs: Mapping[str, sq.reference.ReferenceInput[Any]] = {
        name: sq.reference.ReferenceInput(items, settings) for s, _, items, settings in sides for name in inputs_of(s.node)}
    binder = sq.Binder(spark)
    for seed, (stream, shape, items, settings) in enumerate(sides):
        binder = bind(binder, stream, frame(spark, KV, shape, items, seed=seed), shape, settings)
    return [(sq.reference.run(q, inputs, output=output), actual)
            for output, actual in zip(outputs, run_in_shapes(binder, q, *outputs))]


EXAMPLES = [
    # v0 [-4, ∞) meets c [2, 7): the end 7 is c's, final, and v0 surely lasts until 6 (its floor
    # is 7), so [2, 7) is stable; the output CTI is 6 > 2: released
    ("a join partner's open end is bounded by its own input's CTI",
     A.union(B).join(C, lambda l, r: l.k == r.k, pair),
     [UNION_A, UNION_B, (C, sq.Shape.INTERVAL, [sq.Insert(2, 7, KV(0, "c"))], gen(1, flush=True))],
     [(2, 7, KV(0, "v0c"))], 6),
    # shifted by 1, v0 is [-3, ∞) with floor 8 (the floor moves with the end) and the CTI is 7:
    # [2, 8) with c [2, 8) is stable and released
    ("the floor moves with the end",
     A.union(B).shift(us(1)).join(C, lambda l, r: l.k == r.k, pair),
     [UNION_A, UNION_B, (C, sq.Shape.INTERVAL, [sq.Insert(2, 8, KV(0, "c"))], gen(1, flush=True))],
     [(2, 8, KV(0, "v0c"))], 7),
    ("clip on a key by a right start at the left event's unstable end",
     A.keep_last(3).keep_last(1).clip(B, lambda l, r: l.k == r.k),
     [KEPT, (B, sq.Shape.EDGE, [sq.StartEdge(5, KV(0, "v2"))], gen(1, flush=True))],
     [(-3, 5, KV(0, "v0"))], 5),
    ("anti_join on a key by a right start at the left event's unstable end",
     A.keep_last(3).keep_last(1).anti_join(B, lambda l, r: l.k == r.k),
     [KEPT, (B, sq.Shape.EDGE, [sq.StartEdge(5, KV(0, "v2"))], gen(1, flush=True))],
     [(-3, 5, KV(0, "v0"))], 5),
    # a right start at the end whose key differs is no cut: the end stays unstable
    ("a right start at the unstable end that does not match does not cut",
     A.keep_last(3).keep_last(1).clip(B, lambda l, r: l.k == r.k),
     [KEPT, (B, sq.Shape.EDGE, [sq.StartEdge(5, KV(1, "v2"))], gen(1, flush=True))],
     [], 5),
]


#: the default tier's other examples run in the deep tier (their Spark jobs cost the most; docs/decisions.md,
#: "Continuous integration's time")
DEEP = ("a right start at the unstable end that does not match does not cut",
        "anti_join on a key by a right start at the left event's unstable end")


@pytest.mark.parametrize("name,q,sides,released,final_cti",
                         tiered(EXAMPLES, deep=DEEP, name=lambda e: e[0], unpack=True, named=True))
def test_end_floor_decides_the_release(spark: SparkSession, name: str, q: sq.Stream[Any], sides: list[Side],
                                       released: list[tuple[int, int, KV]], final_cti: int) -> None:
    (expected, actual), (expected_edges, actual_edges) = run_both(spark, q, sides, sq.Shape.INTERVAL, sq.Shape.EDGE)
    assert actual.events == [sq.Event(from_micros(s), from_micros(e), p) for s, e, p in released]
    assert actual.final_cti == from_micros(final_cti)
    assert actual == expected
    assert actual_edges == expected_edges
