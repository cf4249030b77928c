"""The state a live query carries stays bounded by its windows and the CTI spacing, not by the
stream's length — for every operator family that has a retention rule (docs/streaming.md, "The
state per operator").

Each query runs over 8 micro-batches of 10 events (points 10 us apart over three keys, a CTI
every 5 events) through the incremental step; the test checks the state's rows after each
micro-batch and that the releases equal the reference's. Then random inputs — late events, ADJUST,
edges, CTI rows up to INFINITY — in random micro-batches, through pipelines and windows: after every
micro-batch the state holds no input event that ends before what the query can still need.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query.nodes import inputs_of
from support.depth import spark_examples, tiered
from support.incremental import StreamInput, cuts, expected_after, flushing, pipeline_floor, run_in_steps
from support.streams import P, SPARK_EXAMPLES, build, edge_items, inputs, pipelines, side_by_side, us

STEPS, PER_STEP = 8, 10
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5))
LEFT = sq.input("in", P, sq.Shape.POINT)
RIGHT = sq.input("other", P, sq.Shape.POINT)


def counts(key: int, w: Any) -> P:
    return P(key, w.count(), "w", w.sum(lambda e: e.v))


def lasting(q: sq.Stream[P]) -> sq.Stream[P]:
    return q.alter_duration(us(25))


Query = Callable[[], sq.Stream[Any]]
#: the earliest end an input event may have and still be needed, given the output floor
Bound = Callable[[int], int]
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


#: the families the default tier runs (none: 12-30 s each, 20 micro-batches); the deep tier runs every
#: family (tests/streaming/test_state_in_memory.py's hand-worked steps carry state in the default tier)
EVERY_TIER: set[str] = set()


@pytest.mark.parametrize("family", tiered(sorted(BOUNDED), default=EVERY_TIER))
def test_the_state_stays_bounded(spark: SparkSession, family: str) -> None:
    sizes = state_sizes(spark, BOUNDED[family]())
    # a window or lifetime of at most 30 us over events 10 us apart (two inputs), CTIs every 50 us:
    # a few dozen rows, and none more in the second half of the run than in the first
    assert max(sizes) <= 60, sizes
    assert max(sizes[STEPS // 2:]) <= max(sizes[:STEPS // 2]), sizes


# --- after every micro-batch, on random inputs ---------------------------------------------------


@st.composite
def bounded_queries(draw: st.DrawFn, source: sq.Stream[P], shape: sq.Shape) -> tuple[sq.Stream[Any], Bound]:
    """A pipeline of operators that map each event on its own, maybe followed (over a POINT or
    INTERVAL input) by a tumbling or hopping window, grouped or not; and the earliest end an input
    event may have and still be needed, given the output floor (docs/streaming.md, "The state per
    operator": a window moves it back by its size, the pipeline by its shifts and durations)."""
    ops = draw(pipelines(), label="pipeline")
    q = build(source, ops)
    window = draw(st.sampled_from(["none", "tumbling", "hopping", "grouped hopping"] if shape is not sq.Shape.EDGE
                                  else ["none"]), label="window")
    if window == "none":
        return q, lambda floor: pipeline_floor(ops, floor)
    size = draw(st.integers(1, 30), label="size")
    hop = size if window == "tumbling" else draw(st.integers(1, 30), label="hop")
    if window == "grouped hopping":
        windowed: sq.Stream[Any] = q.group_by(lambda e: e.k % 3).hopping_window(us(size), us(hop)).select(
            lambda w: counts(w.key, w))
    else:
        windowed = q.hopping_window(us(size), us(hop)).select(lambda w: counts(0, w))
    return windowed, lambda floor: pipeline_floor(ops, floor - size)


#: a minute or more an example on two shared cores (arrival columns, windows, a state count per
#: micro-batch): the deep tier's; the default tier checks the bound in the step tests' pipelines
@pytest.mark.slow
@settings(SPARK_EXAMPLES, max_examples=spark_examples(6, least=1))
@given(data=st.data())
def test_the_state_holds_nothing_the_ctis_have_passed(spark: SparkSession, data: st.DataObject) -> None:
    """Random inputs (late events under DROP and ADJUST, CTI rows up to INFINITY, events that never
    end, edges with late, missing and unmatched end edges), cut into micro-batches: after every one,
    the input's events in the state all end at or after the earliest end the query can still need
    — the output floor (the reference's output CTI over the input so far, held back by the edge
    events still open) moved back as the operators say. Releases equal the reference's."""
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL, sq.Shape.EDGE]), label="shape")
    items = data.draw(side_by_side(edge_items() if shape is sq.Shape.EDGE else inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    q, bound = data.draw(bounded_queries(source, shape), label="query")
    note(f"query tree: {q.node!r}")
    sides = {"in": StreamInput(source, P, shape, items, data.draw(flushing(), label="settings"),
                               "drop" if shape is sq.Shape.EDGE else "error")}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    released, _ = run_in_steps(spark, q, sides, data.draw(cuts(len(items)), label="cuts"), output,
                               arrival=data.draw(st.booleans(), label="arrival column"), state_bounds={"in": bound})
    assert released == expected_after(q, sides, len(items), True, output)
