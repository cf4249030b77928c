"""The deep tier's examples lay random inputs side by side in time (``side_by_side``,
tests/support/depth.py): one Spark run checks them all. These tests pin down the packing itself —
what it moves and what it keeps — and that its gaps are wide enough: for the stateless pipelines
of the Spark property tests over inputs with CTI rows, the reference evaluator's run over the
packed input, flushed, is the parts' flushed runs, each moved by its offset; and that the example
counts add up to ``DEPTH`` (five) times the standard counts of inputs."""
from __future__ import annotations

from typing import Any

import attrs

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.time import INFINITY_MICROS, to_micros
from support.depth import DEPTH, deep_runs, examples, spark_default_runs
from support.streams import SPACING, P, build, inputs, laid_side_by_side, pipelines

A, B = P(1, 2, "a", None), P(2, 3, "b", 4)


def test_parts_are_moved_one_spacing_apart_and_joined_in_arrival_order() -> None:
    part = [sq.Insert(0, 5, A), sq.Cti(3), sq.Insert(4, sq.INFINITY, B)]
    assert laid_side_by_side([part, part, part]) == [
        sq.Insert(0, 5, A), sq.Cti(3), sq.Insert(4, sq.INFINITY, B),
        sq.Insert(SPACING, SPACING + 5, A), sq.Cti(SPACING + 3), sq.Insert(SPACING + 4, sq.INFINITY, B),
        sq.Insert(2 * SPACING, 2 * SPACING + 5, A), sq.Cti(2 * SPACING + 3),
        sq.Insert(2 * SPACING + 4, sq.INFINITY, B)]


def test_a_cti_at_infinity_ends_only_the_last_part() -> None:
    # in an earlier part it would make every later part late: it closes its own part instead
    part = [sq.Insert(7, 8, A), sq.Cti(sq.INFINITY), sq.StartEdge(9, B), sq.EndEdge(9, 12, B)]
    assert laid_side_by_side([part, part]) == [
        sq.Insert(7, 8, A), sq.Cti(SPACING // 2), sq.StartEdge(9, B), sq.EndEdge(9, 12, B),
        sq.Insert(SPACING + 7, SPACING + 8, A), sq.Cti(sq.INFINITY),
        sq.StartEdge(SPACING + 9, B), sq.EndEdge(SPACING + 9, SPACING + 12, B)]


def test_several_inputs_are_packed_member_by_member_and_null_times_stay() -> None:
    bad = sq.Insert(None, 2, A)  # type: ignore[arg-type]  # a bad row: a null start
    left, right = [bad], [sq.Cti(1), sq.Insert(3, 4, B)]
    assert laid_side_by_side([{"l": left, "r": right}, {"l": left, "r": right}]) == {
        "l": [bad, attrs.evolve(bad, end=SPACING + 2)],
        "r": [sq.Cti(1), sq.Insert(3, 4, B), sq.Cti(SPACING + 1), sq.Insert(SPACING + 3, SPACING + 4, B)]}
    assert laid_side_by_side([(left, right)]) == (left, right)


def test_one_part_is_the_draw_itself() -> None:
    part = [sq.Insert(0, 1, A), sq.Cti(sq.INFINITY)]
    assert laid_side_by_side([part]) == part


def moved(result: sq.Result[P], by: int) -> list[tuple[int, int, P]]:
    """The released events as (start, end, payload), ``by`` microseconds later (INFINITY stays)."""
    def later(t: Any) -> int:
        micros = to_micros(t)
        return micros if micros == INFINITY_MICROS else micros + by
    return sorted(((later(e.start), later(e.end), e.payload) for e in result.events), key=repr)


def flushed(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    """The input's own CTI rows and the flush, no generated CTI: a generated CTI depends on the
    events before it (the first event of a stream generates none), so a part generates other CTIs
    behind another part than alone. Flushed: before the flush, a later part's CTIs release an
    earlier part's output that the part alone holds back."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10**9, flush=True), policy=policy)


def finite(items: list[Any]) -> list[Any]:
    """``items`` without CTI rows at INFINITY (packed into an earlier part, one becomes a CTI at the
    part's far end: what the part alone does not see)."""
    return [i for i in items if not (isinstance(i, sq.Cti) and to_micros(i.time) == INFINITY_MICROS)]


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_the_parts_of_a_stateless_pipeline_are_independent(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    parts = data.draw(st.lists(inputs(shape).map(finite), min_size=2, max_size=4), label="parts")
    at = flushed(data.draw(st.sampled_from(list(sq.AdvanceTimePolicy)), label="policy"))
    q = build(sq.input("in", P, shape), data.draw(pipelines(), label="ops"))
    together = sq.reference.run(q, {"in": sq.reference.ReferenceInput(laid_side_by_side(parts), at)})
    alone = [row for i, part in enumerate(parts)
             for row in moved(sq.reference.run(q, {"in": sq.reference.ReferenceInput(part, at)}), i * SPACING)]
    assert moved(together, 0) == sorted(alone, key=repr)


def test_both_tiers_check_ten_times_the_standard_count_of_inputs() -> None:
    for parts in (1, 13, 25, 40):
        for n in range(1, 40):
            for least in (1, 2):
                default, runs = spark_default_runs(n, least), deep_runs(n, least, parts)
                assert default + runs * parts >= DEPTH * n
                assert runs == 1 or default + (runs - 1) * parts < DEPTH * n  # no more runs than needed
