"""``as_of_join`` and ``to_signal`` in the reference evaluator: the hand-worked cases of
``support/as_of_cases.py`` (every output shape worked out there, the final CTI), a few more
examples, and a property test that what they
release is never withdrawn (docs/ctis-and-release.md#stability-and-the-release-rule) and that they
release what they must (``support.must_release``)
over inputs crowded with ties, late events and CTIs. Their meaning on random inputs, against
definitions by brute force: tests/reference/test_brute_force.py. (Building
the queries, their errors and ``explain``: tests/query/test_as_of.py.)"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Hashable, Mapping

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.reference import ReferenceInput
from streamql.time import INFINITY_MICROS, from_micros
from support.as_of_cases import CASES, FLUSH, Case, Pair, Tick, point, us
from support.streams import P, build, crowded_inputs, edge_items, pipelines
from support.depth import examples
from support.must_release import check_flushed_shapes, check_release

INPUTS: dict[str, sq.Stream[Tick]] = {}


def streams(case: Case) -> dict[str, sq.Stream[Tick]]:
    return {name: sq.input(name, Tick, side.shape) for name, side in case.sides.items()}


def run(case: Case, output: sq.Shape) -> sq.Result[Any]:
    return sq.reference.run(case.query(streams(case)), {
        name: ReferenceInput(side.items, side.settings) for name, side in case.sides.items()}, output)


def at(t: int | None) -> Any:
    return sq.INFINITY if t is None else from_micros(t)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hand_worked_case(case: Case) -> None:
    result = run(case, sq.Shape.INTERVAL)
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (at(s), at(e), p) for s, e, p in case.interval]
    assert result.final_cti == (None if case.final_cti is None else from_micros(case.final_cti))
    if case.points is not None:
        assert [(e.start, e.payload) for e in run(case, sq.Shape.POINT).events] == [
            (at(s), p) for s, p in case.points]
    if case.edges is not None:
        assert [(e.kind, e.time, e.start, e.payload) for e in run(case, sq.Shape.EDGE).edges] == [
            (k, at(t), at(s), p) for k, t, s, p in case.edges]


def test_the_cases_cover_ties_within_no_partner_and_open_ends() -> None:
    names = {c.name for c in CASES}
    assert {"latest_at_or_before_ties_and_no_partner", "within_one_tick", "signal_per_key_with_a_tie",
            "signal_end_at_the_cti_made_by_an_unstable_start"} <= names
    # the cases release something, and hold something back
    assert any(c.interval for c in CASES) and any(not c.interval for c in CASES)


# --- more examples ---------------------------------------------------------------------------------

TRADES = sq.input("left", Tick, sq.Shape.POINT)
QUOTES = sq.input("right", Tick, sq.Shape.POINT)


@dataclass(frozen=True)
class Keyed:
    sym: str
    venue: int
    px: int


def test_two_equality_keys_look_up_the_latest_per_pair_of_keys() -> None:
    left, right = sq.input("left", Keyed), sq.input("right", Keyed)
    q = left.as_of_join(right, lambda l, r: (l.sym == r.sym) & (r.venue == l.venue),
                        lambda l, r: Pair(l.sym, l.px, r.px))
    trades = [sq.Insert(10, 11, Keyed("a", 1, 1)), sq.Insert(10, 11, Keyed("a", 2, 2))]
    quotes = [sq.Insert(3, 4, Keyed("a", 2, 20)), sq.Insert(5, 6, Keyed("a", 1, 10)), sq.Insert(7, 8, Keyed("b", 2, 30))]
    result = sq.reference.run(q, {"left": ReferenceInput(trades, FLUSH), "right": ReferenceInput(quotes, FLUSH)})
    assert [(e.start, e.payload) for e in result.events] == [(from_micros(10), Pair("a", 1, 10)),
                                                            (from_micros(10), Pair("a", 2, 20))]


def test_identical_events_on_both_sides_give_every_pair() -> None:
    q = TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, lambda l, r: Pair(l.sym, l.px, r.px))
    trades = [point(10, "a", 1), point(10, "a", 1)]
    quotes = [point(4, "a", 7), point(4, "a", 7), point(2, "a", 6)]
    result = sq.reference.run(q, {"left": ReferenceInput(trades, FLUSH), "right": ReferenceInput(quotes, FLUSH)})
    assert [e.payload for e in result.events] == [Pair("a", 1, 7)] * 4


def test_a_signal_then_an_as_of_join_against_it() -> None:
    """The as-of join of a trade sees the quote its signal holds at the trade's start: a join with
    the signal gives the same pairs (the signal's lifetimes tile the timeline per key)."""
    signal = QUOTES.to_signal(lambda q: q.sym)
    joined = TRADES.join(signal, lambda t, q: t.sym == q.sym, lambda t, q: Pair(t.sym, t.px, q.px))
    as_of = TRADES.as_of_join(QUOTES, lambda t, q: t.sym == q.sym, lambda t, q: Pair(t.sym, t.px, q.px))
    trades = [point(t, "a" if t % 3 else "b", t) for t in range(0, 40, 2)]
    quotes = [point(t, "a" if t % 2 else "b", 100 + t) for t in range(1, 40, 5)]
    inputs = {"left": ReferenceInput(trades, FLUSH), "right": ReferenceInput(quotes, FLUSH)}
    expected = sq.reference.run(as_of, inputs).events
    assert len(expected) > 5
    # a trade at a quote's start meets that quote in both (a point at s overlaps [s, ...))
    assert [(e.start, e.payload) for e in sq.reference.run(joined, inputs).events] == [
        (e.start, e.payload) for e in expected]


def test_the_output_cti_is_the_least_of_the_inputs() -> None:
    q = TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, lambda l, r: Pair(l.sym, l.px, r.px))
    result = sq.reference.run(q, {"left": ReferenceInput([sq.Cti(30)]), "right": ReferenceInput([sq.Cti(20)])})
    assert result.final_cti == from_micros(20)
    signal = QUOTES.to_signal(lambda q: q.px)
    assert sq.reference.run(signal, {"right": ReferenceInput([sq.Cti(20)])}).final_cti == from_micros(20)


# --- released output is final --------------------------------------------------------------------


def released(result: sq.Result[Any], output: sq.Shape) -> Counter[Hashable]:
    if output is sq.Shape.EDGE:
        return Counter((e.kind, e.time, e.start, e.payload) for e in result.edges)
    return Counter((e.start, e.end, e.payload) for e in result.events)


def check_prefixes(q: sq.Stream[Any], inputs: Mapping[str, ReferenceInput[Any]], output: sq.Shape) -> int:
    """The reference over every arrival prefix of the inputs, then over all of them, ended: nothing
    released is withdrawn, and each run releases what it must (``support.must_release``: all that
    the same run, flushed, holds before its output CTI). Returns how many were released in the end."""
    note(f"query tree: {q.node!r}")
    length = max(len(i.events) for i in inputs.values())
    before: Counter[Hashable] = Counter()
    for count in range(length + 2):
        ended = count > length
        run_inputs = {
            name: i if ended else ReferenceInput(i.events[:count], i.advance_time and i.advance_time.without_flush(),
                                                 i.bad_rows)
            for name, i in inputs.items()}
        result = sq.reference.run(q, run_inputs, output)
        check_release(q, run_inputs, output, result)
        now = released(result, output)
        assert not before - now, f"withdrawn after {count} positions: {before - now}"
        before = now
    check_flushed_shapes(q, inputs)
    return sum(before.values())


@st.composite
def source(draw: st.DrawFn, name: str) -> tuple[sq.Stream[P], list[Any]]:
    """An input crowded with equal starts (or of edges), maybe through a pipeline or an operator
    whose events have unstable starts (a snapshot window, keep_last)."""
    shape = draw(st.sampled_from(list(sq.Shape)))
    stream = sq.input(name, P, shape)
    items = draw(edge_items()) if shape is sq.Shape.EDGE else draw(crowded_inputs(shape))
    q: sq.Stream[P] = build(stream, draw(pipelines())) if draw(st.booleans()) else stream
    after = draw(st.integers(0, 3))
    if after == 0:
        q = q.snapshot_window().select(lambda w: P(w.count() % 3, w.count(), "w", None))
    elif after == 1:
        q = q.keep_last(2)
    return q, items


@st.composite
def settings_(draw: st.DrawFn) -> sq.AdvanceTimeSettings:
    generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 4)), delay=us(draw(st.integers(-1, 3))),
                                          flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


AS_OF_ONS = [lambda l, r: l.k == r.k, lambda l, r: (l.k % 2 == r.k % 2) & (l.v >= r.v),
             lambda l, r: (r.o == l.o) & (r.v != 4)]


@settings(deadline=None, max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_as_of_joins_and_signals_never_withdraw(data: st.DataObject) -> None:
    left, litems = data.draw(source("left"), label="left")
    if data.draw(st.booleans(), label="as_of_join"):
        right, ritems = data.draw(source("right"), label="right")
        within = data.draw(st.one_of(st.none(), st.integers(0, 5)), label="within")
        q = left.as_of_join(right, AS_OF_ONS[data.draw(st.integers(0, 2), label="on")],
                            lambda l, r: P(l.k, r.v, l.s, r.o), None if within is None else us(within))
        inputs = {"left": ReferenceInput(litems, data.draw(settings_(), label="left settings"), "drop"),
                  "right": ReferenceInput(ritems, data.draw(settings_(), label="right settings"), "drop")}
    else:
        q = left.to_signal(data.draw(st.sampled_from([lambda e: e.k % 2, lambda e: e.o, lambda e: e.s])))
        inputs = {"left": ReferenceInput(litems, data.draw(settings_(), label="settings"), "drop")}
    if data.draw(st.booleans(), label="snapshot after"):
        # a downstream snapshot window: its boundaries at the CTI rely on the flags of these events
        q = q.snapshot_window().select(lambda w: P(w.count(), sq.coalesce(w.sum(lambda e: e.v), 0), "s", None))
    check_prefixes(q, inputs, data.draw(st.sampled_from(list(sq.Shape)), label="output"))
