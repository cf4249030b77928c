"""Property tests for each group's own CTI inside ``group_apply`` (issue 23, item 4.2): a count or
session window inside the sub-query propagates its group's CTI, and the operators after it there —
a snapshot window, ``keep_last``, ``length_batch``, a pipeline, a second window, ``union``, ``join``,
``anti_join``, ``clip``, ``as_of_join``, ``to_signal``, ``followed_by``, ``not_followed_by`` (issue
26), a nested ``group_apply`` — release what the reference (which runs the sub-query once per
group) releases; after ``group_apply`` an event keeps its group's bound through a union and a join
(item 4.3). Random inputs, settings, queries and output shapes, on Spark in one batch and in
micro-batches, equal to the reference."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.frames import bind, frame
from support.must_release import check_release
from support.incremental import StreamInput, cuts, expected_after, flushing, run_in_steps
from support.depth import spark_examples
from support.streams import P, SPARK_EXAMPLES, advance_settings, crowded_payloads, inputs, side_by_side, us


#: the multi-stream operators (and ``to_signal``) after the window in the sub-query (issue 23, item
#: 4: each takes its group's CTIs)
#: the patterns after the window (issue 26: each takes its group's CTIs), the window's output on either side
PATTERNS = ["followed_by", "followed_by by", "self followed_by", "not_followed_by", "not_followed_by by"]
TWO_INPUTS = ["union", "join", "self join", "anti_join", "anti_join by", "clip", "clip by", "as_of", "as_of by",
              "to_signal", *PATTERNS]


def two_inputs(draw: st.DrawFn, after: str, w: sq.Stream[P], g: sq.Stream[P],
               counted: Callable[[sq.Stream[P]], sq.Stream[P]]) -> sq.Stream[P]:
    """``after`` of the window's output ``w`` and the group's stream ``g`` (or ``w`` itself), then
    maybe a snapshot window (whose stability reads the operator's per-group CTI)."""
    other = g.where(lambda e: e.k % 3 != 0) if draw(st.booleans(), label="other filtered") else g

    def pair(l: P, r: P) -> P:
        return P(l.k, r.v, l.s, r.o)

    def pattern_on() -> Callable[[P, P], bool]:
        # an equality key (the per-key sort, or pairs with all_matches), a condition of both events
        # and none (pairs)
        on = draw(st.sampled_from(["key", "both", "none"]), label="pattern on")
        if on == "key":
            return lambda l, r: l.k % 3 == r.k % 3
        if on == "both":
            return lambda l, r: l.k <= r.k
        return lambda l, r: True

    if after == "union":
        out = w.union(other)
    elif after == "join":
        out = w.join(other, None if draw(st.booleans(), label="no on") else (lambda l, r: l.k <= r.k % 4), pair)
    elif after == "self join":
        out = w.join(w, lambda l, r: l.k >= r.k, pair)
    elif after == "anti_join":
        out = w.anti_join(other, None)
    elif after == "anti_join by":
        out = other.anti_join(w, lambda l, r: l.k % 3 != r.k)
    elif after == "clip":
        out = w.clip(other, lambda l, r: l.k != r.k)
    elif after == "clip by":
        out = other.keep_last(2).clip(w, lambda l, r: l.v != r.k)
    elif after == "as_of":
        out = w.as_of_join(other, lambda l, r: l.k == r.k % 3, pair)
    elif after == "as_of by":
        out = other.as_of_join(w, lambda l, r: l.k % 3 == r.k, pair)
    elif after in ("followed_by", "followed_by by"):
        within = draw(st.none() | st.integers(1, 12).map(us), label="within")
        every = draw(st.booleans(), label="all matches")
        left, right = (w, other) if after == "followed_by" else (other, w)
        out = left.followed_by(right, pattern_on(), pair, within=within, all_matches=every)
    elif after == "self followed_by":
        # a stream followed by itself by a key of either event (the per-key sort of one input)
        out = w.followed_by(w, lambda l, r: l.k == r.k, pair, within=draw(st.none() | st.just(us(6)), label="within"))
    elif after in ("not_followed_by", "not_followed_by by"):
        left, right = (w, other) if after == "not_followed_by" else (other, w)
        out = left.not_followed_by(right, pattern_on(), us(draw(st.integers(1, 12), label="within")))
    else:
        out = w.to_signal(lambda e: e.k % 2)
    if after in PATTERNS:
        # a match or absence is a point: what reads its stability and its group's CTI is an
        # operator whose ends are the next starts, or a snapshot of lengthened points
        then = draw(st.sampled_from(["keep_last", "lengthened snapshot", "nothing"]), label="then")
        if then == "keep_last":
            return out.keep_last(1)
        if then == "lengthened snapshot":
            return counted(out.alter_duration(us(draw(st.integers(2, 12), label="duration"))))
        return out
    return counted(out) if draw(st.booleans(), label="then snapshot") else out


@st.composite
def group_queries(draw: st.DrawFn, source: sq.Stream[P], afters: list[str] | None = None) -> sq.Stream[Any]:
    window = draw(st.sampled_from(["count", "session", "count nested"]), label="window")
    n = draw(st.integers(1, 3), label="n")
    gap = us(draw(st.integers(1, 15), label="gap"))
    after = draw(st.sampled_from(afters or ["snapshot", "keep_last", "length_batch", "where snapshot",
                                            "snapshot keep_last", "hopping", "count again", "session again",
                                            "nothing", "nested snapshot", "nested then snapshot",
                                            *TWO_INPUTS]), label="after")

    def sub(g: sq.Stream[P]) -> sq.Stream[P]:
        if window == "count":
            w = g.count_window(n).select(lambda w: P(w.count(), w.count() * 2, "c", w.max(lambda e: e.o)))
        elif window == "count nested":
            # in a nested group_apply: its groups' CTIs reach the outer group
            w = g.group_apply(lambda e: e.v % 2, lambda h: h.count_window(n).select(
                lambda w: P(w.count(), w.count() * 2, "c", w.max(lambda e: e.o))), lambda key, e: e)
        else:
            w = g.session_window(gap).select(lambda w: P(w.count(), w.count() * 3, "s", w.min(lambda e: e.o)))
        def counted(x: sq.Stream[P]) -> sq.Stream[P]:
            return x.snapshot_window().select(lambda w: P(w.count(), w.count(), "n", None))

        if after == "snapshot":
            return counted(w)
        if after == "keep_last":
            return w.keep_last(n)
        if after == "length_batch":
            return w.length_batch(n)
        if after == "where snapshot":
            return counted(w.where(lambda e: e.k > 1))
        if after == "snapshot keep_last":
            return counted(w).keep_last(1)
        if after == "hopping":
            return w.tumbling_window(us(7)).select(lambda w: P(w.count(), 0, "h", None))
        if after == "count again":
            return w.count_window(2).select(lambda w: P(w.count(), 1, "cc", None))
        if after == "session again":
            return w.alter_duration(us(2)).session_window(us(4)).select(lambda w: P(w.count(), 1, "ss", None))
        if after == "nested snapshot":
            return w.group_apply(lambda e: e.k % 2, counted, lambda key, e: e)
        if after == "nested then snapshot":
            return counted(w.group_apply(lambda e: e.v % 2, lambda h: h.where(lambda e: e.k > 0), lambda key, e: e))
        if after in TWO_INPUTS:
            return two_inputs(draw, after, w, g, counted)
        return w

    q = source.group_apply(lambda e: e.k % 2, sub, lambda key, e: P(key * 10 + e.k, e.v, e.s, e.o))
    if draw(st.booleans(), label="union and join after"):
        # the group's bound on an open end, through a union with a lesser CTI and a join
        q = q.union(source.keep_last(2)).join(source, lambda l, r: l.k % 3 == r.k % 3,
                                               lambda l, r: P(l.k, r.v, l.s, r.o))
    return q


@st.composite
def two_groups_behind(draw: st.DrawFn, shape: sq.Shape) -> list[Any]:
    """8 to 16 events starting in [0, 20] with few payloads (two groups of ``k % 2``), then one CTI
    row in [10, 22] and no flush: the count and session windows leave the groups at different CTIs,
    inside the span of the events, as the hand-worked cases (tests/support/release_cases.py)."""
    items: list[Any] = []
    for _ in range(draw(st.integers(8, 16))):
        start = draw(st.integers(0, 20))
        end = start + (1 if shape is sq.Shape.POINT else draw(st.integers(1, 6)))
        items.append(sq.Insert(start, end, draw(crowded_payloads)))
    return [*items, sq.Cti(draw(st.integers(10, 22)))]


def equal_reference(spark: SparkSession, data: st.DataObject, afters: list[str] | None = None,
                    behind: bool = False) -> None:
    """A random input, settings, output shape and query (``group_queries``, ``afters`` after the
    window): Spark in one batch releases what the reference does, which releases what it must.
    ``behind``: half the inputs are ``two_groups_behind`` (CTI rows only)."""
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    if behind and data.draw(st.booleans(), label="two groups behind"):
        items, at = data.draw(side_by_side(two_groups_behind(shape)), label="items"), None
    else:
        items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
        at = data.draw(advance_settings(), label="settings")
    source = sq.input("in", P, shape)
    q = data.draw(group_queries(source, afters), label="query")
    note(f"query tree: {q.node!r}")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)}, output=output)
    check_release(q, {"in": sq.reference.ReferenceInput(items, at)}, output, expected)  # releases what it must
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    df = frame(spark, P, shape, items, partitions=data.draw(st.integers(1, 3), label="partitions"))
    assert bind(sq.Binder(spark), source, df, shape, at).run(q, output=output) == expected


@settings(SPARK_EXAMPLES, max_examples=spark_examples(8))
@given(data=st.data())
def test_group_ctis_on_spark_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    equal_reference(spark, data)


@pytest.mark.slow  # 2-9 s an example: the default tier draws these operators in the tests above
@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_operators_after_group_windows_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    """The multi-stream operators and ``to_signal`` after a count or session window in the
    sub-query: each group's CTI through them, on Spark as in the reference."""
    equal_reference(spark, data, TWO_INPUTS)


@pytest.mark.slow  # the deep tier (tests/support/depth.py: property tests of micro-batches)
@settings(SPARK_EXAMPLES, max_examples=spark_examples(3, least=1))
@given(data=st.data())
def test_group_ctis_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    q = data.draw(group_queries(source), label="query")
    note(f"query tree: {q.node!r}")
    sides = {"in": StreamInput(source, P, shape, items, data.draw(flushing(), label="settings"))}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    released, _ = run_in_steps(spark, q, sides, data.draw(cuts(len(items)), label="cuts"), output)
    assert released == expected_after(q, sides, len(items), True, output)


@pytest.mark.slow  # 2-9 s an example: the default tier draws the patterns in the tests above
@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_patterns_after_group_windows_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    """``followed_by`` and ``not_followed_by`` after a count or session window in the sub-query,
    the window's output left or right, keyed or not, with or without ``within``: each group's right
    CTI decides stability and each group gets its own output CTI, on Spark as in the reference."""
    equal_reference(spark, data, PATTERNS, behind=True)


@pytest.mark.slow  # 3-9 s an example
@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_patterns_read_their_groups_right_cti(spark: SparkSession, data: st.DataObject) -> None:
    """The hand-worked pattern cases' shape drawn at random (tests/support/release_cases.py): the
    group's events followed (or not) by its count windows, then ``keep_last(1)``, whose ends — the
    next match's or absence's start — are final only when that match's group's right CTI (not the
    least over the groups) reaches it; on the inputs ``two_groups_behind`` (about one in six
    examples has such an end, which the least CTI did not release)."""
    items = data.draw(side_by_side(two_groups_behind(sq.Shape.POINT)), label="items")
    source = sq.input("in", P, sq.Shape.POINT)
    pattern = data.draw(st.sampled_from(["followed_by", "followed_by key", "not_followed_by",
                                         "not_followed_by key"]), label="pattern")
    within = us(data.draw(st.integers(1, 6), label="within"))

    def sub(g: sq.Stream[P]) -> sq.Stream[P]:
        w = g.count_window(2).select(lambda w: P(w.count(), w.count() * 2, "c", w.max(lambda e: e.o)))
        # "key": the per-key sort (the windows' k is 2), else the pairs
        on: Callable[[P, P], bool] = ((lambda l, r: l.k % 2 == r.k % 2) if pattern.endswith("key")
                                     else (lambda l, r: True))
        if pattern.startswith("followed_by"):
            out = g.followed_by(w, on, lambda l, r: P(l.k, r.v, l.s, r.o),
                                within=data.draw(st.none() | st.just(within), label="followed within"))
        else:
            out = g.not_followed_by(w, on, within)
        return out.keep_last(1)

    q = source.group_apply(lambda e: e.k % 2, sub, lambda key, e: e)
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, None)}, output=output)
    event(f"released {'some' if expected.events or expected.edges else 'none'}")
    df = frame(spark, P, sq.Shape.POINT, items, partitions=data.draw(st.integers(1, 3), label="partitions"))
    assert bind(sq.Binder(spark), source, df, sq.Shape.POINT, None).run(q, output=output) == expected
