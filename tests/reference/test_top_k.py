"""Top-k per window in the reference evaluator: the hand-worked cases (support/top_k_cases.py), the
errors raised when a top_k query is built, and a property test against a brute-force definition —
each window's members gathered by a user-defined aggregate of the same window, then sorted and
ranked in plain Python — over every window kind, grouped and not, every output shape."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.reference import ReferenceInput

from support.depth import examples
from support.streams import cti_row, us
from support.top_k_cases import CASES, POINTS, READINGS, Case, Reading, Top, top


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hand_worked_cases(case: Case) -> None:
    result = sq.reference.run(case.query, {case.input: ReferenceInput(case.items, case.settings)})
    assert sorted(result.events, key=repr) == sorted(case.events(), key=repr)
    assert result.final_cti == case.final_cti


def test_an_output_event_is_released_with_its_window() -> None:
    """Point and edge output follow the window: a snapshot interval's top events have its start."""
    case = CASES[0]
    result = sq.reference.run(case.query, {case.input: ReferenceInput(case.items, case.settings)},
                              output=sq.Shape.EDGE)
    starts = [e for e in result.edges if e.kind is sq.EdgeKind.START]
    assert sorted((e.start, repr(e.payload)) for e in starts) == sorted((s, repr(p)) for s, _, p in case.expected)


@pytest.mark.parametrize("k", [0, -1, True, 1.5, "3", None])
def test_k_must_be_a_positive_int(k: Any) -> None:
    with pytest.raises(sq.ExpressionError, match=r"top_k: k must be an int of at least 1"):
        READINGS.snapshot_window().top_k(k, lambda e: e.kwh, top)


def test_by_must_give_ordered_values() -> None:
    @dataclass(frozen=True)
    class Nested:
        inner: Reading

    nested = sq.input("nested", Nested)
    with pytest.raises(sq.ExpressionError, match=r"top_k: by must give ordered values.*Reading"):
        nested.tumbling_window(timedelta(hours=1)).top_k(1, lambda e: e.inner, lambda e, r: Top("x", None, r))
    with pytest.raises(sq.ExpressionError, match=r"top_k's by returned the plain Python value 3"):
        READINGS.snapshot_window().top_k(1, lambda e: 3, top)
    with pytest.raises(sq.ExpressionError, match=r"top_k: by must be a function of the event"):
        READINGS.snapshot_window().top_k(1, "kwh", top)  # type: ignore[arg-type]


def test_select_takes_the_event_and_its_rank_and_builds_a_payload() -> None:
    with pytest.raises(sq.ExpressionError, match=r"top_k's select takes a function of 2 argument\(s\)"):
        READINGS.snapshot_window().top_k(1, lambda e: e.kwh, lambda e: Top(e.meter, e.kwh, 1))  # type: ignore[arg-type,misc]
    with pytest.raises(sq.ExpressionError, match=r"top_k's select must build a payload instance"):
        READINGS.snapshot_window().top_k(1, lambda e: e.kwh, lambda e, rank: rank)  # type: ignore[type-var]
    with pytest.raises(sq.ExpressionError, match=r"top_k: descending must be a bool"):
        READINGS.snapshot_window().top_k(1, lambda e: e.kwh, top, descending=None)  # type: ignore[arg-type]


def test_explain_shows_top_k_and_the_window_rule() -> None:
    q = POINTS.group_by(lambda e: e.region).tumbling_window(timedelta(hours=1)).top_k(
        3, lambda e: e.kwh, top, descending=False)
    lines = q.explain().splitlines()
    assert lines[0] == ("group_by(e.region).tumbling_window(1:00:00).top_k(3, by=e.kwh, "
                        "select=Top(meter=e.meter, kwh=e.kwh, rank=rank), descending=False) -> Top")
    assert lines[1] == "│   CTI: the start of the earliest window not yet stable, or the input CTI if earlier"


# --- against a brute-force definition -----------------------------------------------------------


@dataclass(frozen=True)
class Item:
    id: int
    g: int
    x: Optional[int]


@dataclass(frozen=True)
class Ranked:
    id: int
    rank: int


@dataclass(frozen=True)
class Members:
    ids: str


class Gather(sq.UserAggregate[int, list[int], str]):
    """A window's member ids, comma-separated in increasing order."""

    result_type = str

    def zero(self) -> list[int]:
        return []

    def add(self, acc: list[int], value: int, start: Any, end: Any) -> list[int]:
        return acc + [value]

    def result(self, acc: list[int]) -> str:
        return ",".join(str(i) for i in sorted(acc))


def brute_force_top_k(ids: str, payloads: dict[int, Item], k: int, descending: bool) -> list[Ranked]:
    """Sort the members, nulls last; a member's rank is one more than the position of the first member
    with its value; keep ranks up to ``k``."""
    members = [payloads[int(i)] for i in ids.split(",")]
    present = sorted((m for m in members if m.x is not None), key=lambda m: m.x or 0, reverse=descending)
    ordered = present + [m for m in members if m.x is None]
    values = [m.x for m in ordered]
    ranked = [Ranked(m.id, values.index(m.x) + 1) for m in ordered]
    return [r for r in ranked if r.rank <= k]


ITEMS = sq.input("items", Item, shape=sq.Shape.INTERVAL)


@st.composite
def window_kinds(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["snapshot", "tumbling", "hopping", "count", "session", "session max"]))
    if kind == "tumbling":
        return kind, draw(st.integers(1, 20))
    if kind == "hopping":
        return kind, (draw(st.integers(1, 20)), draw(st.integers(1, 20)))
    if kind == "count":
        return kind, draw(st.integers(1, 4))
    if kind == "session":
        return kind, draw(st.integers(1, 10))
    if kind == "session max":
        return kind, (draw(st.integers(1, 10)), draw(st.integers(1, 15)))
    return kind, None


def windows_of(q: Any, kind: str, arg: Any) -> Any:
    if kind == "tumbling":
        return q.tumbling_window(us(arg))
    if kind == "hopping":
        return q.hopping_window(us(arg[0]), us(arg[1]))
    if kind == "count":
        return q.count_window(arg)
    if kind == "session":
        return q.session_window(us(arg))
    if kind == "session max":
        return q.session_window(us(arg[0]), us(arg[1]))
    return q.snapshot_window()


@st.composite
def item_inputs(draw: st.DrawFn) -> list[Any]:
    """Up to 20 items, about one in eight a CTI row; events with unique ids and values with ties and nulls."""
    items: list[Any] = []
    for i in range(draw(st.integers(0, 20))):
        if draw(st.integers(0, 7)) == 0:
            items.append(cti_row(draw, 80))
            continue
        start = draw(st.integers(0, 60))
        payload = Item(i, draw(st.integers(0, 1)), draw(st.one_of(st.none(), st.integers(0, 4))))
        items.append(sq.Insert(start, start + draw(st.integers(1, 20)), payload))
    return items


@settings(max_examples=examples(200), deadline=None)
@given(items=item_inputs(), kind=window_kinds(), grouped=st.booleans(), k=st.integers(1, 4),
       descending=st.booleans(), output=st.sampled_from(list(sq.Shape)),
       flush=st.booleans(), every=st.integers(1, 4))
def test_reference_equals_brute_force(items: list[Any], kind: tuple[str, Any], grouped: bool, k: int,
                                      descending: bool, output: sq.Shape, flush: bool, every: int) -> None:
    windowed = windows_of(ITEMS.group_by(lambda e: e.g) if grouped else ITEMS, *kind)
    top_k: sq.Stream[Ranked] = windowed.top_k(k, lambda e: e.x, lambda e, rank: Ranked(e.id, rank),
                                               descending=descending)
    gathered: sq.Stream[Members] = windowed.select(lambda w: Members(w.aggregate(Gather(), lambda e: e.id)))
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=every, flush=flush))
    inputs = {"items": ReferenceInput(items, at)}
    payloads = {i.payload.id: i.payload for i in items if isinstance(i, sq.Insert)}
    actual = sq.reference.run(top_k, inputs, output=output)
    windows = sq.reference.run(gathered, inputs, output=output)
    assert actual.final_cti == windows.final_cti
    expected_events = [(e.start, e.end, r) for e in windows.events
                       for r in brute_force_top_k(e.payload.ids, payloads, k, descending)]
    assert sorted((e.start, e.end, e.payload.id, e.payload.rank) for e in actual.events) == \
        sorted((s, t, r.id, r.rank) for s, t, r in expected_events)
    expected_edges = [(e.kind, e.time, e.start, r) for e in windows.edges
                      for r in brute_force_top_k(e.payload.ids, payloads, k, descending)]
    assert sorted((e.kind.value, e.time, e.start, e.payload.id, e.payload.rank) for e in actual.edges) == \
        sorted((kind_.value, time, start, r.id, r.rank) for kind_, time, start, r in expected_edges)
