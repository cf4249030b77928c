"""Live grouped snapshot windows on their carried frontier (``streamql.spark.streaming.frontier``):
which queries take that path, a step's carried rows worked by hand, and micro-batch runs equal to
the reference on random inputs, pipelines, splits and CTIs — every step, through the state store
too."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Optional

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.spark.base.columns import END, START
from streamql.spark.streaming.frontier import FRONTIER, frontier_window
from streamql.spark.streaming.step import Plan, empty_carried, step
from streamql.time import to_micros
from support.frames import bind, frame
from support.incremental import StreamInput, collected_step, cuts, expected_after, flushing, run_in_steps
from support.streams import SPACING, SPARK_EXAMPLES, P, build, inputs, pipelines, side_by_side, us
from support.depth import PARTS, spark_examples


@dataclass(frozen=True)
class Tally:
    k: int
    n: int
    total: Optional[int]
    least: Optional[int]


def tallies(w: sq.GroupWindow[int, P]) -> Tally:
    return Tally(w.key, w.count(), w.sum(lambda e: e.o), w.min(lambda e: e.v))


@dataclass(frozen=True)
class Alert:
    k: int
    n: int


def edges_input() -> sq.Stream[P]:
    return sq.input("edges", P, sq.Shape.EDGE)


def test_which_queries_carry_the_frontier() -> None:
    points = sq.input("in", P, sq.Shape.POINT)
    grouped = points.alter_duration(us(5)).where(lambda e: e.v > 0).group_by(lambda e: e.k).snapshot_window()
    q = grouped.select(tallies)
    assert frontier_window(q.node) is q.node
    intervals = sq.input("in", P, sq.Shape.INTERVAL).shift(us(-3)).to_point().alter_duration(us(4))
    assert frontier_window(intervals.group_by(lambda e: e.k).snapshot_window().select(tallies).node) is not None
    # ungrouped: the sweep's ranges
    ungrouped = points.alter_duration(us(5)).snapshot_window().select(lambda w: Tally(0, w.count(), None, None))
    assert frontier_window(ungrouped.node) is None
    # an edge input's events may stay open across steps
    edges = sq.input("in", P, sq.Shape.EDGE).group_by(lambda e: e.k).snapshot_window().select(tallies)
    assert frontier_window(edges.node) is None
    # a union of such (a partitioned input's partitions are one, read live)
    both = points.union(sq.input("more", P, sq.Shape.INTERVAL).where(lambda e: e.k > 0))
    assert frontier_window(both.group_by(lambda e: e.k).snapshot_window().select(tallies).node) is not None
    assert frontier_window(both.union(edges_input()).group_by(lambda e: e.k).snapshot_window()
                           .select(tallies).node) is None
    # an operator over several events before the window
    joined = points.join(points, lambda a, b: a.k == b.k, lambda a, b: a).group_by(lambda e: e.k)
    assert frontier_window(joined.snapshot_window().select(tallies).node) is None
    # a where or select over the window's output: each output event kept or mapped by its payload
    assert frontier_window(q.where(lambda t: t.n > 1).node) is q.node
    assert frontier_window(q.where(lambda t: t.n > 1).select(lambda t: Alert(t.k, t.n)).node) is q.node
    # anything else over it: the window not at the root
    assert frontier_window(q.alter_duration(us(1)).node) is None
    assert frontier_window(q.where(lambda t: t.n > 1).alter_duration(us(1)).node) is None


def _plan(spark: SparkSession, q: sq.Stream[Any], first: list[Any], shape: sq.Shape,
          at: sq.AdvanceTimeSettings | None) -> tuple[Plan, sq.Binder]:
    binder = bind(sq.Binder(spark), sq.input("in", P, shape), frame(spark, P, shape, first), shape, at)
    return Plan(q.node, {"in": binder.bindings["in"]}, (sq.Shape.INTERVAL,)), binder


def test_a_step_carries_the_events_alive_after_the_cti_clipped_to_their_groups_last_endpoint(
        spark: SparkSession) -> None:
    """Group 1: [0, 10), [5, 20), [30, 40); group 2: [2, 4) (intervals), a CTI row at 12 after them;
    released as intervals. Group 1's intervals: [0, 5), [5, 10) end before 12 and are
    released; [10, 20) and [30, 40) are not. Its greatest endpoint at or before 12 is 10, so it
    carries [5, 20) as [10, 20) and [30, 40) as it is; group 2 released [2, 4) and carries nothing.
    The next micro-batch adds [15, 25) to group 1 and a CTI row at INFINITY: [10, 15), [15, 20), [20, 25) and
    [30, 40) follow, as the reference releases them over all five events."""
    shape = sq.Shape.INTERVAL
    items = [sq.Insert(0, 10, P(1, 1, "a", 1)), sq.Insert(5, 20, P(1, 2, "a", 2)),
             sq.Insert(30, 40, P(1, 3, "a", 3)), sq.Insert(2, 4, P(2, 4, "a", 4)),
             sq.Cti(12), sq.Insert(15, 25, P(1, 5, "a", 5)), sq.Cti(sq.INFINITY)]
    at = None
    q = sq.input("in", P, shape).group_by(lambda e: e.k).snapshot_window().select(tallies)
    plan, _ = _plan(spark, q, items[:1], shape, at)
    first = step(spark, plan, empty_carried(plan),
                 {"in": bind(sq.Binder(spark), sq.input("in", P, shape), frame(spark, P, shape, items[:5]), shape,
                             at).bindings["in"].source}, 0)
    released, carried = collected_step(first, q, sq.Shape.INTERVAL)
    assert sorted((to_micros(r.start), to_micros(r.end), r.payload.k, r.payload.n) for r in released) == [
        (0, 5, 1, 1), (2, 4, 2, 1), (5, 10, 1, 2)]
    assert carried.events == {} and carried.released == {}
    kept = carried.partials[FRONTIER].select(START, END).orderBy(START).collect()
    assert [(r[0], r[1]) for r in kept] == [(10, 20), (30, 40)]
    second = step(spark, plan, carried,
                  {"in": bind(sq.Binder(spark), sq.input("in", P, shape), frame(spark, P, shape, items[5:]), shape,
                              at).bindings["in"].source}, 1, final=True)
    more, after = collected_step(second, q, sq.Shape.INTERVAL)
    assert sorted((to_micros(r.start), to_micros(r.end), r.payload.n, r.payload.total) for r in more) == [
        (10, 15, 1, 2), (15, 20, 2, 7), (20, 25, 1, 5), (30, 40, 1, 3)]
    side = StreamInput(sq.input("in", P, shape), P, shape, items, at)
    assert sorted(released + more, key=repr) == sorted(expected_after(q, {"in": side}, len(items), True,
                                                                       sq.Shape.INTERVAL), key=repr)
    assert after.partials[FRONTIER].count() == 0  # flushed: everything released


@pytest.mark.parametrize("output", [sq.Shape.POINT, sq.Shape.EDGE])
def test_a_start_released_before_its_interval_is_final_is_released_once(spark: SparkSession,
                                                                        output: sq.Shape) -> None:
    """The events of the example above, released as points or edges. After the first micro-batch
    (CTI 12) the starts of group 1's intervals [0, 5), [5, 10) and [10, 20) are released, though
    [10, 20) is carried on; the second micro-batch computes it again from the frontier as [10, 15)
    (same start, same payload) and must not release its start again: only the starts at or after
    12, and (as edges) the end of every interval it now releases."""
    shape = sq.Shape.INTERVAL
    items = [sq.Insert(0, 10, P(1, 1, "a", 1)), sq.Insert(5, 20, P(1, 2, "a", 2)),
             sq.Insert(30, 40, P(1, 3, "a", 3)), sq.Insert(2, 4, P(2, 4, "a", 4)),
             sq.Cti(12), sq.Insert(15, 25, P(1, 5, "a", 5)), sq.Cti(sq.INFINITY)]
    q = sq.input("in", P, shape).group_by(lambda e: e.k).snapshot_window().select(tallies)
    side = StreamInput(sq.input("in", P, shape), P, shape, items, None)
    released, carried = run_in_steps(spark, q, {"in": side}, [0, 5], output)
    assert FRONTIER in carried.partials
    assert released == expected_after(q, {"in": side}, len(items), True, output)
    starts = [r for r in released if output is sq.Shape.POINT or r.kind is sq.EdgeKind.START]
    assert len(starts) == 7  # [0, 5), [2, 4), [5, 10), [10, 15), [15, 20), [20, 25), [30, 40): no second [10, ...)


@pytest.mark.parametrize("output", list(sq.Shape))
def test_a_where_and_select_over_the_window_run_on_the_frontier(spark: SparkSession, output: sq.Shape) -> None:
    """The events of the examples above, the tallies of two events or more kept and made alerts:
    after the first micro-batch (CTI 12) only [5, 10) has two (released as an interval; as a
    point, the start 5); the carried [10, 20) has one and is computed again in the second
    micro-batch as [10, 15) (one) and [15, 20) (two: the only alert it adds), as the reference says
    over all five events, released once in every shape."""
    shape = sq.Shape.INTERVAL
    items = [sq.Insert(0, 10, P(1, 1, "a", 1)), sq.Insert(5, 20, P(1, 2, "a", 2)),
             sq.Insert(30, 40, P(1, 3, "a", 3)), sq.Insert(2, 4, P(2, 4, "a", 4)),
             sq.Cti(12), sq.Insert(15, 25, P(1, 5, "a", 5)), sq.Cti(sq.INFINITY)]
    window = sq.input("in", P, shape).group_by(lambda e: e.k).snapshot_window().select(tallies)
    q = window.where(lambda t: t.n > 1).select(lambda t: Alert(t.k, t.n))
    assert frontier_window(q.node) is window.node
    side = StreamInput(sq.input("in", P, shape), P, shape, items, None)
    released, carried = run_in_steps(spark, q, {"in": side}, [0, 5], output)
    assert carried.events == {} and FRONTIER in carried.partials
    assert released == expected_after(q, {"in": side}, len(items), True, output)
    if output is sq.Shape.INTERVAL:
        assert sorted((to_micros(r.start), to_micros(r.end), r.payload) for r in released) == [
            (5, 10, Alert(1, 2)), (15, 20, Alert(1, 2))]
    starts = [r for r in released if output is not sq.Shape.EDGE or r.kind is sq.EdgeKind.START]
    assert sorted(to_micros(r.start) for r in starts) == [5, 15]


@pytest.mark.hypothesis
@settings(SPARK_EXAMPLES, max_examples=spark_examples(8, least=2))
@given(data=st.data())
def test_grouped_snapshots_on_the_frontier_equal_reference_after_every_micro_batch(
        spark: SparkSession, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    ops = data.draw(pipelines(), label="pipeline")
    key = data.draw(st.sampled_from(["k % 3", "k", "o"]), label="key")
    piped = build(source, ops)
    if key == "o":  # a key with nulls: a group of its own
        q = piped.group_by(lambda e: e.o).snapshot_window().select(
            lambda w: Tally(0, w.count(), w.sum(lambda e: e.v), w.max(lambda e: e.k)))
    elif key == "k":
        q = piped.group_by(lambda e: e.k).snapshot_window().select(tallies)
    else:
        q = piped.group_by(lambda e: e.k % 3).snapshot_window().select(
            lambda w: Tally(w.key, w.count(), w.sum(lambda e: e.v), None))
    window = q.node
    # over the window's output, each event kept by its payload (the intervals of an odd or an even
    # count of events: whatever the input's density, some of each) and mapped: the query still
    # runs on the frontier
    parity = data.draw(st.sampled_from([1, 0]), label="the parity of the counts kept")
    q = q.where(lambda t: t.n % 2 == parity)
    if data.draw(st.booleans(), label="mapped"):
        q = q.select(lambda t: Tally(t.k + 1, t.n, t.total, t.least))
    assert frontier_window(q.node) is window
    note(f"query tree: {q.node!r}")
    store = str(tmp_path_factory.mktemp("frontier")) if data.draw(st.booleans(), label="store") else None
    # generated CTIs fall on a start: CTI rows, alone, fall inside intervals too
    for at, time in data.draw(st.lists(st.tuples(st.integers(0, len(items)), st.integers(0, 100)), max_size=3),
                              label="cti rows"):
        items.insert(at, sq.Cti(time + SPACING * (at * PARTS // (len(items) + 1))))
    settings = data.draw(st.one_of(st.none(), flushing()), label="settings")
    side = StreamInput(source, P, shape, items, settings)
    # as points or edges, a start is released before its interval is final: never twice
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    released, carried = run_in_steps(spark, q, {"in": side}, data.draw(cuts(len(items)), label="cuts"),
                                     output, store=store)
    assert carried.events == {} and FRONTIER in carried.partials
    assert released == expected_after(q, {"in": side}, len(items), True, output)


def test_the_frontier_holds_only_what_ends_after_the_cti(spark: SparkSession) -> None:
    """Many events over a few groups, a CTI after every four: after each micro-batch the carried
    rows all end after the output CTI, one for each event alive after it."""
    shape = sq.Shape.INTERVAL
    items: list[Any] = [sq.Insert(t, t + 7, P(t % 3, t, "a", 0)) for t in range(60)]
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(0)),
                                policy=sq.AdvanceTimePolicy.DROP)
    q = sq.input("in", P, shape).group_by(lambda e: e.k).snapshot_window().select(tallies)
    plan, _ = _plan(spark, q, items[:1], shape, at)
    carried = empty_carried(plan)
    for batch in range(3):
        part = items[20 * batch:20 * (batch + 1)]
        rows = bind(sq.Binder(spark), sq.input("in", P, shape), frame(spark, P, shape, part, first_arrival=20 * batch),
                    shape, at).bindings["in"].source
        outcome = step(spark, plan, carried, {"in": rows}, batch)
        _, carried = collected_step(outcome, q, sq.Shape.INTERVAL)
        cti = carried.state.out_cti
        assert cti is not None
        kept = carried.partials[FRONTIER]
        assert kept.filter(F.col(END) <= F.lit(cti)).count() == 0
        alive = sum(1 for i in items[:20 * (batch + 1)] if i.end > cti)
        assert kept.count() == alive
