"""``as_of_join`` and ``to_signal`` on Spark against the reference evaluator (the specification):
the hand-worked cases of ``support/as_of_cases.py``, then property tests — random inputs of every
shape (some crowded with equal starts, some of edges, some events never ending), predicates with
one or two equality keys, nullable keys and conditions of one side or of both, ``within``, advance-
time settings (DROP/ADJUST, flush or not, CTI rows, imported CTIs), pipelines before, windows and
``group_apply`` around, and every output shape give identical Results — and the plans: no
cartesian product, no single partition."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query.nodes import inputs_of
from streamql.spark.operators.explain import plan_lines
from streamql.time import from_micros, to_micros
from support.as_of_cases import CASES, Case, Tick
from support.frames import bind, frame, imported_after_importer
from support.depth import tiered, spark_examples
from support.must_release import check_release
from support.streams import (P, SPARK_EXAMPLES, build, crowded_inputs, edge_items, inputs, pipelines, side_by_side,
                             side_settings, us)


def spark_run(spark: SparkSession, q: sq.Stream[Any], sides: dict[str, tuple[sq.Stream[Any], sq.Shape, list[Any],
                                                                          sq.AdvanceTimeSettings | None]],
              output: sq.Shape, *, payload: type[Any] = P, partitions: int = 2, arrival: bool = False,
              bad_rows: str = "error", reference_left: list[Any] | None = None) -> tuple[sq.Result[Any], sq.Result[Any]]:
    """The reference's Result and Spark's for ``q`` over ``sides`` (those it reads, by name);
    ``reference_left``: the items of ``"left"`` in the reference's order, when that is not Spark's."""
    read = inputs_of(q.node)
    used = {name: side for name, side in sides.items() if name in read}
    reference_inputs = {name: sq.reference.ReferenceInput(
        reference_left if name == "left" and reference_left is not None else items, at,
        "drop" if bad_rows == "drop" else "error") for name, (_, _, items, at) in used.items()}
    expected = sq.reference.run(q, reference_inputs, output=output)
    check_release(q, reference_inputs, output, expected)  # the reference releases what it must
    binder = sq.Binder(spark)
    for seed, (name, (source, shape, items, at)) in enumerate(used.items()):
        df = frame(spark, payload, shape, items, partitions=partitions, arrival=arrival, seed=seed)
        binder = bind(binder, source, df, shape, at, arrival=arrival, bad_rows=bad_rows)
    return expected, binder.run(q, output=output)


# --- the hand-worked cases ----------------------------------------------------------------------------

#: the default tier's time: these run in the deep tier (a case of each of their kinds stays)
DEEP = ("within_two_ticks", "on_with_a_condition_of_the_right_side", "right_cti_past_the_left_start_releases_it",
        "signal_end_at_the_cti_made_by_an_unstable_start", "a_quote_at_the_cti_replaces_the_earlier_one")


@pytest.mark.parametrize("case", tiered(CASES, deep=DEEP, name=lambda c: c.name, named=True))
def test_hand_worked_case_on_spark(spark: SparkSession, case: Case) -> None:
    streams = {name: sq.input(name, Tick, side.shape) for name, side in case.sides.items()}
    q = case.query(streams)
    sides = {name: (streams[name], side.shape, list(side.items), side.settings) for name, side in case.sides.items()}
    expected, actual = spark_run(spark, q, sides, sq.Shape.INTERVAL, payload=Tick)
    assert [(e.start, e.end, e.payload) for e in actual.events] == [
        (from_micros(s), sq.INFINITY if e is None else from_micros(e), p) for s, e, p in case.interval]
    assert actual == expected
    if case.edges is not None:
        expected, actual = spark_run(spark, q, sides, sq.Shape.EDGE, payload=Tick)
        assert actual == expected and len(actual.edges) == len(case.edges)


# --- property tests -------------------------------------------------------------------------------------

#: each has an equality key: one key (of computed values: few of them), a key and a condition of both sides, a
#: nullable key (null matches nothing) and a condition of the right side, two keys and a condition
#: of the left side
ONS: list[Callable[[P, P], Any]] = [
    lambda l, r: l.k % 3 == r.k % 3,
    lambda l, r: (l.k % 3 == r.k % 3) & (l.v >= r.v),
    lambda l, r: (r.o == l.o) & (r.v != 4),
    lambda l, r: (l.s == r.s) & (r.k % 2 == l.k % 2) & (l.v > 0),
]
KEYS: list[Callable[[P], Any]] = [lambda e: e.k % 3, lambda e: e.o, lambda e: e.s, lambda e: e.k]


def _events(items: list[Any]) -> int:
    return sum(1 for i in items if not isinstance(i, sq.Cti))


@st.composite
def side(draw: st.DrawFn, name: str) -> tuple[sq.Stream[P], sq.Shape, list[Any], sq.Stream[P]]:
    """An input (stream, shape, items) and a query over it: maybe a pipeline, maybe a snapshot
    window (events whose starts and ends are not all stable)."""
    kind = draw(st.sampled_from(["crowded", "crowded", "spread", "edges"]))
    shape = sq.Shape.EDGE if kind == "edges" else draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]))
    source = sq.input(name, P, shape)
    if kind == "edges":
        items = draw(side_by_side(edge_items().filter(lambda i: _events(i) >= 3)))
    elif kind == "crowded":
        # equal starts and few keys: ties of partners and of signals
        items = draw(side_by_side(crowded_inputs(shape).filter(lambda i: _events(i) >= 3)))
    else:
        items = draw(side_by_side(inputs(shape, open_ends=True, min_items=3)))
    q = build(source, draw(pipelines())) if draw(st.booleans()) else source
    if draw(st.integers(0, 3)) == 0:
        q = q.snapshot_window().select(lambda w: P(w.count() % 3, sq.coalesce(w.sum(lambda e: e.v), 0), "w",
                                                   w.min(lambda e: e.o)))
    return source, shape, items, q


def pairs(l: P, r: P) -> P:
    return P(l.k, l.v * 10 + r.v, l.s + r.s, r.o)


def check(spark: SparkSession, data: st.DataObject, q: sq.Stream[Any],
          sides: dict[str, tuple[sq.Stream[Any], sq.Shape, list[Any], sq.AdvanceTimeSettings | None]],
          arrival: bool = False, reference_left: list[Any] | None = None) -> None:
    """``arrival``: bind arrival columns (an input importing another's CTIs shares the reference's
    one clock with it only through them); ``reference_left``: the left items in the reference's
    order, when that is not Spark's (an import without arrival columns)."""
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    edges = any(shape is sq.Shape.EDGE for _, shape, _, _ in sides.values())
    expected, actual = spark_run(spark, q, sides, output, partitions=data.draw(st.integers(1, 3), label="partitions"),
                                 bad_rows="drop" if edges else "error", arrival=arrival, reference_left=reference_left)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    assert actual == expected


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_as_of_join_on_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    lsource, lshape, litems, lq = data.draw(side("left"), label="left")
    rsource, rshape, ritems, rq = data.draw(side("right"), label="right")
    within = data.draw(st.one_of(st.none(), st.integers(0, 20)), label="within")
    q = lq.as_of_join(rq, ONS[data.draw(st.integers(0, len(ONS) - 1), label="on")], pairs,
                      None if within is None else us(within))
    lset, rset = data.draw(side_settings(), label="left settings"), data.draw(side_settings(), label="right settings")
    check(spark, data, q, {"left": (lsource, lshape, litems, lset), "right": (rsource, rshape, ritems, rset)})


@settings(SPARK_EXAMPLES, max_examples=spark_examples(6))
@given(data=st.data())
def test_to_signal_on_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    source, shape, items, q = data.draw(side("in"), label="input")
    q = q.to_signal(KEYS[data.draw(st.integers(0, len(KEYS) - 1), label="key")])
    check(spark, data, q, {"in": (source, shape, items, data.draw(side_settings(), label="settings"))})


@settings(SPARK_EXAMPLES, max_examples=spark_examples(5))
@given(data=st.data())
def test_as_of_joins_and_signals_among_windows_and_groups_equal_reference(spark: SparkSession,
                                                                          data: st.DataObject) -> None:
    lsource, lshape, litems, lq = data.draw(side("left"), label="left")
    rsource, rshape, ritems, rq = data.draw(side("right"), label="right")
    on = ONS[data.draw(st.integers(0, len(ONS) - 1), label="on")]
    kind = data.draw(st.sampled_from(["group_apply", "signal then as_of", "as_of then signal"]), label="kind")
    if kind == "group_apply":
        # inside a group: the group key is one more key (null-safe), the right side a shifted copy
        shift = us(data.draw(st.integers(-10, 10), label="shift"))
        q = lq.group_apply(lambda e: e.k % 2, lambda s: s.as_of_join(s.shift(shift).to_signal(lambda e: e.s), on, pairs),
                           lambda key, e: P(e.k, e.v, e.s, key))
    elif kind == "signal then as_of":
        q = lq.as_of_join(rq.to_signal(lambda e: e.k % 2), on, pairs)
    else:
        within = data.draw(st.one_of(st.none(), st.integers(0, 30)), label="within")
        q = lq.as_of_join(rq, on, pairs, None if within is None else us(within)).to_signal(lambda e: e.k)
    if data.draw(st.booleans(), label="window after"):
        q = q.tumbling_window(us(10)).select(lambda w: P(w.count(), sq.coalesce(w.max(lambda e: e.v), -1), "t",
                                                          w.max(lambda e: e.o)))
    lset, rset = data.draw(side_settings(), label="left settings"), data.draw(side_settings(), label="right settings")
    imports = data.draw(st.integers(0, 3), label="import") == 0
    arrival = False
    reference_litems = None
    if imports:
        rset = sq.AdvanceTimeSettings(None if rset is None else rset.generation, sq.AdvanceTimeImport("left"),
                                      sq.AdvanceTimePolicy.DROP if rset is None else rset.policy)
        # with arrival columns both inputs share one clock; without, the right's events are taken
        # to arrive before every imported CTI (docs/ctis-and-release.md#the-arrival-clock): the
        # reference sees the left's items after
        arrival = data.draw(st.booleans(), label="arrival columns")
        if not arrival and "right" in inputs_of(q.node):
            reference_litems = imported_after_importer(P, lshape, litems, lset, ritems)
    sides = {"left": (lsource, lshape, litems, lset), "right": (rsource, rshape, ritems, rset)}
    check(spark, data, q, sides, arrival=arrival, reference_left=reference_litems)


#: an example of the deep tier (2026-11-30), two of its parts moved back 18,000 µs: left events, late
#: edges dropped, some never ending; in the group of odd keys the as-of join's output holds one event
#: from 6,065 that never ends
SAME_INPUT_FLUSHED = [
    sq.StartEdge(77, P(3, 9, ' c', 3)), sq.EndEdge(77, 115, P(3, 9, ' c', 3)),
    sq.StartEdge(99, P(0, -1, '', None)), sq.StartEdge(77, P(-1, 6, 'b', 5)),
    sq.StartEdge(49, P(5, 6, ' c', 1)), sq.Cti(500), sq.EndEdge(49, 85, P(5, 6, ' c', 1)),
    sq.StartEdge(79, P(2, 5, 'ab', 2)), sq.StartEdge(100, P(-5, 6, ' c', None)), sq.Cti(78),
    sq.EndEdge(99, 115, P(0, -1, '', None)), sq.EndEdge(77, 87, P(-1, 6, 'b', 5)),
    sq.StartEdge(78, P(-5, 0, 'a', None)), sq.EndEdge(78, 88, P(-5, 0, 'a', None)),
    sq.StartEdge(6065, P(5, 7, 'ab', None)), sq.StartEdge(6030, P(5, 3, '', 2)),
    sq.StartEdge(6030, P(5, 3, '', 2)), sq.EndEdge(6065, 6077, P(5, 7, 'ab', None)),
    sq.EndEdge(6030, 6048, P(5, 3, '', 2)), sq.EndEdge(6035, 6061, P(6, 6, 'a', None)),
    sq.EndEdge(6030, 6049, P(5, 3, '', 2)), sq.StartEdge(6035, P(6, 6, 'a', None)),
    sq.EndEdge(6065, 6099, P(-1, 5, ' c', 3)), sq.EndEdge(6035, 6044, P(6, 6, 'a', None)),
    sq.StartEdge(6016, P(0, -1, 'b', None)), sq.StartEdge(6065, P(-1, 5, ' c', 3)),
    sq.EndEdge(6016, 6043, P(0, -1, 'b', None)),
]


def test_the_horizon_after_an_as_of_join_of_an_input_with_itself_shifted(spark: SparkSession) -> None:
    """Both sides of the join read one input, the right side shifted 8 µs later: the input's flush
    takes both to INFINITY in one step, so the join's greatest finite CTI is the least of theirs the
    step before (the left's), and the tumbling windows over the event that never ends stop at the
    window holding that CTI ([6060, 6070)), as in the reference."""
    left = sq.input("left", P, sq.Shape.EDGE)
    q = left.group_apply(lambda e: e.k % 2,
                         lambda s: s.as_of_join(s.shift(us(8)).to_signal(lambda e: e.s), ONS[2], pairs),
                         lambda key, e: P(e.k, e.v, e.s, key))
    q = q.tumbling_window(us(10)).select(lambda w: P(w.count(), sq.coalesce(w.max(lambda e: e.v), -1), "t",
                                                      w.max(lambda e: e.o)))
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    runs = {output: spark_run(spark, q, {"left": (left, sq.Shape.EDGE, SAME_INPUT_FLUSHED, at)}, output,
                              partitions=3, bad_rows="drop") for output in (sq.Shape.INTERVAL, sq.Shape.EDGE)}
    for expected, actual in runs.values():
        assert actual == expected
    released = runs[sq.Shape.INTERVAL][1].events
    assert [(to_micros(e.start), to_micros(e.end)) for e in released if to_micros(e.start) >= 6000] == [(6060, 6070)]


# --- plans ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("on", [ONS[0], ONS[1]], ids=["keys", "condition of both"])
def test_the_plans_meet_by_key_never_in_one_partition(spark: SparkSession, on: Callable[[P, P], Any]) -> None:
    left, right = sq.input("left", P, sq.Shape.POINT), sq.input("right", P, sq.Shape.POINT)
    items = [sq.Insert(t, t + 1, P(t % 3, t, "a", None)) for t in range(20)]
    flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
    binder = bind(bind(sq.Binder(spark), left, frame(spark, P, sq.Shape.POINT, items), sq.Shape.POINT, flush),
                  right, frame(spark, P, sq.Shape.POINT, items, seed=1), sq.Shape.POINT, flush)
    for q in (left.as_of_join(right, on, pairs), right.to_signal(lambda e: e.k)):
        lines = plan_lines(binder.to_dataframe(q))
        assert not [line for line in lines if "CartesianProduct" in line or "NestedLoopJoin" in line
                    or "SinglePartition" in line], "\n".join(lines)
        assert any("Window" in line for line in lines)
