"""Late records in micro-batches: the records the incremental steps give, one micro-batch after
another (as ``Binder.start(late_sink=...)`` writes them), are together exactly the reference
evaluator's ``Result.late`` over the whole input — none twice, none missing — and each step's
records agree with its counts. Random inputs of every shape, policies, bad rows and cuts."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Sequence, cast

import attrs
from hypothesis import given, note, settings
from hypothesis import strategies as st
import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.payload import schema_of
from streamql.spark.streaming.state import Carried
from streamql.spark.streaming.step import Plan, Step, empty_carried, step
from streamql.spark.ingress.late import late_records
from support.frames import bind, frame
from support.incremental import cuts, flushing
from support.streams import P, SPARK_EXAMPLES, edge_items, inputs, side_by_side, us
from support.depth import spark_examples


def with_null_payloads(items: Sequence[Any], positions: Sequence[int]) -> list[Any]:
    """``items`` with a null in the non-Optional ``k`` of the events at ``positions``: bad rows."""
    out = list(items)
    for position in positions:
        if position < len(out) and not isinstance(out[position], sq.Cti):
            out[position] = attrs.evolve(out[position], payload=dataclasses.replace(out[position].payload,
                                                                                    k=cast(Any, None)))
    return out


def records_in_steps(spark: SparkSession, source: sq.Stream[P], shape: sq.Shape, items: list[Any],
                     at: sq.AdvanceTimeSettings | None, bounds: list[int], arrival: bool) -> list[sq.Late]:
    """The late records of every step (the micro-batches ``bounds``, then the final step), with
    each step's records checked against its counts."""
    binder = bind(sq.Binder(spark), source, frame(spark, P, shape, items[:1], arrival=arrival), shape, at,
                  arrival=arrival, bad_rows="drop")
    plan = Plan(source.node, {"in": binder.bindings["in"]}, (sq.Shape.INTERVAL,))
    carried = empty_carried(plan)
    records: list[sq.Late] = []
    for batch, (lo, hi) in enumerate(zip(bounds, bounds[1:] + [len(items)])):
        rows = frame(spark, P, shape, items[lo:hi], arrival=arrival, first_arrival=lo, seed=batch)
        new = {"in": bind(sq.Binder(spark), source, rows, shape, at, arrival=arrival,
                          bad_rows="drop").bindings["in"].source}
        outcome = step(spark, plan, carried, new, batch)
        records += counted(outcome, carried)
        carried = outcome.carried
        carried = attrs.evolve(carried, events={n: df.localCheckpoint() for n, df in carried.events.items()},
                               pending={n: df.localCheckpoint() for n, df in carried.pending.items()})
        outcome.unpersist()
    final = step(spark, plan, carried, {}, len(bounds), final=True)
    records += counted(final, carried)
    final.unpersist()
    return sorted(records, key=lambda r: (r.input, r.arrival))


def counted(outcome: Step, before: Carried) -> list[sq.Late]:
    """The step's records, whose numbers per action are what the step added to the counts."""
    mine = late_records("in", P_SCHEMA, outcome.late["in"].frame)
    after = outcome.carried.state
    actions = Counter(r.action for r in mine)
    state = before.state
    assert (actions["dropped"], actions["adjusted"], actions["bad_row"]) == (
        after.dropped - state.dropped, after.adjusted - state.adjusted, after.bad_rows - state.bad_rows)
    return mine


P_SCHEMA = schema_of(P)


def check(spark: SparkSession, data: st.DataObject, shape: sq.Shape, items: list[Any],
          at: sq.AdvanceTimeSettings | None) -> None:
    source = sq.input("in", P, shape)
    bounds = data.draw(cuts(len(items)), label="cuts")
    arrival = data.draw(st.booleans(), label="arrival column")
    expected = sq.reference.run(source, {"in": sq.reference.ReferenceInput(items, at, bad_rows="drop")},
                                late=True).late
    actual = records_in_steps(spark, source, shape, items, at, bounds, arrival)
    note(f"records in steps: {actual}")
    assert [attrs.evolve(r, reason=None) for r in actual] == [attrs.evolve(r, reason=None) for r in expected]


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(4, least=1))
@given(data=st.data())
def test_late_records_in_micro_batches_equal_the_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = with_null_payloads(data.draw(side_by_side(inputs(shape)), label="items"),
                               data.draw(st.lists(st.integers(0, 24), max_size=2), label="bad positions"))
    check(spark, data, shape, items, data.draw(flushing(), label="settings"))


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(3, least=1))
@given(data=st.data())
def test_late_records_of_edges_in_micro_batches_equal_the_reference(spark: SparkSession,
                                                                    data: st.DataObject) -> None:
    # with a final flush: an open event that ADJUST moved is recorded once it is final (as it is counted)
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=data.draw(st.integers(1, 3), label="every"),
                                                         delay=us(data.draw(st.sampled_from([0, 3]), label="delay")),
                                                         flush=True),
                                policy=data.draw(st.sampled_from(list(sq.AdvanceTimePolicy)), label="policy"))
    check(spark, data, sq.Shape.EDGE, data.draw(side_by_side(edge_items()), label="items"), at)


@pytest.mark.slow  # the deep tier: a hand-worked case of micro-batches (the default tier's time)
def test_an_open_edge_event_moved_by_adjust_is_recorded_once_even_after_a_cti_at_infinity(
        spark: SparkSession) -> None:
    # a start edge moved by ADJUST stays open past a CTI at INFINITY: c's end edge still comes after
    # it (its record replaces the start edge's), d's never does (recorded by the final step, once)
    INF = sq.Cti(sq.INFINITY)
    items: list[Any] = [sq.StartEdge(0, P(1, 1, "a", None)), sq.StartEdge(10, P(2, 2, "b", None)),
                        sq.StartEdge(5, P(3, 3, "c", None)), sq.StartEdge(3, P(4, 4, "d", None)),
                        INF, sq.EndEdge(5, 8, P(3, 3, "c", None))]
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True),
                                policy=sq.AdvanceTimePolicy.ADJUST)
    source = sq.input("in", P, sq.Shape.EDGE)
    expected = sq.reference.run(source, {"in": sq.reference.ReferenceInput(items, at)}, late=True).late
    assert [(r.arrival, r.action, r.kind) for r in expected] == [(3, "adjusted", "START"), (5, "adjusted", "END")]
    # the CTI at INFINITY in the first micro-batch, c's end edge in the second
    assert records_in_steps(spark, source, sq.Shape.EDGE, items, at, [0, 5], arrival=False) == expected
