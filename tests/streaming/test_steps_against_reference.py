"""Batch equals streaming: a query run in micro-batches by the incremental step has released,
after every micro-batch, exactly what the reference releases over the input so far — and after
the final (flushing) step what it releases over the whole input. Random inputs, queries and split
points (hypothesis); every operator family; INTERVAL, POINT and EDGE output."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.incremental import StreamInput, cuts, expected_after, flushing, pipeline_floor, run_in_steps
from support.streams import (PAIRED_CROWDED, P, SPARK_EXAMPLES, advance_settings, build, crowded_inputs, edge_items,
                             inputs, pipelines, side_by_side, us)
from support.depth import spark_examples



@dataclass(frozen=True)
class Count:
    k: int
    n: int
    total: Optional[int]


def check(spark: SparkSession, q: sq.Stream[Any], sides: dict[str, StreamInput], at: list[int],
          output: sq.Shape, arrival: bool = False, state_bounds: dict[str, Callable[[int], int]] | None = None) -> None:
    """``state_bounds``: after every micro-batch the state must hold no event of these inputs that
    ends before the bound of the output floor (``run_in_steps``)."""
    note(f"query tree: {q.node!r}")
    released, carried = run_in_steps(spark, q, sides, at, output, arrival=arrival, state_bounds=state_bounds)
    event(f"state pruned: {any(i.floor is not None for i in carried.state.inputs.values())}")
    full = max(len(s.items) for s in sides.values())
    expected = expected_after(q, sides, full, True, output)
    event(f"released {'some' if expected else 'none'}")
    assert released == expected


def check_one_input(spark: SparkSession, data: st.DataObject, source: sq.Stream[P], shape: sq.Shape,
                    items: list[Any], q: sq.Stream[Any], bad_rows: Literal["error", "drop"] = "error",
                    arrival: bool = False, bound: Callable[[int], int] | None = None) -> None:
    """``check`` for a query over the one input ``source``, with drawn settings, cuts and output;
    ``bound``: the input's state bound (``run_in_steps``)."""
    sides = {"in": StreamInput(source, P, shape, items, data.draw(flushing(), label="settings"), bad_rows)}
    check(spark, q, sides, data.draw(cuts(len(items)), label="cuts"),
          data.draw(st.sampled_from(list(sq.Shape)), label="output"), arrival=arrival,
          state_bounds=None if bound is None else {"in": bound})


@settings(SPARK_EXAMPLES, max_examples=spark_examples(6, least=1))
@given(data=st.data())
def test_one_input_pipelines_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    ops = data.draw(pipelines(), label="pipeline")
    # the state keeps only what ends at or after the output floor, moved back by the pipeline
    check_one_input(spark, data, source, shape, items, build(source, ops), bound=lambda floor: pipeline_floor(ops, floor))


@st.composite
def windowed(draw: st.DrawFn, q: sq.Stream[P]) -> sq.Stream[Any]:
    kind = draw(st.sampled_from(["snapshot", "grouped snapshot", "hopping", "tumbling", "count", "group_apply"]))
    grouped = q.group_by(lambda e: e.k % 3)

    def counts(w: sq.GroupWindow[int, P]) -> Count:
        return Count(w.key, w.count(), w.sum(lambda e: e.o))

    if kind == "snapshot":
        return q.snapshot_window().select(lambda w: Count(0, w.count(), w.max(lambda e: e.v)))
    if kind == "grouped snapshot":
        return grouped.snapshot_window().select(counts)
    if kind == "hopping":
        return grouped.hopping_window(us(draw(st.integers(1, 30))), us(draw(st.integers(1, 30)))).select(counts)
    if kind == "tumbling":
        return q.tumbling_window(us(draw(st.integers(1, 30)))).select(lambda w: Count(1, w.count(), w.sum(lambda e: e.v)))
    if kind == "count":
        return grouped.count_window(draw(st.integers(1, 3))).select(counts)
    inner = us(draw(st.integers(1, 20)))
    return q.group_apply(lambda e: e.k % 2, lambda s: s.alter_duration(inner).snapshot_window().select(
        lambda w: Count(0, w.count(), w.min(lambda e: e.v))), lambda key, c: Count(key, c.n, c.total))


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(5, least=1))
@given(data=st.data())
def test_windows_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    q = data.draw(windowed(build(source, data.draw(pipelines(), label="pipeline"))), label="window")
    check_one_input(spark, data, source, shape, items, q)


ONS = [None, lambda l, r: l.k == r.k, lambda l, r: (l.k % 2 == r.k % 2) & (l.v >= r.v)]


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(5, least=1))
@given(data=st.data())
def test_multi_stream_operators_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    lshape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="left shape")
    left, right = sq.input("left", P, lshape), sq.input("right", P, sq.Shape.INTERVAL)
    litems = data.draw(side_by_side(inputs(lshape, open_ends=True, min_items=3)), label="left items")
    ritems = data.draw(side_by_side(inputs(sq.Shape.INTERVAL, open_ends=True, min_items=3)), label="right items")
    op = data.draw(st.sampled_from(["join", "anti_join", "clip", "union"]), label="operator")
    on = ONS[data.draw(st.integers(0, len(ONS) - 1), label="on")]
    lq = build(left, data.draw(pipelines(), label="left pipeline"))
    if op == "join":
        q = lq.join(right, on, lambda l, r: P(l.k, r.v, l.s, r.o))
    elif op == "anti_join":
        q = lq.anti_join(right, on)
    elif op == "clip":
        q = lq.clip(right, on or (lambda l, r: l.v >= 0))
    else:
        q = lq.union(right.where(lambda e: e.v > 1))
    lset, rset = data.draw(flushing(), label="left settings"), data.draw(flushing(), label="right settings")
    arrival = data.draw(st.integers(0, 3), label="import") == 0
    if arrival:
        # the right input takes the left one's CTIs too: with arrival columns both share one clock
        rset = sq.AdvanceTimeSettings(None if rset is None else rset.generation, sq.AdvanceTimeImport("left"),
                                      sq.AdvanceTimePolicy.DROP if rset is None else rset.policy)
    sides = {"left": StreamInput(left, P, lshape, litems, lset), "right": StreamInput(right, P, sq.Shape.INTERVAL,
                                                                                        ritems, rset)}
    check(spark, q, sides, data.draw(cuts(max(len(litems), len(ritems))), label="cuts"),
          data.draw(st.sampled_from(list(sq.Shape)), label="output"), arrival=arrival)


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(4, least=1))
@given(data=st.data())
def test_esper_style_operators_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(crowded_inputs(shape)), label="items")
    source = sq.input("in", P, shape)
    op = data.draw(st.sampled_from(["keep_last", "time_batch", "length_batch", "grouped length_batch"]),
                   label="operator")
    if op == "keep_last":
        q = source.keep_last(data.draw(st.integers(1, 3), label="n"))
    elif op == "time_batch":
        q = source.time_batch(us(data.draw(st.integers(1, 10), label="size")))
    elif op == "length_batch":
        q = source.length_batch(data.draw(st.integers(1, 3), label="n"))
    else:
        # the groups' batches end at different times: the input's floor cuts into some (offsets)
        n = data.draw(st.integers(1, 3), label="n")
        q = source.where(lambda e: e.v != 1).group_apply(lambda e: e.k % 2, lambda s: s.length_batch(n),
                                                         lambda key, e: P(key * 10 + e.k, e.v, e.s, e.o))
    check_one_input(spark, data, source, shape, items, q)


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(4, least=1))
@given(data=st.data())
def test_edge_inputs_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    """Start edges stay open across micro-batches until their end edges come; late end edges are
    ignored or moved, dropped start edges take their end edges silently, unmatched ones are bad rows."""
    items = data.draw(side_by_side(edge_items()), label="items")
    source = sq.input("in", P, sq.Shape.EDGE)
    ops = data.draw(pipelines(), label="pipeline")
    q = build(source, ops)
    # without a snapshot: the state keeps only what ends at or after the output floor (held back by
    # the events still open), moved back by the pipeline
    bound: Callable[[int], int] | None = lambda floor: pipeline_floor(ops, floor)  # noqa: E731
    if data.draw(st.booleans(), label="snapshot"):
        q = q.group_by(lambda e: e.k % 2).snapshot_window().select(lambda w: P(w.key, w.count(), "x", w.max(lambda e: e.o)))
        bound = None
    check_one_input(spark, data, source, sq.Shape.EDGE, items, q, "drop", arrival=data.draw(st.booleans(), label="arrival"),
                    bound=bound)


AS_OF_ONS = [lambda l, r: l.k == r.k, lambda l, r: (l.k % 2 == r.k % 2) & (r.o != 3),
             lambda l, r: (l.k % 2 == r.k % 2) & (l.v >= r.v)]


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(5, least=1))
@given(data=st.data())
def test_as_of_joins_and_signals_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    """The retention floors of ``as_of_join`` (the right side keeps the latest event per key) and
    ``to_signal`` (the last start per key) keep what later micro-batches need."""
    lshape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="left shape")
    left, right = sq.input("left", P, lshape), sq.input("right", P, sq.Shape.POINT)
    # at least a few events each: most examples release something
    litems = data.draw(side_by_side(crowded_inputs(lshape, most=PAIRED_CROWDED)).filter(lambda i: len(i) >= 3),
                       label="left items")
    ritems = data.draw(side_by_side(crowded_inputs(sq.Shape.POINT, most=PAIRED_CROWDED)).filter(lambda i: len(i) >= 3),
                       label="right items")
    lq = build(left, data.draw(pipelines(), label="left pipeline"))
    op = data.draw(st.sampled_from(["as_of_join", "to_signal", "as_of_join of a signal"]), label="operator")
    if op == "to_signal":
        q: sq.Stream[Any] = lq.to_signal(lambda e: e.k % 3)
    else:
        within = data.draw(st.one_of(st.none(), st.integers(0, 8)), label="within")
        rq = right.to_signal(lambda e: e.k) if op == "as_of_join of a signal" else right
        q = lq.as_of_join(rq, AS_OF_ONS[data.draw(st.integers(0, len(AS_OF_ONS) - 1), label="on")],
                          lambda l, r: P(l.k, r.v, l.s, r.o), None if within is None else us(within))
    lset, rset = data.draw(flushing(), label="left settings"), data.draw(flushing(), label="right settings")
    sides = {"left": StreamInput(left, P, lshape, litems, lset),
             "right": StreamInput(right, P, sq.Shape.POINT, ritems, rset)}
    if op == "to_signal":
        del sides["right"]
    check(spark, q, sides, data.draw(cuts(max(len(s.items) for s in sides.values())), label="cuts"),
          data.draw(st.sampled_from(list(sq.Shape)), label="output"))
