"""join, anti_join, clip and union on Spark against the reference evaluator (the specification):
hand-worked examples, then property tests — random pairs of POINT and INTERVAL streams (some
events never end), random predicates (none, equality, equality and a non-equality, non-equi
only, null keys), advance-time settings (DROP/ADJUST, flush or not, CTI rows, imported CTIs),
pipelines before and after (windows included) and every output shape give identical Results."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query.nodes import inputs_of
from support.frames import bind, frame, imported_after_importer
from support.depth import spark_examples
from support.must_release import check_release
from support.streams import P, build, inputs, payloads, pipelines, side_by_side, side_settings, us

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
LEFT, RIGHT = "left", "right"
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))


def at(t: int) -> datetime:
    return EPOCH + timedelta(microseconds=t)


Side = tuple[sq.Stream[Any], sq.Shape, list[Any]]


def run_both(spark: SparkSession, q: sq.Stream[Any], left: Side, right: Side | None,
             settings_: tuple[sq.AdvanceTimeSettings | None, sq.AdvanceTimeSettings | None] = (FLUSH, FLUSH),
             output: sq.Shape = sq.Shape.INTERVAL, *, partitions: int = 2,
             arrival: bool = False, reference_left: list[Any] | None = None) -> tuple[sq.Result[Any], sq.Result[Any]]:
    """The reference's Result and Spark's for ``q`` over the inputs (the right one when given);
    ``reference_left``: the left items in the reference's order, when that is not Spark's (an
    import without arrival columns)."""
    sides = [(LEFT, left, settings_[0], 1)] + ([(RIGHT, right, settings_[1], 2)] if right is not None else [])
    reference_inputs = {name: sq.reference.ReferenceInput(
        reference_left if name == LEFT and reference_left is not None else items, at)
        for name, (_, _, items), at, _ in sides}
    expected = sq.reference.run(q, reference_inputs, output=output)
    check_release(q, reference_inputs, output, expected)  # the reference releases what it must
    binder = sq.Binder(spark)
    for _, (source, shape, items), at, seed in sides:
        df = frame(spark, P, shape, items, partitions=partitions, arrival=arrival, seed=seed)
        binder = bind(binder, source, df, shape, at, arrival=arrival)
    return expected, binder.run(q, output=output)


def p(k: int, v: int = 0, s: str = "a", o: Optional[int] = None) -> P:
    return P(k, v, s, o)


def pairs(l: P, r: P) -> P:
    return P(l.k, l.v * 10 + r.v, l.s + r.s, r.o)


# --- hand-worked examples -----------------------------------------------------------------------

L_IN = sq.input(LEFT, P, sq.Shape.INTERVAL)
R_IN = sq.input(RIGHT, P, sq.Shape.INTERVAL)


def test_join_on_key_is_the_intersection_of_matching_overlapping_lifetimes(spark: SparkSession) -> None:
    left = [sq.Insert(1, 10, p(1, 1)), sq.Insert(5, 8, p(2, 2))]
    right = [sq.Insert(3, 6, p(1, 3)), sq.Insert(7, 12, p(2, 4)), sq.Insert(20, 25, p(1, 5)), sq.Insert(0, 2, p(2, 6))]
    q = L_IN.join(R_IN, lambda l, r: l.k == r.k, pairs)
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), (R_IN, sq.Shape.INTERVAL, right))
    # [1,10) k=1 meets [3,6) k=1: [3,6); [5,8) k=2 meets [7,12) k=2: [7,8); [0,2) k=2 and
    # [20,25) k=1 overlap no event of their key
    assert actual.events == [sq.Event(at(3), at(6), P(1, 13, "aa", None)), sq.Event(at(7), at(8), P(2, 24, "aa", None))]
    assert actual == expected
    assert actual.final_cti == sq.INFINITY


def test_join_on_none_pairs_every_overlap_even_with_an_open_event(spark: SparkSession) -> None:
    left = [sq.Insert(0, sq.INFINITY, p(1, 1)), sq.Insert(40, 41, p(2, 2))]
    right = [sq.Insert(5, 6, p(7, 3)), sq.Insert(30, 50, p(8, 4))]
    q = L_IN.join(R_IN, None, pairs)
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), (R_IN, sq.Shape.INTERVAL, right))
    assert actual.events == [sq.Event(at(5), at(6), P(1, 13, "aa", None)),
                             sq.Event(at(30), at(50), P(1, 14, "aa", None)),
                             sq.Event(at(40), at(41), P(2, 24, "aa", None))]
    assert actual == expected


def test_anti_join_keeps_the_gaps_between_matches(spark: SparkSession) -> None:
    left = [sq.Insert(0, 20, p(1)), sq.Insert(0, 20, p(1)), sq.Insert(2, 4, p(2))]
    right = [sq.Insert(3, 5, p(1)), sq.Insert(4, 8, p(1)), sq.Insert(12, 14, p(1)), sq.Insert(12, 13, p(1)),
             sq.Insert(1, 30, p(3))]
    q = L_IN.anti_join(R_IN, lambda l, r: l.k == r.k)
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), (R_IN, sq.Shape.INTERVAL, right))
    # each of the two identical events becomes [0,3), [8,12), [14,20); [2,4) k=2 has no match
    pieces = [(0, 3), (0, 3), (2, 4), (8, 12), (8, 12), (14, 20), (14, 20)]
    assert [(e.start, e.end) for e in actual.events] == [(at(a), at(b)) for a, b in pieces]
    assert actual == expected


def test_anti_join_piece_ending_at_the_right_cti_is_released_when_its_maker_is_stable(spark: SparkSession) -> None:
    left = [sq.Insert(0, 20, p(1)), sq.Cti(30)]
    right = [sq.Cti(10), sq.Insert(10, 15, p(1))]
    q = L_IN.anti_join(R_IN, None)
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), (R_IN, sq.Shape.INTERVAL, right),
                                (None, None))
    # the output CTI is min(30, 10); [0,10) ends exactly there, at the start of an accepted right
    # event: final. [15,20) starts after the CTI: not released
    assert actual.events == [sq.Event(at(0), at(10), p(1))]
    assert actual.final_cti == at(10)
    assert actual == expected


def test_clip_cuts_at_the_first_matching_start_strictly_after_the_start(spark: SparkSession) -> None:
    left = [sq.Insert(0, 3, p(1)), sq.Insert(5, 20, p(1))]
    right = [sq.Insert(5, 6, p(1)), sq.Insert(7, 8, p(2)), sq.Insert(9, 30, p(1)), sq.Insert(12, 13, p(1))]
    q = L_IN.clip(R_IN, lambda l, r: l.k == r.k)
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), (R_IN, sq.Shape.INTERVAL, right))
    # a start at 5 does not cut [5,20) (not strictly after), k=2 at 7 does not match: cut at 9
    assert actual.events == [sq.Event(at(0), at(3), p(1)), sq.Event(at(5), at(9), p(1))]
    assert actual == expected


def test_union_keeps_duplicates_and_takes_the_least_cti(spark: SparkSession) -> None:
    left = [sq.Insert(1, 4, p(1)), sq.Cti(50)]
    right = [sq.Insert(1, 4, p(1)), sq.Insert(60, 70, p(2)), sq.Cti(40)]
    q = L_IN.union(R_IN)
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), (R_IN, sq.Shape.INTERVAL, right),
                                (None, None))
    assert actual.events == [sq.Event(at(1), at(4), p(1))] * 2
    assert actual.final_cti == at(40)
    assert actual == expected


def test_join_inside_group_apply_pairs_events_of_one_group_only(spark: SparkSession) -> None:
    left = [sq.Insert(0, 10, p(1, 1)), sq.Insert(0, 10, p(2, 2)), sq.Insert(0, 10, p(3, 3, o=1))]
    q = L_IN.group_apply(lambda e: e.k % 2,
                         lambda s: s.join(s.shift(us(5)), None, pairs),
                         lambda key, e: P(e.k, e.v, e.s, key))
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, left), None)
    # group 1 holds k=1 and k=3: four pairs over [5,10); group 0 holds k=2: one pair
    assert sorted((e.payload.k, e.payload.v, e.payload.o) for e in actual.events) == [
        (1, 11, 1), (1, 13, 1), (2, 22, 0), (3, 31, 1), (3, 33, 1)]
    assert actual == expected


# --- property tests -------------------------------------------------------------------------------

Pred = Optional[Callable[[P, P], Any]]
ONS: list[Pred] = [
    None,
    lambda l, r: l.k == r.k,
    # a comparison with a null ``o`` is null, so the pair does not match (mypy rightly objects)
    lambda l, r: (l.k == r.k) & (l.v > r.o),  # type: ignore[operator]
    lambda l, r: l.v > r.v,
    lambda l, r: (r.s == l.s) & (l.k % 2 == r.v % 2),
    lambda l, r: l.o == r.o,
    lambda l, r: (l.k % 3 == r.k % 3) & (l.s != r.s),
    lambda l, r: (l.k + 1 == r.k) | (l.s == r.s),
]
#: clip needs a predicate: ``None`` stands for one that always holds
ALWAYS: Callable[[P, P], Any] = lambda l, r: r.v > -100  # noqa: E731


def snapshot_counts(q: sq.Stream[P]) -> sq.Stream[P]:
    """A snapshot window mapped back to ``P``: events whose heads and ends are not all stable."""
    return q.snapshot_window().select(lambda w: P(w.count(), sq.coalesce(w.sum(lambda e: e.v), 0), "w",
                                                  w.min(lambda e: e.o)))


def tumbling_counts(q: sq.Stream[P]) -> sq.Stream[P]:
    return q.tumbling_window(us(10)).select(lambda w: P(w.count(), sq.coalesce(w.max(lambda e: e.v), -1), "t",
                                                        w.max(lambda e: e.o)))


def binary(op: str, on: Pred, left: sq.Stream[P], right: sq.Stream[P]) -> sq.Stream[P]:
    if op == "join":
        return left.join(right, on, pairs)
    if op == "anti_join":
        return left.anti_join(right, on)
    if op == "clip":
        return left.clip(right, ALWAYS if on is None else on)
    return left.union(right)


@st.composite
def side(draw: st.DrawFn, name: str, unstable: bool) -> tuple[sq.Stream[P], sq.Shape, list[Any], sq.Stream[P]]:
    """An input (its stream, shape and items) and a query over it: a pipeline, and with
    ``unstable`` maybe a snapshot window (events whose heads and ends are not all stable)."""
    # intervals more often than points: two point streams rarely overlap
    shape = draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL, sq.Shape.INTERVAL]))
    source = sq.input(name, P, shape)
    items = draw(side_by_side(inputs(shape, open_ends=True, min_items=4)))
    q = build(source, draw(pipelines())) if draw(st.booleans()) else source
    if unstable and draw(st.integers(0, 2)) == 0:
        q = snapshot_counts(q)
    return source, shape, items, q


@st.composite
def multi_stream_queries(draw: st.DrawFn, left: sq.Stream[P], right: sq.Stream[P], around: bool) -> sq.Stream[P]:
    """One multi-stream operator over ``left`` and ``right``; with ``around`` maybe inside a
    ``group_apply``, chained with another, and followed by a pipeline and a window."""
    ops = ["join", "anti_join", "clip", "union"] + (["group_apply"] if around else [])
    op = draw(st.sampled_from(ops))
    on = ONS[draw(st.integers(0, len(ONS) - 1))]
    if op == "group_apply":
        inner = draw(st.sampled_from(["join", "anti_join", "clip"]))
        shift = us(draw(st.integers(-10, 10)))
        q = left.group_apply(lambda e: e.k % 3,
                             lambda s: binary(inner, on, s, s.shift(shift).where(lambda e: e.v != 2)),
                             lambda key, e: P(e.k, e.v, e.s, key))
    else:
        q = binary(op, on, left, right)
    if not around:
        return q
    if draw(st.integers(0, 3)) == 0:
        # a chain: the result meets the right input once more
        q = binary(draw(st.sampled_from(["join", "anti_join", "clip"])), ONS[draw(st.integers(0, 3))], q, right)
    q = build(q, draw(pipelines()))
    after = draw(st.integers(0, 3))
    if after == 0:
        q = snapshot_counts(q)
    elif after == 1:
        q = tumbling_counts(q)
    return q


def check(spark: SparkSession, data: st.DataObject, around: bool) -> None:
    lsource, lshape, litems, lq = data.draw(side(LEFT, around), label="left")
    rsource, rshape, ritems, rq = data.draw(side(RIGHT, around), label="right")
    q = data.draw(multi_stream_queries(lq, rq, around), label="query")
    note(f"query tree: {q.node!r}")
    lset = data.draw(side_settings(), label="left settings")
    rset = data.draw(side_settings(), label="right settings")
    arrival = False
    reference_litems = litems
    reads_right = RIGHT in inputs_of(q.node)
    if data.draw(st.integers(0, 7), label="import") == 0:
        # the right input also takes the left's CTIs: with arrival columns both share one clock;
        # without, the right's events are taken to arrive before every imported CTI
        # (docs/ctis-and-release.md#the-arrival-clock)
        generation = None if rset is None else rset.generation
        rset = sq.AdvanceTimeSettings(generation, sq.AdvanceTimeImport(LEFT),
                                      sq.AdvanceTimePolicy.DROP if rset is None else rset.policy)
        arrival = data.draw(st.booleans(), label="arrival columns")
        if not arrival and reads_right:
            reference_litems = imported_after_importer(P, lshape, litems, lset, ritems)
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    expected, actual = run_both(spark, q, (lsource, lshape, litems), (rsource, rshape, ritems) if reads_right else None,
                                (lset, rset), output, partitions=data.draw(st.integers(1, 3), label="partitions"),
                                arrival=arrival, reference_left=reference_litems)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    assert actual == expected


#: each example runs two input scans, a bucket aggregate per multi-stream operator and the query:
#: a few seconds on two cores, hence few examples (the whole file stays under four minutes)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                          HealthCheck.data_too_large])


@settings(SETTINGS, max_examples=spark_examples(12))
@given(data=st.data())
def test_multi_stream_operators_on_spark_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    check(spark, data, around=False)


@settings(SETTINGS, max_examples=spark_examples(6))
@given(data=st.data())
def test_multi_stream_operators_among_windows_groups_and_chains_equal_reference(spark: SparkSession,
                                                                               data: st.DataObject) -> None:
    check(spark, data, around=True)


@st.composite
def wide_inputs(draw: st.DrawFn) -> list[Any]:
    """Intervals anywhere from before the epoch to far after it, of lengths from one tick to
    centuries, some never ending: many bucket levels, negative buckets, a horizon far away."""
    items: list[Any] = []
    for _ in range(draw(st.integers(1, 12))):
        start = draw(st.integers(-(2**52), 2**52))
        end: Any = sq.INFINITY if draw(st.integers(0, 5)) == 0 else start + 2 ** draw(st.integers(0, 50)) + draw(
            st.integers(0, 3))
        items.append(sq.Insert(start, end, draw(payloads)))
    return items


@settings(SETTINGS, max_examples=spark_examples(5))
@given(data=st.data())
def test_multi_stream_operators_over_wide_lifetimes_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    litems, ritems = data.draw(side_by_side(wide_inputs()), label="left"), data.draw(side_by_side(wide_inputs()), label="right")
    op = data.draw(st.sampled_from(["join", "anti_join", "clip"]), label="operator")
    q = binary(op, ONS[data.draw(st.integers(0, 1), label="on")], L_IN, R_IN)
    flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=100, flush=True))
    expected, actual = run_both(spark, q, (L_IN, sq.Shape.INTERVAL, litems), (R_IN, sq.Shape.INTERVAL, ritems),
                                (flush, flush))
    assert actual == expected
