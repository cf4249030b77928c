"""Batch equals streaming for session windows: run in micro-batches by the incremental step, a
session query has released, after every micro-batch, exactly what the reference releases over the
input so far, and after the final step what it releases over the whole input — while the state
keeps only the sessions that can still change (``streamql.spark.streaming.retention``: the start of the
earliest session reaching the output floor, less the gap). Random inputs (events that never end,
edges with late and missing end edges; micro-batches in storage order or shuffled with an arrival
column), pipelines, gaps and maximum durations, grouped, ungrouped
and inside ``group_apply``; INTERVAL, POINT and EDGE output."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.incremental import StreamInput, cuts, expected_after, flushing, run_in_steps
from support.seeds import every_event
from support.session_views import PER_USER_PIECES, VIEWS, VIEWS_IN, View
from support.streams import P, SPARK_EXAMPLES, build, edge_items, inputs, pipelines, side_by_side, us
from support.depth import spark_examples


@dataclass(frozen=True)
class Visit:
    k: int
    n: int
    total: Optional[int]
    high: Optional[int]


@st.composite
def sessions(draw: st.DrawFn, q: sq.Stream[P]) -> sq.Stream[Any]:
    gap = us(draw(st.integers(1, 20), label="gap"))
    longest = draw(st.one_of(st.none(), st.integers(1, 30)), label="max_duration")
    max_duration = None if longest is None else us(longest)
    style = draw(st.sampled_from(["window", "grouped", "group_apply"]), label="style")
    if style == "window":
        return q.session_window(gap, max_duration).select(
            lambda w: Visit(0, w.count(), w.sum(lambda e: e.v), w.max(lambda e: e.o)))
    if style == "grouped":
        return q.group_by(lambda e: e.k % 3).session_window(gap, max_duration).select(
            lambda w: Visit(w.key, w.count(), w.sum(lambda e: e.o), w.min(lambda e: e.v)))
    return q.group_apply(lambda e: e.k % 2, lambda s: s.session_window(gap, max_duration).select(
        lambda w: Visit(0, w.count(), None, w.max(lambda e: e.v))), lambda key, v: Visit(key, v.n, v.total, v.high))


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(4, least=1))
@given(data=st.data())
def test_session_windows_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL, sq.Shape.EDGE]), label="shape")
    if shape is sq.Shape.EDGE:
        items = data.draw(side_by_side(edge_items()), label="items")
    else:
        items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    q = data.draw(sessions(build(source, data.draw(pipelines(), label="pipeline"))), label="query")
    note(f"query tree: {q.node!r}")
    sides = {"in": StreamInput(source, P, shape, items, data.draw(flushing(), label="settings"),
                               "drop" if shape is sq.Shape.EDGE else "error")}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    arrival = data.draw(st.booleans(), label="arrival column")
    released, carried = run_in_steps(spark, q, sides, data.draw(cuts(len(items)), label="cuts"), output,
                                     arrival=arrival)
    event(f"state pruned: {any(i.floor is not None for i in carried.state.inputs.values())}")
    expected = expected_after(q, sides, len(items), True, output)
    event(f"released {'some' if expected else 'none'}")
    assert released == expected


def test_hand_worked_pieces_in_micro_batches(spark: SparkSession) -> None:
    """The page views three at a time, a CTI at every start: each step releases what the reference
    releases over the views so far (``run_in_steps`` checks), and the state keeps what can still
    change. After the first micro-batch (CTI 12:04) ann's first session is open: its 3 views. After
    the second (CTI 12:09, output CTI 12:07: bob's second session is open) ann's first session, which
    ends at 12:09, still reaches the output floor: 6 views, and its released piece [12:05, 12:09).
    After the third (CTI 12:20) only ann's last session is open: its one view."""
    sides = {"views": StreamInput(VIEWS_IN, View, sq.Shape.INTERVAL, VIEWS, every_event(flush=True))}
    sizes: list[int] = []
    released, carried = run_in_steps(spark, PER_USER_PIECES, sides, [0, 3, 6], sq.Shape.INTERVAL, sizes=sizes)
    assert released == expected_after(PER_USER_PIECES, sides, len(VIEWS), True, sq.Shape.INTERVAL)
    assert len(released) == 6
    assert sizes == [3, 7, 1]
