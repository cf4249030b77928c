"""``followed_by`` and ``not_followed_by`` on Spark against the reference evaluator (the
specification): the hand-worked cases of ``support/pattern_cases.py``, then property tests — random
inputs of every shape (some crowded with equal starts, some of edges, some events never ending),
conditions with equality keys only (the per-key sort), with conditions of both sides, without any
key (time buckets) and none at all, ``within`` or not, ``all_matches``, a stream followed by
itself, chains, advance-time settings (DROP/ADJUST, flush or not, CTI rows, imported CTIs),
pipelines before, windows and ``group_apply`` around, every output shape give identical Results —
and the plans: no cartesian product, no single partition."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query.nodes import inputs_of
from streamql.spark.operators.explain import plan_lines
from support.depth import spark_examples, tiered
from support.frames import bind, frame, imported_after_importer
from support.must_release import check_release
from support.pattern_cases import CASES, Case, Event
from support.streams import (P, SPARK_EXAMPLES, build, crowded_inputs, edge_items, inputs, pipelines, side_by_side,
                             side_settings, us)
from streamql.time import from_micros, to_micros

Sides = dict[str, tuple[sq.Stream[Any], sq.Shape, list[Any], sq.AdvanceTimeSettings | None]]


def spark_run(spark: SparkSession, q: sq.Stream[Any], sides: Sides, output: sq.Shape, *, payload: type[Any] = P,
              partitions: int = 2, arrival: bool = False, bad_rows: str = "error",
              reference_left: list[Any] | None = None) -> tuple[sq.Result[Any], sq.Result[Any]]:
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

#: the cases the default tier runs on Spark (a few seconds each); the deep tier runs them all
EVERY_TIER = {"not followed by within at a CTI"}


@pytest.mark.parametrize("case", tiered(CASES, default=EVERY_TIER, name=lambda c: c.name, named=True))
def test_hand_worked_case_on_spark(spark: SparkSession, case: Case) -> None:
    streams = {name: sq.input(name, Event, side.shape) for name, side in case.sides.items()}
    q = case.query(streams)
    sides: Sides = {name: (streams[name], side.shape, list(side.items), side.settings)
                    for name, side in case.sides.items()}
    expected, actual = spark_run(spark, q, sides, sq.Shape.POINT, payload=Event)
    assert sorted([(e.start, e.payload) for e in actual.events], key=repr) == sorted(
        [(from_micros(s), p) for s, p in case.points], key=repr)
    assert actual == expected


# --- property tests -------------------------------------------------------------------------------------

#: keys only (the per-key sort: one key of few values, a nullable key with a right-side and a
#: left-side condition), a key and a condition of both (pairs per key), no key (time buckets) and
#: no condition at all
ONS: list[Callable[[P, P], Any]] = [
    lambda a, b: a.k % 3 == b.k % 3,
    lambda a, b: (b.o == a.o) & (b.v != 4) & (a.v > 0),
    lambda a, b: (a.k % 3 == b.k % 3) & (a.v >= b.v),
    lambda a, b: a.v < b.v,
    lambda a, b: True,
]


def _events(items: list[Any]) -> int:
    return sum(1 for i in items if not isinstance(i, sq.Cti))


@st.composite
def side(draw: st.DrawFn, name: str) -> tuple[sq.Stream[P], sq.Shape, list[Any], sq.Stream[P]]:
    """An input (stream, shape, items) and a query over it: maybe a pipeline, maybe a snapshot
    window (events whose starts and payloads are not all stable)."""
    kind = draw(st.sampled_from(["crowded", "crowded", "spread", "edges"]))
    shape = sq.Shape.EDGE if kind == "edges" else draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]))
    source = sq.input(name, P, shape)
    if kind == "edges":
        items = draw(side_by_side(edge_items().filter(lambda i: _events(i) >= 3)))
    elif kind == "crowded":
        items = draw(side_by_side(crowded_inputs(shape).filter(lambda i: _events(i) >= 3)))
    else:
        items = draw(side_by_side(inputs(shape, open_ends=True, min_items=3)))
    q = build(source, draw(pipelines())) if draw(st.booleans()) else source
    if draw(st.integers(0, 3)) == 0:
        q = q.snapshot_window().select(lambda w: P(w.count() % 3, sq.coalesce(w.sum(lambda e: e.v), 0), "w",
                                                   w.min(lambda e: e.o)))
    return source, shape, items, q


def pairs(a: P, b: P) -> P:
    return P(a.k, a.v * 10 + b.v, a.s + b.s, b.o)


def check(spark: SparkSession, data: st.DataObject, q: sq.Stream[Any], sides: Sides, arrival: bool = False,
          reference_left: list[Any] | None = None) -> None:
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    edges = any(shape is sq.Shape.EDGE for _, shape, _, _ in sides.values())
    expected, actual = spark_run(spark, q, sides, output, partitions=data.draw(st.integers(1, 3), label="partitions"),
                                 bad_rows="drop" if edges else "error", arrival=arrival, reference_left=reference_left)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    assert actual == expected


def _pattern(data: st.DataObject, lq: sq.Stream[P], rq: sq.Stream[P]) -> sq.Stream[P]:
    on = ONS[data.draw(st.integers(0, len(ONS) - 1), label="on")]
    within = data.draw(st.one_of(st.none(), st.integers(1, 20)), label="within")
    if data.draw(st.integers(0, 2), label="not followed") == 0:
        return lq.not_followed_by(rq, on, us(within or 7))
    return lq.followed_by(rq, on, pairs, None if within is None else us(within),
                          all_matches=data.draw(st.booleans(), label="all_matches"))


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_patterns_on_spark_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    lsource, lshape, litems, lq = data.draw(side("left"), label="left")
    rsource, rshape, ritems, rq = data.draw(side("right"), label="right")
    if data.draw(st.integers(0, 4), label="self") == 0:
        rq = lq  # a stream followed by itself
    q = _pattern(data, lq, rq)
    lset, rset = data.draw(side_settings(), label="left settings"), data.draw(side_settings(), label="right settings")
    check(spark, data, q, {"left": (lsource, lshape, litems, lset), "right": (rsource, rshape, ritems, rset)})


@pytest.mark.slow  # the deep tier: the default tier has the plain patterns above
@settings(SPARK_EXAMPLES, max_examples=spark_examples(6))
@given(data=st.data())
def test_patterns_in_chains_windows_groups_and_imports_equal_reference(spark: SparkSession,
                                                                       data: st.DataObject) -> None:
    lsource, lshape, litems, lq = data.draw(side("left"), label="left")
    rsource, rshape, ritems, rq = data.draw(side("right"), label="right")
    kind = data.draw(st.sampled_from(["chain", "group_apply", "window after"]), label="kind")
    if kind == "chain":
        q = _pattern(data, _pattern(data, lq, rq), rq)
    elif kind == "group_apply":
        # inside a group: the group key is one more key (null-safe), the right side a shifted copy
        shift = us(data.draw(st.integers(-10, 10), label="shift"))
        q = lq.group_apply(lambda e: e.k % 2, lambda s: _pattern(data, s, s.shift(shift)),
                           lambda key, e: P(e.k, e.v, e.s, key))
    else:
        if data.draw(st.integers(0, 2), label="right: the left shifted") == 0:  # one input on both sides
            rq = lq.shift(us(data.draw(st.integers(1, 20), label="shift")))
        q = _pattern(data, lq, rq)
        if data.draw(st.booleans(), label="to_signal"):  # a signal's last event never ends: the horizon
            q = q.to_signal(lambda e: e.k)
        q = _windowed(q)
    lset, rset = data.draw(side_settings(), label="left settings"), data.draw(side_settings(), label="right settings")
    arrival = False
    reference_litems = None
    if data.draw(st.integers(0, 3), label="import") == 0:
        rset = sq.AdvanceTimeSettings(None if rset is None else rset.generation, sq.AdvanceTimeImport("left"),
                                      sq.AdvanceTimePolicy.DROP if rset is None else rset.policy)
        arrival = data.draw(st.booleans(), label="arrival columns")
        if not arrival and "right" in inputs_of(q.node):
            reference_litems = imported_after_importer(P, lshape, litems, lset, ritems)
    sides = {"left": (lsource, lshape, litems, lset), "right": (rsource, rshape, ritems, rset)}
    check(spark, data, q, sides, arrival=arrival, reference_left=reference_litems)


def _windowed(q: sq.Stream[P]) -> sq.Stream[P]:
    return q.tumbling_window(us(10)).select(
        lambda w: P(w.count(), sq.coalesce(w.max(lambda e: e.v), -1), "t", w.max(lambda e: e.o)))


#: points at 33 (key 2), 94 (2), 121 (1), 139 (0), 151 (2) and 154 (2), a CTI every three events, flushed
SAME_INPUT_FLUSHED = [sq.Insert(t, t + 1, P(k, v, "a", o)) for t, k, v, o in
                      [(33, 2, 4, None), (94, 2, -5, 1), (121, 1, 3, None), (139, 0, 2, 2), (151, 2, 2, 1),
                       (154, 2, -3, None)]]


@pytest.mark.parametrize("pattern", ["followed_by", "not_followed_by"])
def test_the_horizon_after_a_pattern_of_an_input_with_itself_shifted(spark: SparkSession, pattern: str) -> None:
    """``followed_by`` (or ``not_followed_by``) of an input with itself shifted 8 µs later, made a
    signal per key: each key's last signal event never ends. The input's flush takes both sides to
    INFINITY in one step, so the pattern's greatest finite CTI is the least of theirs the step
    before (the left's, 154, not the right's, 162), and the tumbling windows over the events that
    never end stop at the window holding it ([150, 160)), as in the reference. (``not_followed_by``
    within 5 µs: each absence 5 µs after its event, the left CTI moved as much, 159 against 162.)"""
    left = sq.input("left", P, sq.Shape.POINT)
    later = left.shift(us(8))
    matched = (left.followed_by(later, lambda a, b: a.k == b.k, pairs, us(30)) if pattern == "followed_by"
               else left.not_followed_by(later, lambda a, b: a.k == b.k, us(5)))  # every event: 5 µs later
    q = _windowed(matched.to_signal(lambda e: e.k))
    every_3 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, flush=True))
    runs = {output: spark_run(spark, q, {"left": (left, sq.Shape.POINT, SAME_INPUT_FLUSHED, every_3)}, output)
            for output in (sq.Shape.INTERVAL, sq.Shape.EDGE)}
    for expected, actual in runs.values():
        assert actual == expected
    released = runs[sq.Shape.INTERVAL][1].events
    assert max(to_micros(e.start) for e in released) == 150


# --- plans ------------------------------------------------------------------------------------------------

PLANS = [(on, pattern) for on in ("keys", "condition of both", "no key", "none")
         for pattern in ("followed_by", "all_matches", "not_followed_by")]


@pytest.mark.parametrize("on, pattern", tiered(PLANS, default={"keys-followed_by"}, name="-".join, unpack=True,
                                                named=True))
def test_the_plans_never_meet_in_one_partition(spark: SparkSession, on: str, pattern: str) -> None:
    condition = {"keys": ONS[0], "condition of both": ONS[2], "no key": ONS[3], "none": ONS[4]}[on]
    left, right = sq.input("left", P, sq.Shape.POINT), sq.input("right", P, sq.Shape.POINT)
    items = [sq.Insert(t, t + 1, P(t % 3, t, "a", None)) for t in range(20)]
    flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
    binder = bind(bind(sq.Binder(spark), left, frame(spark, P, sq.Shape.POINT, items), sq.Shape.POINT, flush),
                  right, frame(spark, P, sq.Shape.POINT, items, seed=1), sq.Shape.POINT, flush)
    if pattern == "not_followed_by":
        q = left.not_followed_by(right, condition, us(5))
    else:
        q = left.followed_by(right, condition, pairs, us(5), all_matches=pattern == "all_matches")
    lines = plan_lines(binder.to_dataframe(q))
    assert not [line for line in lines if "CartesianProduct" in line or "NestedLoopJoin" in line
                or "SinglePartition" in line], "\n".join(lines)
    if on == "keys" and pattern != "all_matches":
        # the per-key sort: a window, and no join of the two sides
        assert any("Window" in line for line in lines) and not any("Join" in line for line in lines), "\n".join(lines)


# --- the per-key sort ---------------------------------------------------------------------------------

#: equality keys and conditions of one side alone: the per-key sort. Followed by itself, the first two
#: read the same field of either event (one frame, each row a left and a right event), the last one
#: different fields (the stream stacked on itself)
KEYED: list[Callable[[P, P], Any]] = [ONS[0], ONS[1], lambda a, b: a.k == b.v % 4]


@pytest.mark.slow  # the deep tier: the default tier has the plain patterns above
@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_per_key_patterns_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    """The per-key sort against the reference: ties of partners, of left events and of both, null
    keys, events failing their own side's condition, a stream followed by itself half the time."""
    lsource, lshape, litems, lq = data.draw(side("left"), label="left")
    rsource, rshape, ritems, rq = data.draw(side("right"), label="right")
    if data.draw(st.booleans(), label="self"):
        rq = lq
    on = KEYED[data.draw(st.integers(0, len(KEYED) - 1), label="on")]
    within = data.draw(st.one_of(st.none(), st.integers(1, 20)), label="within")
    if data.draw(st.booleans(), label="not followed"):
        q = lq.not_followed_by(rq, on, us(within or 7))
    else:
        q = lq.followed_by(rq, on, pairs, None if within is None else us(within))
    lset, rset = data.draw(side_settings(), label="left settings"), data.draw(side_settings(), label="right settings")
    check(spark, data, q, {"left": (lsource, lshape, litems, lset), "right": (rsource, rshape, ritems, rset)})


def _count(lines: list[str], operator: str) -> int:
    return sum(1 for line in lines if line.lstrip(" :|+-").lstrip("*(0123456789) ").startswith(operator))


PER_KEY = ["followed_by itself", "followed_by", "not_followed_by itself", "not_followed_by"]


@pytest.mark.parametrize("pattern", tiered(PER_KEY, default={"followed_by itself"}))
def test_the_per_key_plans_shuffle_and_sort_once(spark: SparkSession, pattern: str) -> None:
    """The per-key sort's plan: one shuffle and one sort for both windows, each input scanned once,
    and a stream followed by itself not stacked on itself (issue 26's benchmark rows)."""
    left, right = sq.input("left", P, sq.Shape.POINT), sq.input("right", P, sq.Shape.POINT)
    items = [sq.Insert(t, t + 1, P(t % 3, t, "a", None)) for t in range(20)]
    flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
    binder = bind(bind(sq.Binder(spark), left, frame(spark, P, sq.Shape.POINT, items), sq.Shape.POINT, flush),
                  right, frame(spark, P, sq.Shape.POINT, items, seed=1), sq.Shape.POINT, flush)
    other = left if pattern.endswith("itself") else right
    on = ONS[1]  # a nullable key and a condition of each side
    q: sq.Stream[Any] = (left.not_followed_by(other, on, us(5)) if pattern.startswith("not")
                         else left.followed_by(other, on, pairs, us(5)))
    lines = plan_lines(binder.to_dataframe(q))
    shown = "\n".join(lines)
    assert (_count(lines, "Exchange"), _count(lines, "Sort"), _count(lines, "Window")) == (
        1, 1, 1 if pattern.startswith("not") else 2), shown
    assert _count(lines, "Union") == (0 if pattern.endswith("itself") else 1), shown
    assert sum(1 for line in lines if "Scan" in line) == (1 if pattern.endswith("itself") else 2), shown
    assert not [line for line in lines if "Join" in line], shown
