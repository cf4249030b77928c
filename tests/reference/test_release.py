"""The release rule and CTI propagation in the reference evaluator
(docs/ctis-and-release.md#stability-and-the-release-rule): which events each output shape releases
at the final output CTI, how
``shift``/``alter_lifetime`` move the CTI while other operators keep it, the sort order of
``Result``, and properties that hold for any input."""
from __future__ import annotations

import dataclasses
import random as random_module
from datetime import datetime, timedelta
from typing import Any, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

import streamql as sq
from support.depth import examples
from streamql.events import InputItem
from streamql.reference import ReferenceInput
from streamql.query.nodes import inputs_of
from streamql.time import TimeLike, from_micros, to_micros

INF = sq.INFINITY
US = timedelta(microseconds=1)
START, END = sq.EdgeKind.START, sq.EdgeKind.END


@dataclasses.dataclass(frozen=True)
class V:
    v: int


@dataclasses.dataclass(frozen=True)
class Tagged:
    tag: Optional[str]
    v: int


def at(micros: int) -> datetime:
    return from_micros(micros)


def as_time(t: TimeLike) -> datetime:
    return from_micros(to_micros(t))


def ev(start: int, end: Optional[int], v: int) -> sq.Event[V]:
    return sq.Event(at(start), INF if end is None else at(end), V(v))


def edge(kind: sq.EdgeKind, time: int, start: int, v: int) -> sq.Edge[V]:
    return sq.Edge(kind, at(time), at(start), V(v))


def pt(start: int, v: int) -> sq.Insert[V]:
    return sq.Insert(start, start + 1, V(v))


def ins(start: int, end: int, v: int) -> sq.Insert[V]:
    return sq.Insert(start, end, V(v))


POINTS = sq.input("points", V, shape=sq.Shape.POINT)
INTERVALS = sq.input("intervals", V, shape=sq.Shape.INTERVAL)
EDGES = sq.input("edges", V, shape=sq.Shape.EDGE)


def run(q: sq.Stream[V], *items: InputItem[Any], advance_time: Optional[sq.AdvanceTimeSettings] = None,
        output: sq.Shape = sq.Shape.INTERVAL) -> sq.Result[V]:
    (name,) = inputs_of(q.node)  # the one input the query reads
    return sq.reference.run(q, {name: ReferenceInput(list(items), advance_time)}, output)


def flush(policy: sq.AdvanceTimePolicy = sq.AdvanceTimePolicy.DROP) -> sq.AdvanceTimeSettings:
    """No generated CTI within these inputs, only the final one at INFINITY."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10_000, flush=True), policy=policy)


# --- CTI propagation -----------------------------------------------------------------------------

TWO_POINTS: list[InputItem[Any]] = [pt(10, 1), pt(20, 2), sq.Cti(25)]


def test_shift_moves_events_and_the_cti() -> None:
    result = run(POINTS.shift(10 * US), *TWO_POINTS)
    # events [20, 21) and [30, 31); the input CTI 25 moves to 35, so both are released
    # (had the CTI stayed at 25, the event at 30 would wait)
    assert result.events == [ev(20, 21, 1), ev(30, 31, 2)]
    assert result.final_cti == at(35)


def test_negative_shift_moves_the_cti_back() -> None:
    result = run(POINTS.shift(-10 * US), *TWO_POINTS)
    # events [0, 1), [10, 11); CTI 25 - 10 = 15
    assert result.events == [ev(0, 1, 1), ev(10, 11, 2)]
    assert result.final_cti == at(15)


def test_alter_lifetime_moves_the_cti_by_its_start_shift() -> None:
    result = run(POINTS.alter_lifetime(5 * US, 100 * US), *TWO_POINTS)
    # [15, 115), [25, 125); CTI 30
    assert result.events == [ev(15, 115, 1), ev(25, 125, 2)]
    assert result.final_cti == at(30)
    same_start = run(POINTS.alter_lifetime(duration=100 * US), *TWO_POINTS)
    # no start shift: CTI unchanged at 25, both starts (10, 20) are before it
    assert same_start.events == [ev(10, 110, 1), ev(20, 120, 2)]
    assert same_start.final_cti == at(25)


def test_shifts_compose() -> None:
    result = run(POINTS.shift(5 * US).shift(-2 * US), *TWO_POINTS)
    # +5 then -2: events at 13 and 23, CTI 28
    assert result.events == [ev(13, 14, 1), ev(23, 24, 2)]
    assert result.final_cti == at(28)


def test_other_operators_keep_the_cti() -> None:
    queries: list[sq.Stream[V]] = [
        POINTS.where(lambda e: e.v > 1),
        POINTS.select(lambda e: V(e.v * 10)),
        POINTS.alter_duration(100 * US),
        POINTS.to_point(),
    ]
    expected = [
        # where v > 1: only the point at 20
        [ev(20, 21, 2)],
        # select: payloads 10, 20
        [ev(10, 11, 10), ev(20, 21, 20)],
        # alter_duration: [10, 110), [20, 120) — ends past the CTI do not matter, starts do
        [ev(10, 110, 1), ev(20, 120, 2)],
        # to_point: unchanged points
        [ev(10, 11, 1), ev(20, 21, 2)],
    ]
    for q, events in zip(queries, expected):
        result = run(q, *TWO_POINTS)
        assert result.events == events
        assert result.final_cti == at(25)


def test_shifting_infinity_and_no_cti() -> None:
    result = run(POINTS.shift(-10 * US), pt(10, 1), advance_time=flush())
    # the final CTI at INFINITY stays INFINITY under any shift
    assert result.events == [ev(0, 1, 1)]
    assert result.final_cti == INF
    # no CTI stays no CTI: nothing is released
    none = run(POINTS.shift(10 * US), pt(10, 1))
    assert none.events == [] and none.final_cti is None


def test_shift_saturates_at_infinity() -> None:
    result = run(INTERVALS.shift(timedelta.max), ins(10, 20, 1), advance_time=flush())
    # a shift past the greatest time moves the event to INFINITY: it no longer exists
    assert result.events == []
    assert result.final_cti == INF


# --- release by output shape -----------------------------------------------------------------------


def test_interval_output_releases_stable_events_that_start_before_the_cti() -> None:
    result = run(INTERVALS, ins(1, 10, 1), ins(4, 6, 2), ins(5, 7, 3), sq.Cti(5))
    # starts 1 and 4 are before 5 (ends may lie after it); 5 is not
    assert result.events == [ev(1, 10, 1), ev(4, 6, 2)]


def test_point_output_of_intervals() -> None:
    result = run(INTERVALS, ins(1, 10, 1), ins(4, 6, 2), ins(5, 7, 3), sq.Cti(5), output=sq.Shape.POINT)
    # each released event becomes [start, start + 1 tick)
    assert result.events == [ev(1, 2, 1), ev(4, 5, 2)]
    assert result.edges == []


def test_edge_output_of_intervals() -> None:
    result = run(INTERVALS, ins(1, 10, 1), ins(4, 6, 2), ins(5, 7, 3), sq.Cti(5), output=sq.Shape.EDGE)
    # START edges for starts before 5; the END edge of a stable event follows its START edge
    # whatever the CTI: [1, 10) ends at 10, [4, 6) at 6; [5, 7) has no START edge yet
    assert result.edges == [edge(START, 1, 1, 1), edge(START, 4, 4, 2), edge(END, 6, 4, 2), edge(END, 10, 1, 1)]
    assert result.events == []


def test_derived_lifetimes_of_open_edge_events() -> None:
    items: list[InputItem[Any]] = [sq.StartEdge(1, V(1)), sq.Cti(5)]
    # the open event [1, INFINITY) is not stable, so not released as an interval ...
    assert run(EDGES, *items).events == []
    # ... but alter_duration fixes the end from the start: [1, 11) is stable
    assert run(EDGES.alter_duration(10 * US), *items).events == [ev(1, 11, 1)]
    assert run(EDGES.alter_lifetime(2 * US, 10 * US), *items).events == [ev(3, 13, 1)]
    assert run(EDGES.to_point(), *items).events == [ev(1, 2, 1)]
    # a shift keeps the end open (INFINITY stays INFINITY): still unreleased
    assert run(EDGES.shift(2 * US), *items).events == []
    edges = run(EDGES.shift(2 * US), *items, output=sq.Shape.EDGE).edges
    assert edges == [edge(START, 3, 3, 1)]


# --- sorting -------------------------------------------------------------------------------------


def test_events_are_sorted_by_start_end_payload() -> None:
    result = run(INTERVALS, ins(5, 9, 2), ins(5, 7, 3), ins(5, 9, 1), ins(1, 20, 0), advance_time=flush())
    assert result.events == [ev(1, 20, 0), ev(5, 7, 3), ev(5, 9, 1), ev(5, 9, 2)]


def test_payload_order_is_field_order_with_nulls_first() -> None:
    tagged = sq.input("tagged", Tagged, shape=sq.Shape.POINT)
    items: list[InputItem[Any]] = [sq.Insert(1, 2, Tagged("b", 0)), sq.Insert(1, 2, Tagged("a", 5)),
                                   sq.Insert(1, 2, Tagged(None, 9)), sq.Insert(1, 2, Tagged("a", 1))]
    result = sq.reference.run(tagged, {"tagged": ReferenceInput(items, flush())})
    assert [e.payload for e in result.events] == [Tagged(None, 9), Tagged("a", 1), Tagged("a", 5), Tagged("b", 0)]


def test_edges_are_sorted_by_time_end_before_start_then_start_and_payload() -> None:
    items: list[InputItem[Any]] = [
        sq.StartEdge(5, V(2)), sq.StartEdge(1, V(1)), sq.StartEdge(3, V(7)), sq.StartEdge(1, V(0)),
        sq.EndEdge(1, 5, V(1)), sq.EndEdge(3, 5, V(7)), sq.EndEdge(1, 5, V(0)), sq.StartEdge(5, V(1)),
    ]
    result = run(EDGES, *items, advance_time=flush(), output=sq.Shape.EDGE)
    # at time 1: the two START edges by payload; 3: START; 5: END edges first (by start, then
    # payload), then START edges by payload; the events at 5 never end: no END edges
    assert result.edges == [
        edge(START, 1, 1, 0), edge(START, 1, 1, 1), edge(START, 3, 3, 7),
        edge(END, 5, 1, 0), edge(END, 5, 1, 1), edge(END, 5, 3, 7),
        edge(START, 5, 5, 1), edge(START, 5, 5, 2),
    ]


# --- properties ---------------------------------------------------------------------------------

policies = st.sampled_from(list(sq.AdvanceTimePolicy))


@st.composite
def interval_items(draw: st.DrawFn) -> list[InputItem[Any]]:
    """Inserts with unique payloads (their position) and explicit CTI rows, times in 0..60."""
    items: list[InputItem[Any]] = []
    for position in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 3)) == 0:
            items.append(sq.Cti(draw(st.integers(0, 60))))
        else:
            start = draw(st.integers(0, 50))
            items.append(ins(start, start + draw(st.integers(1, 10)), position))
    return items


@st.composite
def settings_or_none(draw: st.DrawFn) -> Optional[sq.AdvanceTimeSettings]:
    """No settings half the time; else a delay of -3 to 8 ticks and a CTI every 1 to 4 events or
    every 1 to 20 ticks (its own spread, not ``support.streams.advance_settings``')."""
    if draw(st.booleans()):
        return None
    delay = timedelta(microseconds=draw(st.integers(-3, 8)))
    if draw(st.booleans()):
        generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 4)), delay=delay,
                                              flush=draw(st.booleans()))
    else:
        generation = sq.AdvanceTimeGeneration(every=timedelta(microseconds=draw(st.integers(1, 20))), delay=delay,
                                              flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(policies))


def _ctis_before(items: list[InputItem[Any]]) -> dict[int, int]:
    """For each payload id: the greatest explicit CTI row that arrived before its insert."""
    before: dict[int, int] = {}
    current: Optional[int] = None
    for item in items:
        if isinstance(item, sq.Cti):
            assert isinstance(item.time, int)
            current = item.time if current is None else max(current, item.time)
        elif isinstance(item, sq.Insert) and current is not None:
            before[item.payload.v] = current
    return before


@settings(deadline=None)  # pure Python, but several runs per example
@given(interval_items(), settings_or_none(), st.sampled_from(list(sq.Shape)))
def test_nothing_is_released_at_or_after_the_final_cti(
        items: list[InputItem[Any]], advance_time: Optional[sq.AdvanceTimeSettings], output: sq.Shape) -> None:
    result = run(INTERVALS, *items, advance_time=advance_time, output=output)
    if result.final_cti is None:
        assert result.events == [] and result.edges == []
    for e in result.events:
        assert result.final_cti is not None and e.start < result.final_cti
    for edge_ in result.edges:
        assert result.final_cti is not None and edge_.start < result.final_cti


@settings(deadline=None)  # pure Python, but several runs per example
@given(interval_items(), policies, st.sampled_from([sq.Shape.INTERVAL, sq.Shape.POINT]))
def test_with_flush_every_accepted_event_is_released(
        items: list[InputItem[Any]], policy: sq.AdvanceTimePolicy, output: sq.Shape) -> None:
    result = run(INTERVALS, *items, advance_time=flush(policy), output=output)
    inserted = sum(1 for i in items if isinstance(i, sq.Insert))
    assert result.final_cti == INF
    assert len(result.events) == inserted - result.dropped
    assert result.bad_rows == 0


@settings(deadline=None)  # pure Python, but several runs per example
@given(interval_items(), st.booleans())
def test_drop_never_outputs_an_event_starting_before_a_preceding_cti(
        items: list[InputItem[Any]], generate: bool) -> None:
    generation = sq.AdvanceTimeGeneration(every_events=1, flush=True) if generate else \
        sq.AdvanceTimeGeneration(every_events=10_000, flush=True)
    result = run(INTERVALS, *items, advance_time=sq.AdvanceTimeSettings(generation, policy=sq.AdvanceTimePolicy.DROP))
    inserted = {i.payload.v: i for i in items if isinstance(i, sq.Insert)}
    before = _ctis_before(items)
    assert result.adjusted == 0
    for e in result.events:
        original = inserted[e.payload.v]
        # DROP never changes an event ...
        assert (e.start, e.end) == (as_time(original.start), as_time(original.end))
        # ... and never lets one through that starts before a CTI that arrived before it
        if e.payload.v in before:
            assert e.start >= at(before[e.payload.v])


@settings(deadline=None)  # pure Python, but several runs per example
@given(interval_items())
def test_adjust_only_moves_starts_to_a_cti(items: list[InputItem[Any]]) -> None:
    result = run(INTERVALS, *items, advance_time=flush(sq.AdvanceTimePolicy.ADJUST))
    inserted = {i.payload.v: i for i in items if isinstance(i, sq.Insert)}
    before = _ctis_before(items)
    ctis = {as_time(i.time) for i in items if isinstance(i, sq.Cti)}
    moved = 0
    for e in result.events:
        original = inserted[e.payload.v]
        assert e.end == as_time(original.end)
        if e.start != as_time(original.start):
            moved += 1
            assert e.start in ctis and e.start > as_time(original.start)
        if e.payload.v in before:
            assert e.start >= at(before[e.payload.v])
    assert moved == result.adjusted


@settings(deadline=None)  # pure Python, but several runs per example
@given(interval_items(), settings_or_none(), st.integers(-30, 30))
def test_shift_moves_released_events_and_the_cti(
        items: list[InputItem[Any]], advance_time: Optional[sq.AdvanceTimeSettings], d: int) -> None:
    plain = run(INTERVALS, *items, advance_time=advance_time)
    shifted = run(INTERVALS.shift(d * US), *items, advance_time=advance_time)
    move = d * US
    assert shifted.events == [sq.Event(e.start + move, e.end + move, e.payload) for e in plain.events]
    if plain.final_cti is None or plain.final_cti == INF:
        assert shifted.final_cti == plain.final_cti
    else:
        assert shifted.final_cti == plain.final_cti + move


@settings(max_examples=examples(50), deadline=None)
@given(interval_items(), st.randoms(use_true_random=False), policies)
def test_release_does_not_depend_on_arrival_order_between_ctis(
        items: list[InputItem[Any]], random: random_module.Random, policy: sq.AdvanceTimePolicy) -> None:
    # events between two CTI rows see the same CTI whatever their order: shuffling them within
    # each segment changes neither what is accepted nor what is released
    segments: list[list[InputItem[Any]]] = [[]]
    for item in items:
        if isinstance(item, sq.Cti):
            segments.append([item])
            segments.append([])
        else:
            segments[-1].append(item)
    for segment in segments:
        random.shuffle(segment)
    shuffled = [item for segment in segments for item in segment]
    assert run(INTERVALS, *shuffled, advance_time=flush(policy)) == run(INTERVALS, *items, advance_time=flush(policy))
