"""Property tests for the horizon of windows over events that never end after a multi-stream
operator (issue 23, item 4.1): inputs reach INFINITY by CTI rows at random arrivals, by an import
or by the flush, and a union or a join feeds a hopping or tumbling window; Spark (which keeps of
each stream's CTI history its greatest finite CTI and the arrival at which it reached INFINITY)
releases what the reference (which keeps the history) does, in one batch and in micro-batches.
The inputs have arrival columns: one clock, as the reference's list positions."""
from __future__ import annotations

from typing import Any

from hypothesis import event, given, note, settings
from hypothesis import strategies as st
import pytest
from pyspark.sql import SparkSession

import streamql as sq
from support.frames import bind, frame
from support.must_release import check_release
from support.incremental import StreamInput, cuts, expected_after, run_in_steps
from support.depth import spark_examples
from support.streams import P, SPARK_EXAMPLES, advance_settings, edge_items, inputs, side_by_side, us


@st.composite
def with_infinity(draw: st.DrawFn, items: list[Any]) -> list[Any]:
    """``items`` with, mostly, a CTI row at INFINITY somewhere (and a finite one just before, at times)."""
    if draw(st.integers(0, 3)) == 0:
        return items
    at = draw(st.integers(0, len(items)))
    before = [sq.Cti(draw(st.integers(0, 120)))] if draw(st.booleans()) else []
    return [*items[:at], *before, sq.Cti(sq.INFINITY), *items[at:]]


@st.composite
def sides(draw: st.DrawFn) -> dict[str, StreamInput]:
    a, b = sq.input("a", P, sq.Shape.EDGE), sq.input("b", P, sq.Shape.POINT)
    a_items = draw(with_infinity(draw(side_by_side(edge_items()), label="a items")), label="a with INFINITY")
    b_items = draw(with_infinity(draw(side_by_side(inputs(sq.Shape.POINT)), label="b items")), label="b with INFINITY")
    if draw(st.booleans(), label="a imports b"):
        a_settings: sq.AdvanceTimeSettings | None = sq.AdvanceTimeSettings(
            generation=draw(st.sampled_from([None, sq.AdvanceTimeGeneration(every_events=1000, flush=True)])),
            import_=sq.AdvanceTimeImport("b"))
    else:
        a_settings = draw(st.sampled_from([None, sq.AdvanceTimeSettings(
            sq.AdvanceTimeGeneration(every_events=1000, flush=True))]), label="a settings")
    return {"a": StreamInput(a, P, sq.Shape.EDGE, a_items, a_settings, "drop"),
            "b": StreamInput(b, P, sq.Shape.POINT, b_items, draw(advance_settings(), label="b settings"))}


@st.composite
def queries(draw: st.DrawFn, inputs_: dict[str, StreamInput]) -> sq.Stream[Any]:
    a, b = inputs_["a"].stream, inputs_["b"].stream
    op = draw(st.sampled_from(["union", "join", "union shifted"]), label="op")
    if op == "union":
        merged = a.union(b)
    elif op == "union shifted":
        merged = a.shift(us(draw(st.integers(-20, 20)))).union(b.alter_duration(us(5)))
    else:
        merged = a.join(b.alter_duration(us(draw(st.integers(1, 200)))), lambda l, r: l.k % 2 == r.k % 2,
                        lambda l, r: P(l.k, r.v, l.s, r.o))
    size = draw(st.integers(1, 12), label="size")
    hop = draw(st.integers(1, 12), label="hop")
    return merged.hopping_window(us(size), us(hop)).select(lambda w: P(w.count(), 0, "w", None))


def drawn(data: st.DataObject) -> tuple[dict[str, StreamInput], sq.Stream[P], sq.Shape]:
    """The inputs, a query over them and the output shape of one example."""
    given_ = data.draw(sides(), label="inputs")
    q = data.draw(queries(given_), label="query")
    note(f"query tree: {q.node!r}")
    return given_, q, data.draw(st.sampled_from(list(sq.Shape)), label="output")


@settings(SPARK_EXAMPLES, max_examples=spark_examples(8))
@given(data=st.data())
def test_horizon_on_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    given_, q, output = drawn(data)
    reference_inputs = {name: sq.reference.ReferenceInput(i.items, i.settings, i.bad_rows) for name, i in given_.items()}
    expected = sq.reference.run(q, reference_inputs, output=output)
    check_release(q, reference_inputs, output, expected)  # the reference releases what it must
    event(f"final CTI {'INFINITY' if expected.final_cti == sq.INFINITY else 'finite'}")
    binder = sq.Binder(spark)
    for seed, (name, i) in enumerate(given_.items()):
        df = frame(spark, P, i.shape, i.items, arrival=True, seed=seed)
        binder = bind(binder, i.stream, df, i.shape, i.settings, arrival=True, bad_rows=i.bad_rows)
    assert binder.run(q, output=output) == expected


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(3, least=1))
@given(data=st.data())
def test_horizon_in_micro_batches_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    given_, q, output = drawn(data)
    length = max(len(i.items) for i in given_.values())
    released, _ = run_in_steps(spark, q, given_, data.draw(cuts(length), label="cuts"), output, arrival=True)
    assert released == expected_after(q, given_, length, True, output)
