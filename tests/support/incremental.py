"""Runs a query in micro-batches with the incremental step (as a streaming run does) and compares
what it has released after every micro-batch with the reference evaluator over the input so far."""
from __future__ import annotations

from typing import Any, Literal, Mapping, Sequence

import attrs
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.payload import sort_key
from streamql.spark.incremental import Carried, Plan, StateStore, empty_carried, step
from streamql.spark.release import EDGE_KIND, EDGE_TIME
from streamql.spark.schema import collectable, payload_from_row
from streamql.spark.columns import END, START
from streamql.time import from_micros
from support.frames import bind, frame
from support.must_release import check_release
from support.streams import advance_settings, us


@attrs.frozen
class StreamInput:
    """One input of a run: its declaration, items in arrival order and advance-time settings."""

    stream: sq.Stream[Any]
    payload: type[Any]
    shape: sq.Shape
    items: Sequence[Any]
    settings: sq.AdvanceTimeSettings | None
    bad_rows: Literal["error", "drop"] = "error"


def released_values(df: DataFrame, q: sq.Stream[Any], output: sq.Shape) -> list[Any]:
    """Released rows of a step as ``sq.Event``s (``sq.Edge``s for EDGE output)."""
    schema = q.node.schema
    payload = [collectable(F.col(f.name), f.type).alias(f.name) for f in schema.fields]
    n = len(schema.fields)
    if output is sq.Shape.EDGE:
        return [sq.Edge(sq.EdgeKind(r[0]), from_micros(r[1]), from_micros(r[2]), payload_from_row(schema, r[3:3 + n]))
                for r in df.select(EDGE_KIND, EDGE_TIME, START, *payload).collect()]
    return [sq.Event(from_micros(r[0]), from_micros(r[1]), payload_from_row(schema, r[2:2 + n]))
            for r in df.select(START, END, *payload).collect()]


def ordered(values: list[Any], q: sq.Stream[Any]) -> list[Any]:
    schema = q.node.schema
    if values and isinstance(values[0], sq.Edge):
        return sorted(values, key=lambda e: (e.time, e.kind is sq.EdgeKind.START, e.start, sort_key(schema, e.payload)))
    return sorted(values, key=lambda e: (e.start, e.end, sort_key(schema, e.payload)))


def expected_after(q: sq.Stream[Any], inputs: Mapping[str, StreamInput], cut: int, final: bool,
                   output: sq.Shape) -> list[Any]:
    """What the reference releases over the first ``cut`` items of every input (flushing only when
    ``final``) — after checking that it is what must be released there (``support.must_release``),
    so that a comparison with it never passes on output held back."""
    reference_inputs = {
        name: sq.reference.ReferenceInput(i.items[:cut], i.settings if final or i.settings is None else i.settings.without_flush(),
                                          i.bad_rows)
        for name, i in inputs.items()}
    result = sq.reference.run(q, reference_inputs, output)
    check_release(q, reference_inputs, output, result)
    return ordered(result.edges if output is sq.Shape.EDGE else result.events, q)


def run_in_steps(spark: SparkSession, q: sq.Stream[Any], inputs: Mapping[str, StreamInput], cuts: Sequence[int],
                 output: sq.Shape, *, arrival: bool = False, store: str | None = None,
                 check_every_step: bool = True, sizes: list[int] | None = None) -> tuple[list[Any], Carried]:
    """Runs ``q`` over micro-batches (items ``cuts[i]:cuts[i+1]`` of every input), then a final step
    that flushes. After every step the releases so far must equal the reference's over the input so
    far; returns everything released and the last carried state. With ``store``, every step's state
    goes through a ``StateStore`` there (written and read back). With ``sizes``, the rows of the
    state carried after every micro-batch are appended to it."""
    binder = sq.Binder(spark)
    for name, i in inputs.items():
        binder = bind(binder, i.stream, frame(spark, i.payload, i.shape, i.items[:1], arrival=arrival), i.shape,
                      i.settings, arrival=arrival, bad_rows=i.bad_rows)
    bindings = {name: binder._bindings[name] for name in inputs}
    plan = Plan(q.node, bindings, (output,))
    carried = empty_carried(plan)
    states = StateStore(spark, store) if store is not None else None
    released: list[Any] = []
    bounds = list(cuts)
    total = max(len(i.items) for i in inputs.values())
    for batch, (lo, hi) in enumerate(zip(bounds, bounds[1:] + [total])):
        new = {}
        for name, i in inputs.items():
            rows = frame(spark, i.payload, i.shape, i.items[lo:hi], arrival=arrival, first_arrival=lo, seed=batch)
            new[name] = bind(sq.Binder(spark), i.stream, rows, i.shape, i.settings, arrival=arrival,
                             bad_rows=i.bad_rows)._bindings[name].source
        outcome = step(spark, plan, carried, new, batch)
        released += released_values(outcome.released_now[output], q, output)
        carried = states.commit(outcome.carried)[0] if states is not None else outcome.carried
        if states is None:
            # the next step reads these frames again: computed once, by the first job that reads them
            # (lazily: an eager checkpoint would cost a job per frame and step), not from the whole lineage
            def once(frames: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
                return {n: df.localCheckpoint(eager=False) for n, df in frames.items()}

            carried = attrs.evolve(carried, events=once(carried.events), pending=once(carried.pending),
                                   released=once(carried.released), partials=once(carried.partials))
        outcome.unpersist()
        if sizes is not None:
            sizes.append(carried.rows())
        if check_every_step:
            assert ordered(released, q) == expected_after(q, inputs, hi, False, output), f"after micro-batch {batch}"
    final = step(spark, plan, carried, {}, len(bounds), final=True)
    released += released_values(final.released_now[output], q, output)
    final.unpersist()
    return ordered(released, q), final.carried


@st.composite
def cuts(draw: st.DrawFn, length: int) -> list[int]:
    """Where micro-batches begin: 0, then one to three points (empty micro-batches allowed)."""
    points = draw(st.lists(st.integers(0, max(length, 0)), min_size=1, max_size=3))
    return [0] + sorted(points)


@st.composite
def flushing(draw: st.DrawFn) -> sq.AdvanceTimeSettings | None:
    """Mostly settings that generate CTIs often, so that steps release something; else any."""
    if draw(st.integers(0, 2)) == 0:
        return draw(advance_settings())
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 3)),
                                                           delay=us(draw(st.sampled_from([0, 3]))),
                                                           flush=draw(st.booleans())),
                                  policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))
