"""Runs a query in micro-batches with the incremental step (as a streaming run does) and compares
what it has released after every micro-batch with the reference evaluator over the input so far."""
from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Sequence

import attrs
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.payload import sort_key
from streamql.query import nodes
from streamql.reference import declared_inputs
from streamql.reference.inputs import IngressState, ingest
from streamql.spark.streaming.state import Carried, StateStore
from streamql.spark.streaming.step import Plan, Step, empty_carried, step
from streamql.spark.operators.release import EDGE_KIND, EDGE_TIME
from streamql.spark.base.schema import collectable, payload_from_row
from streamql.spark.base.columns import END, START
from streamql.time import from_micros, to_micros
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
                 check_every_step: bool = True, sizes: list[int] | None = None,
                 state_bounds: Mapping[str, Callable[[int], int]] | None = None) -> tuple[list[Any], Carried]:
    """Runs ``q`` over micro-batches (items ``cuts[i]:cuts[i+1]`` of every input), then a final step
    that flushes. After every step the releases so far must equal the reference's over the input so
    far; returns everything released and the last carried state. With ``store``, every step's state
    goes through a ``StateStore`` there (written and read back). With ``sizes``, the rows of the
    state carried after every micro-batch are appended to it. With ``state_bounds`` (input name: the
    earliest end that input's events may still need, given the query's output floor), after every
    micro-batch the state must hold none of its events that ends before that, the output floor
    being the one the reference gives over the input so far (``expected_floor``)."""
    binder = sq.Binder(spark)
    for name, i in inputs.items():
        binder = bind(binder, i.stream, frame(spark, i.payload, i.shape, i.items[:1], arrival=arrival), i.shape,
                      i.settings, arrival=arrival, bad_rows=i.bad_rows)
    bindings = {name: binder.bindings[name] for name in inputs}
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
                             bad_rows=i.bad_rows).bindings[name].source
        outcome = step(spark, plan, carried, new, batch)
        now, made = collected_step(outcome, q, output)
        released += now
        carried = states.commit(made)[0] if states is not None else made
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
        if state_bounds:
            floor = expected_floor(q, inputs, hi)
            for name, bound in state_bounds.items():
                if floor is not None and name in carried.events:
                    least = carried.events[name].agg(F.min(END)).first()
                    least_end = None if least is None else least[0]
                    assert least_end is None or least_end >= bound(floor), (
                        f"after micro-batch {batch}: input {name!r} keeps an event ending at {least_end}, before "
                        f"{bound(floor)} (the output floor {floor} is at most the CTI of the output so far)")
    final = step(spark, plan, carried, {}, len(bounds), final=True)
    now, last = collected_step(final, q, output)
    released += now
    final.unpersist()
    return ordered(released, q), last


def collected_step(outcome: Step, q: sq.Stream[Any], output: sq.Shape) -> tuple[list[Any], Carried]:
    """A step's releases of ``output`` collected, and the state it carries, as a live run makes
    them: the carried state's counts and least starts are observed by the job that computes the
    releases (``Step.observed``, ``Step.carry``), not computed in jobs of their own."""
    observed = outcome.observed()
    return released_values(observed.frames[output], q, output), outcome.carry(observed)


def expected_floor(q: sq.Stream[Any], inputs: Mapping[str, StreamInput], cut: int) -> int | None:
    """A time at or before the output floor the incremental step may reach over the first ``cut``
    items of every input (docs/streaming.md, "How a micro-batch runs": the least of the output CTI
    and the start of any output event not yet stable): the least of the reference's output CTI
    (no flush) and the starts, moved by the pipeline's shifts (``start_shift``), of the input
    events not yet stable (edge events whose end edge has not come). ``None``: no output CTI yet."""
    given = {name: sq.reference.ReferenceInput(
        i.items[:cut], i.settings if i.settings is None else i.settings.without_flush(), i.bad_rows)
        for name, i in inputs.items()}
    result = sq.reference.run(q, given)
    if result.final_cti is None:
        return None
    floor = to_micros(result.final_cti)
    for state in ingest(given, declared_inputs(q, given)).values():
        assert isinstance(state, IngressState)  # these inputs have no partitions
        for event in state.events + state.open_edges:
            if not event.closed:
                floor = min(floor, event.start + start_shift(q.node))
    return floor


#: the operators that map each event on its own (``support.streams.pipelines``)
PIPELINE = (nodes.Where, nodes.Select, nodes.AlterDuration, nodes.AlterLifetime, nodes.ToPoint)


def start_shift(node: nodes.Node) -> int:
    """How far the operators that map each event on its own, at the top of the query ``node``, move
    an event's start (ticks): the sum of their ``shift``/``alter_lifetime`` start shifts."""
    total = 0
    while isinstance(node, PIPELINE):
        if isinstance(node, nodes.AlterLifetime):
            total += node.start_shift // sq.TICK
        node = node.source
    return total


def pipeline_floor(ops: Sequence[tuple[str, Any]], floor: int) -> int:
    """The earliest end an input event may have and still matter at or after ``floor`` at the end
    of the pipeline ``ops`` (``support.streams.build``): docs/streaming.md, "The state per operator"
    — ``shift``, ``alter_lifetime``, ``alter_duration``, ``to_point`` move the floor back by the
    shift and the new duration. A shift back (negative) is not taken to move it forward, and an
    ``alter_duration`` by expression (``us(1) * (e.v % 7) + us(2)``) lasts at most 8 ticks."""
    for kind, arg in reversed(ops):
        if kind == "alter_duration":
            floor -= arg
        elif kind == "alter_duration_payload":
            floor -= 8
        elif kind == "alter_lifetime":
            floor -= max(arg[0], 0) + (arg[1] or 0)
        elif kind == "shift":
            floor -= max(arg, 0)
        elif kind == "to_point":
            floor -= 1
    return floor


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
