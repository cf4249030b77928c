"""The live state of ``followed_by`` and ``not_followed_by`` is bounded by ``within``
(docs/patterns.md#live-state): a withdrawal stream followed by itself, and orders not followed by
their payments, run in micro-batches through the incremental step — the state's rows stay a few
``within``s' worth of events however long the run — and random inputs in random micro-batches
release, after every micro-batch, exactly what the reference releases over the input so far, while
the state holds no input event that ends before what the query can still need."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.depth import spark_examples
from support.incremental import StreamInput, cuts, expected_after, flushing, pipeline_floor, run_in_steps
from support.streams import PAIRED_CROWDED, P, SPARK_EXAMPLES, build, crowded_inputs, pipelines, side_by_side, us

STEPS, PER_STEP = 8, 10
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5))
LEFT = sq.input("in", P, sq.Shape.POINT)
RIGHT = sq.input("other", P, sq.Shape.POINT)


def items(offset: int) -> list[Any]:
    # three accounts, an event every 10 us
    return [sq.Insert(10 * i + offset, 10 * i + offset + 1, P(i % 3, i % 11, "s", i % 5))
            for i in range(STEPS * PER_STEP)]


#: a withdrawal followed by another of its account within 40 us (30 us apart: every one matches),
#: and orders not followed by their payment within 25 us (payments 3 us after every other order)
PATTERNS: dict[str, Callable[[], sq.Stream[Any]]] = {
    "followed_by within": lambda: LEFT.followed_by(LEFT, lambda a, b: a.k == b.k,
                                                   lambda a, b: P(a.k, a.v, b.s, b.v), us(40)),
    "not_followed_by": lambda: LEFT.not_followed_by(RIGHT.where(lambda p: p.v % 2 == 0), lambda a, b: a.v == b.v,
                                                    us(25)),
}


@pytest.mark.slow  # 30-60 s each: 9 micro-batches (the deep tier)
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_the_state_stays_bounded_by_within(spark: SparkSession, pattern: str) -> None:
    q = PATTERNS[pattern]()
    sides = {"in": StreamInput(LEFT, P, sq.Shape.POINT, items(0), SETTINGS)}
    if pattern == "not_followed_by":
        sides["other"] = StreamInput(RIGHT, P, sq.Shape.POINT, items(3), SETTINGS)
    sizes: list[int] = []
    released, carried = run_in_steps(spark, q, sides, [PER_STEP * i for i in range(STEPS)], sq.Shape.INTERVAL,
                                     check_every_step=False, sizes=sizes)
    assert released == expected_after(q, sides, STEPS * PER_STEP, True, sq.Shape.INTERVAL)
    assert len(released) > 30
    # within 40 us over events 10 us apart, CTIs every 50 us: a few dozen rows, and none more in the
    # second half of the run than in the first
    assert max(sizes) <= 40, sizes
    assert max(sizes[STEPS // 2:]) <= max(sizes[:STEPS // 2]), sizes
    assert all(i.floor is not None for i in carried.state.inputs.values())


# --- after every micro-batch, on random inputs ---------------------------------------------------

ONS: list[Callable[[P, P], Any]] = [
    lambda a, b: a.k % 3 == b.k % 3,
    lambda a, b: (a.k % 2 == b.k % 2) & (a.v >= b.v),
    lambda a, b: True,
]


@pytest.mark.slow  # 15-40 s an example (micro-batches): the deep tier
@settings(SPARK_EXAMPLES, max_examples=spark_examples(5, least=1))
@given(data=st.data())
def test_patterns_in_micro_batches_equal_reference(spark: SparkSession, data: st.DataObject) -> None:
    """The retention floors of ``followed_by`` (with ``within``: the left input ``f - within``, the
    right one the same or, with ``all_matches``, ``f``) and ``not_followed_by`` (both
    ``f - within - 1``) keep what later micro-batches need and nothing before it."""
    lshape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="left shape")
    left, right = sq.input("left", P, lshape), sq.input("right", P, sq.Shape.POINT)
    litems = data.draw(side_by_side(crowded_inputs(lshape, most=PAIRED_CROWDED)).filter(lambda i: len(i) >= 3),
                       label="left items")
    ritems = data.draw(side_by_side(crowded_inputs(sq.Shape.POINT, most=PAIRED_CROWDED)).filter(lambda i: len(i) >= 3),
                       label="right items")
    ops = data.draw(pipelines(), label="left pipeline")
    lq = build(left, ops)
    same = data.draw(st.integers(0, 3), label="self") == 0
    rq = lq if same else right
    on = ONS[data.draw(st.integers(0, len(ONS) - 1), label="on")]
    kind = data.draw(st.sampled_from(["followed_by", "all_matches", "not_followed_by"]), label="pattern")
    within = data.draw(st.one_of(st.none(), st.integers(1, 8)), label="within")
    bounds: dict[str, Callable[[int], int]] = {}
    if kind == "not_followed_by":
        w = within or 5
        q: sq.Stream[Any] = lq.not_followed_by(rq, on, us(w))
        bounds = {"left": lambda f: pipeline_floor(ops, f - w - 1), "right": lambda f: f - w - 1}
    else:
        q = lq.followed_by(rq, on, lambda a, b: P(a.k, b.v, a.s, b.o), None if within is None else us(within),
                           all_matches=kind == "all_matches")
        if within is not None:
            w = within
            bounds = {"left": lambda f: pipeline_floor(ops, f - w),
                      "right": (lambda f: f) if kind == "all_matches" else (lambda f: f - w)}
    sides = {"left": StreamInput(left, P, lshape, litems, data.draw(flushing(), label="left settings"))}
    if not same:
        sides["right"] = StreamInput(right, P, sq.Shape.POINT, ritems, data.draw(flushing(), label="right settings"))
    bounds = {name: bound for name, bound in bounds.items() if name in sides}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    note(f"query tree: {q.node!r}")
    released, carried = run_in_steps(spark, q, sides, data.draw(cuts(max(len(s.items) for s in sides.values())),
                                                                 label="cuts"), output, state_bounds=bounds)
    event(f"state pruned: {any(i.floor is not None for i in carried.state.inputs.values())}")
    assert released == expected_after(q, sides, max(len(s.items) for s in sides.values()), True, output)
