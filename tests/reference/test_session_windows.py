"""Hand-worked session windows in the reference evaluator (``support.session_views`` works the page
views out by hand), their CTIs and release, touching lifetimes, events that never end, pieces of
``max_duration``, ``group_apply``, and the errors raised when a session window is built."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput
from streamql.time import shift, to_micros

from support.seeds import INF, every_event
from support.streams import P, inputs
from support.session_views import (ALL_USERS, ALL_USERS_FLUSHED, GAP, PER_USER, PER_USER_FLUSHED, PER_USER_PIECES,
                                   PER_USER_PIECES_FLUSHED, PIECE, VIEWS, VIEWS_IN, View, Visit, m)
from support.depth import examples

FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


def run(q: sq.Stream[Any], items: list[InputItem[Any]], settings: Optional[sq.AdvanceTimeSettings],
        output: sq.Shape = sq.Shape.INTERVAL, name: str = "views") -> sq.Result[Any]:
    return sq.reference.run(q, {name: ReferenceInput(items, settings)}, output=output)


def test_sessions_per_user() -> None:
    result = run(PER_USER, VIEWS, FLUSH)
    assert result.events == PER_USER_FLUSHED
    assert result.final_cti == INF


def test_sessions_cut_into_pieces_of_max_duration() -> None:
    assert run(PER_USER_PIECES, VIEWS, FLUSH).events == PER_USER_PIECES_FLUSHED


def test_ungrouped_sessions_chain_across_users() -> None:
    assert run(ALL_USERS, VIEWS, FLUSH).events == ALL_USERS_FLUSHED


def test_a_session_is_released_once_the_cti_reaches_its_end() -> None:
    # a CTI at every start: the last is 12:20. Every session but ann's last ends by then; the
    # output CTI is the start of that one, 12:20 (the input CTI is not earlier)
    result = run(PER_USER, VIEWS, every_event())
    assert result.events == PER_USER_FLUSHED[:4]
    assert result.final_cti == m(12, 20)


def test_the_output_cti_is_pulled_back_to_the_earliest_open_session() -> None:
    # up to bob's view at 12:10, CTI 12:10: ann's [12:09, 12:14) and bob's [12:07, 12:15) are not
    # stable (a view starting at 12:11 could still join them); the output CTI is 12:07
    result = run(PER_USER, VIEWS[:7], every_event())
    assert result.events == [PER_USER_FLUSHED[0], PER_USER_FLUSHED[1]]
    assert result.final_cti == m(12, 7)
    # a CTI exactly at the end of ann's second session releases it (touching does not merge), not
    # bob's, which ends later
    later = run(PER_USER, [*VIEWS[:7], sq.Cti(m(12, 14))], every_event())
    assert later.final_cti == m(12, 7)
    assert later.events == [PER_USER_FLUSHED[0], PER_USER_FLUSHED[1]]
    at_15 = run(PER_USER, [*VIEWS[:7], sq.Cti(m(12, 15))], every_event())
    assert at_15.events == PER_USER_FLUSHED[:4] and at_15.final_cti == m(12, 15)


def test_pieces_wait_for_their_session() -> None:
    # CTI 12:10: bob's session [12:07, 12:15) is not stable, so neither is its piece [12:07, 12:12)
    # (the rule is the session's, docs/session-windows.md#cti-and-release); ann's pieces of
    # [12:00, 12:09) are released
    result = run(PER_USER_PIECES, VIEWS[:7], every_event())
    assert result.events == PER_USER_PIECES_FLUSHED[:3]
    assert result.final_cti == m(12, 7)


def test_point_and_edge_output() -> None:
    points = run(PER_USER, VIEWS[:7], every_event(), output=sq.Shape.POINT)
    assert [(e.start, e.end - e.start, e.payload) for e in points.events] == [
        (m(12, 0), sq.TICK, Visit("ann", 3, 190)), (m(12, 1), sq.TICK, Visit("bob", 1, 100))]
    edges = run(PER_USER, VIEWS[:7], every_event(), output=sq.Shape.EDGE).edges
    assert [(e.kind, e.time, e.payload.user) for e in edges] == [
        (sq.EdgeKind.START, m(12, 0), "ann"), (sq.EdgeKind.START, m(12, 1), "bob"),
        (sq.EdgeKind.END, m(12, 6), "bob"), (sq.EdgeKind.END, m(12, 9), "ann")]


@dataclass(frozen=True)
class N:
    n: int


TICKS = sq.input("ticks", View, shape=sq.Shape.INTERVAL)


def test_touching_extended_lifetimes_do_not_merge() -> None:
    items: list[InputItem[Any]] = [sq.Insert(0, 2, View("a", 1)), sq.Insert(5, 6, View("a", 1))]

    def sessions(gap: int) -> list[tuple[int, int, N]]:
        q = TICKS.session_window(timedelta(microseconds=gap)).select(lambda w: N(w.count()))
        return [(to_micros(e.start), to_micros(e.end), e.payload) for e in run(q, items, FLUSH, name="ticks").events]

    # [0, 2) reaches 2 + 3 = 5, where the next view starts: two sessions; with a gap of 4, one
    assert sessions(3) == [(0, 5, N(1)), (5, 9, N(1))]
    assert sessions(4) == [(0, 10, N(2))]


def test_a_session_with_an_event_that_never_ends() -> None:
    q = VIEWS_IN.session_window(GAP).select(lambda w: N(w.count()))
    items: list[InputItem[Any]] = [sq.Insert(m(12, 0), m(12, 1), View("a", 1)),
                                   sq.Insert(m(12, 2), INF, View("b", 1)), sq.Insert(m(12, 30), m(12, 31), View("c", 1))]
    # while the CTI is finite the session never becomes stable: nothing is released and the output
    # CTI stays at its start
    finite = run(q, items, every_event())
    assert finite.events == [] and finite.final_cti == m(12, 0)
    # with the final CTI at INFINITY the event never ends: one session for ever
    assert run(q, items, FLUSH).events == [sq.Event(m(12, 0), INF, N(3))]
    # cut into pieces of 20 minutes: the pieces that hold starts; the last ends 20 minutes after its start
    pieces = VIEWS_IN.session_window(GAP, max_duration=timedelta(minutes=20)).select(lambda w: N(w.count()))
    assert run(pieces, items, FLUSH).events == [sq.Event(m(12, 0), m(12, 20), N(2)),
                                                sq.Event(m(12, 20), m(12, 40), N(1))]


def test_members_are_clipped_to_their_piece() -> None:
    @dataclass(frozen=True)
    class Span:
        first: Optional[int]

    class Minutes(sq.UserAggregate[int, int, int]):
        result_type = int

        def zero(self) -> int:
            return 0

        def add(self, acc: int, value: int, start: datetime, end: datetime) -> int:
            return acc + (end - start) // timedelta(minutes=1)

        def result(self, acc: int) -> int:
            return acc

    q = VIEWS_IN.session_window(GAP, max_duration=timedelta(minutes=2)).select(
        lambda w: Span(w.aggregate(Minutes(), lambda e: e.seconds)))
    # one view [12:00, 12:05): its session [12:00, 12:08) has one piece, [12:00, 12:02): the view
    # counts for the 2 minutes inside it
    result = run(q, [sq.Insert(m(12, 0), m(12, 5), View("a", 1))], FLUSH)
    assert result.events == [sq.Event(m(12, 0), m(12, 2), Span(2))]


def test_sessions_inside_group_apply() -> None:
    q = VIEWS_IN.group_apply(lambda e: e.user, lambda s: s.session_window(GAP).select(lambda w: N(w.count())),
                             lambda user, n: Visit(user, n.n, 0))
    result = run(q, VIEWS, FLUSH)
    assert [(e.start, e.end, e.payload.user, e.payload.views) for e in result.events] == [
        (e.start, e.end, e.payload.user, e.payload.views) for e in PER_USER_FLUSHED]


@pytest.mark.parametrize("gap, max_duration, message", [
    (timedelta(0), None, "gap must be positive"),
    (-GAP, None, "gap must be positive"),
    (3, None, "gap must be a timedelta"),
    (GAP, timedelta(0), "max_duration must be positive"),
    (GAP, 60, "max_duration must be a timedelta"),
])
def test_invalid_session_windows_are_rejected_when_built(gap: Any, max_duration: Any, message: str) -> None:
    with pytest.raises(sq.StreamqlError, match=message):
        VIEWS_IN.session_window(gap, max_duration)
    with pytest.raises(sq.StreamqlError, match=message):
        VIEWS_IN.group_by(lambda e: e.user).session_window(gap, max_duration)


def test_explain_names_the_session_window_and_its_cti_rule() -> None:
    assert PER_USER_PIECES.explain().splitlines()[:2] == [
        "group_by(e.user).session_window(0:03:00, max_duration=0:05:00).select(Visit(user=key, "
        "views=w.count(), seconds=w.sum(e.seconds))) -> Visit",
        "│   CTI: the start of the earliest session not yet stable, or the input CTI if earlier",
    ]


# --- the sweep against the definition ------------------------------------------------------------

@dataclass(frozen=True)
class Piece:
    n: int
    low: Optional[int]


def by_definition(items: list[Any], gap: int, max_duration: Optional[int]) -> list[tuple[int, int, Piece]]:
    """The sessions of the events of ``items`` (all accepted: no CTI before the end) straight from
    docs/session-windows.md: events whose extended lifetimes overlap are joined, transitively; each set is a session
    over [least start, greatest extended end), cut into pieces of ``max_duration`` from its start."""
    events = [(to_micros(i.start), to_micros(i.end), i.payload) for i in items if isinstance(i, sq.Insert)]
    group = list(range(len(events)))

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for i, (s1, e1, _) in enumerate(events):
        for j, (s2, e2, _) in enumerate(events):
            if s1 < shift(e2, gap) and s2 < shift(e1, gap):  # half-open: touching does not overlap
                group[root(i)] = root(j)
    found = []
    for members in ({r: [e for k, e in enumerate(events) if root(k) == r] for r in map(root, range(len(events)))}
                    .values()):
        start, end = min(s for s, _, _ in members), max(shift(e, gap) for _, e, _ in members)
        if max_duration is None:
            found.append((start, end, Piece(len(members), min(p.v for _, _, p in members))))
            continue
        for k in sorted({(s - start) // max_duration for s, _, _ in members}):
            inside = [p for s, _, p in members if (s - start) // max_duration == k]
            piece = start + k * max_duration
            found.append((piece, min(piece + max_duration, end), Piece(len(inside), min(p.v for p in inside))))
    return sorted(found, key=lambda f: (f[0], f[1], f[2].n, f[2].low))


@settings(deadline=None, max_examples=examples(200))
@given(data=st.data())
def test_the_sweep_forms_the_sessions_of_the_definition(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = [i for i in data.draw(inputs(shape), label="items") if isinstance(i, sq.Insert)]
    gap = data.draw(st.integers(1, 30), label="gap")
    max_duration = data.draw(st.one_of(st.none(), st.integers(1, 40)), label="max_duration")
    source = sq.input("in", P, shape)
    q = source.session_window(timedelta(microseconds=gap),
                              None if max_duration is None else timedelta(microseconds=max_duration)).select(
        lambda w: Piece(w.count(), w.min(lambda e: e.v)))
    result = sq.reference.run(q, {"in": ReferenceInput(items, FLUSH)})
    assert [(to_micros(e.start), to_micros(e.end), e.payload) for e in result.events] == \
        by_definition(items, gap, max_duration)
