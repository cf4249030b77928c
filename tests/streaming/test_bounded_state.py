"""The state a live query carries stays bounded by its windows and the CTI spacing, not by the
stream's length — for every operator family that has a retention rule (docs/streaming.md, "The
state per operator").

Each query runs over 8 micro-batches of 10 events (points 10 us apart over three keys, a CTI
every 5 events) through the incremental step; the test checks the state's rows after each
micro-batch and that the releases equal the reference's."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query.nodes import inputs_of
from support.incremental import StreamInput, expected_after, run_in_steps
from support.streams import P, us

STEPS, PER_STEP = 8, 10
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5))
LEFT = sq.input("in", P, sq.Shape.POINT)
RIGHT = sq.input("other", P, sq.Shape.POINT)


def counts(key: int, w: Any) -> P:
    return P(key, w.count(), "w", w.sum(lambda e: e.v))


def lasting(q: sq.Stream[P]) -> sq.Stream[P]:
    return q.alter_duration(us(25))


Query = Callable[[], sq.Stream[Any]]
BOUNDED: dict[str, Query] = {
    "where/select/alter_duration": lambda: LEFT.where(lambda e: e.v % 2 == 0).select(
        lambda e: P(e.k, e.v + 1, e.s, e.o)).alter_duration(us(15)),
    "hopping on partials": lambda: LEFT.group_by(lambda e: e.k % 3).hopping_window(us(30), us(10)).select(
        lambda w: counts(w.key, w)),
    "hopping over intervals": lambda: lasting(LEFT).group_by(lambda e: e.k % 3).hopping_window(us(30), us(10))
    .select(lambda w: counts(w.key, w)),
    "snapshot": lambda: lasting(LEFT).group_by(lambda e: e.k % 3).snapshot_window().select(
        lambda w: counts(w.key, w)),
    "group_apply": lambda: LEFT.group_apply(lambda e: e.k % 3, lambda s: lasting(s).snapshot_window().select(
        lambda w: counts(0, w)), lambda key, c: P(key, c.v, c.s, c.o)),
    "join": lambda: lasting(LEFT).join(lasting(RIGHT), on=lambda l, r: l.k % 3 == r.k % 3,
                                       select=lambda l, r: P(l.k, l.v + r.v, l.s, r.o)),
    "union": lambda: lasting(LEFT).union(lasting(RIGHT)),
    "anti_join": lambda: lasting(LEFT).anti_join(RIGHT.alter_duration(us(5)), on=lambda l, r: l.k == r.k),
    "clip": lambda: LEFT.alter_duration(us(40)).clip(RIGHT, on=lambda l, r: l.k % 3 == r.k % 3),
    "time_batch": lambda: LEFT.time_batch(us(30)),
    "count window": lambda: LEFT.group_by(lambda e: e.k % 3).count_window(3).select(lambda w: counts(w.key, w)),
    "count window over intervals": lambda: lasting(LEFT).count_window(2).select(lambda w: counts(0, w)),
    "keep_last": lambda: LEFT.keep_last(2),
    # a group's points are 20 us apart and reach 23 us with a gap of 22: sessions of a few points (cut in
    # pieces of 30 us), ended where a point is left out
    "session window": lambda: LEFT.where(lambda e: e.v % 4 != 0).group_by(lambda e: e.k % 2)
    .session_window(us(22), us(30)).select(lambda w: counts(w.key, w)),
    "alter_duration(expression)": lambda: LEFT.alter_duration(lambda e: us(4) * (e.v % 7) + us(2)),
    "alter_duration(expression) then snapshot": lambda: LEFT.alter_duration(lambda e: us(3) * (e.k % 5) + us(1))
    .group_by(lambda e: e.k % 3).snapshot_window().select(lambda w: counts(w.key, w)),
    "keep_last per group": lambda: LEFT.group_apply(lambda e: e.k % 3, lambda s: lasting(s).keep_last(3),
                                                     lambda key, e: P(key, e.v, e.s, e.o)),
    "length_batch": lambda: LEFT.length_batch(3),
    # two groups: a group's batches span 60 us, a whole number of them every three micro-batches (over
    # three groups, 90 us against 100 us micro-batches, the state swings with a period of nine)
    "length_batch per group": lambda: LEFT.group_apply(lambda e: e.k % 2, lambda s: s.length_batch(3),
                                                        lambda key, e: P(key, e.v, e.s, e.o)),
    # the right side keeps, per key, the latest event before the left events that matter
    "as_of_join": lambda: LEFT.as_of_join(RIGHT, lambda l, r: l.k % 3 == r.k % 3,
                                          lambda l, r: P(l.k, l.v + r.v, l.s, r.o)),
    # a condition of both sides: only within bounds the right side
    "as_of_join within": lambda: LEFT.as_of_join(RIGHT, lambda l, r: (l.k % 3 == r.k % 3) & (l.v >= r.v - 5),
                                                 lambda l, r: P(l.k, l.v + r.v, l.s, r.o), us(40)),
    "to_signal": lambda: LEFT.to_signal(lambda e: e.k % 3),
}


def items(offset: int) -> list[Any]:
    return [sq.Insert(10 * i + offset, 10 * i + offset + 1, P(i, i % 11, "s", i % 5)) for i in range(STEPS * PER_STEP)]


def state_sizes(spark: SparkSession, q: sq.Stream[Any]) -> list[int]:
    sides = {"in": StreamInput(LEFT, P, sq.Shape.POINT, items(0), SETTINGS)}
    if "other" in inputs_of(q.node):
        sides["other"] = StreamInput(RIGHT, P, sq.Shape.POINT, items(3), SETTINGS)
    sizes: list[int] = []
    released, _ = run_in_steps(spark, q, sides, [PER_STEP * i for i in range(STEPS)], sq.Shape.INTERVAL,
                               check_every_step=False, sizes=sizes)
    assert released == expected_after(q, sides, STEPS * PER_STEP, True, sq.Shape.INTERVAL)
    return sizes


#: the families the default tier runs (one of each kind of state); the deep tier runs every family
EVERY_TIER = {"hopping on partials", "snapshot", "join", "keep_last", "as_of_join"}


@pytest.mark.parametrize("family", [f if f in EVERY_TIER else pytest.param(f, marks=pytest.mark.slow)
                                    for f in sorted(BOUNDED)])
def test_the_state_stays_bounded(spark: SparkSession, family: str) -> None:
    sizes = state_sizes(spark, BOUNDED[family]())
    # a window or lifetime of at most 30 us over events 10 us apart (two inputs), CTIs every 50 us:
    # a few dozen rows, and none more in the second half of the run than in the first
    assert max(sizes) <= 60, sizes
    assert max(sizes[STEPS // 2:]) <= max(sizes[:STEPS // 2]), sizes
