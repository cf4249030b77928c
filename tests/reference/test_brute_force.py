"""The meaning of as-of joins, signals, session windows, count windows and patterns, by brute force.

Each definition below is the simplest code that can be read against docs/ctis-and-release.md,
docs/as-of-joins.md, docs/session-windows.md, docs/count-windows.md, docs/patterns.md and
docs/decisions.md — all pairs, all candidates, connected components — and shares nothing with
``streamql.reference``:
the accepted events come from a few lines of ingress (CTI rows only, no advance-time settings,
so DROP: an event is accepted when it starts at or after the greatest CTI row before it) and the
lambdas of the queries have plain Python twins (SQL's ``=`` for the as-of keys: a null matches
nothing). The reference evaluator must release

- with every input flushed (a final CTI ``INFINITY``): every event of the definition, and an output
  CTI of ``INFINITY``;
- at the finite CTIs of the CTI rows: exactly the events the release rule makes final there, and
  the output CTI the operator's propagation rule gives.

Every time is an integer number of microseconds."""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Callable, Hashable, Optional, Sequence

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.reference import ReferenceInput
from streamql.time import INFINITY_MICROS, to_micros
from support.depth import examples
from support.must_release import flushed
from support.streams import P, crowded_inputs, crowded_payloads, inputs, us

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

Lifetime = tuple[int, int, Any]  # (start, end, payload)


# --- ingress, by hand --------------------------------------------------------------------------


def accepted(items: Sequence[Any]) -> list[Lifetime]:
    """The events an input with CTI rows and no settings accepts: DROP removes an event that starts
    before the greatest CTI row that arrived before it (docs/ctis-and-release.md#late-events-drop-and-adjust)."""
    cti: int | None = None
    events = []
    for item in items:
        if isinstance(item, sq.Cti):
            cti = to_micros(item.time) if cti is None else max(cti, to_micros(item.time))
        elif cti is None or to_micros(item.start) >= cti:
            events.append((to_micros(item.start), to_micros(item.end), item.payload))
    return events


def cti_of(items: Sequence[Any]) -> int | None:
    """The input's CTI at the end of an unflushed run: its greatest CTI row."""
    return max((to_micros(item.time) for item in items if isinstance(item, sq.Cti)), default=None)


def least(*ctis: int | None) -> int | None:
    """The least of the inputs' CTIs (no CTI at all while one of them has none)."""
    return None if any(c is None for c in ctis) else min(c for c in ctis if c is not None)


def extend(t: int, by: int) -> int:
    """``t + by``, INFINITY staying INFINITY."""
    return INFINITY_MICROS if t == INFINITY_MICROS else t + by


def run(q: sq.Stream[Any], given: dict[str, list[Any]], flush: bool) -> tuple[Counter[Hashable], int | None]:
    """The reference's INTERVAL output in microseconds, and its final CTI."""
    reference_inputs = {name: ReferenceInput(items) for name, items in given.items()}
    result = sq.reference.run(q, flushed(reference_inputs) if flush else reference_inputs)
    events: Counter[Hashable] = Counter((to_micros(e.start), to_micros(e.end), e.payload) for e in result.events)
    return events, None if result.final_cti is None else to_micros(result.final_cti)


def check(q: sq.Stream[Any], given: dict[str, list[Any]], everything: list[Lifetime],
          final: list[Lifetime], cti: int | None) -> None:
    """The flushed run releases ``everything`` with the output CTI INFINITY; the run as given
    releases ``final``, with the output CTI ``cti``."""
    note(f"query tree: {q.node!r}")
    whole, whole_cti = run(q, given, flush=True)
    defined: Counter[Hashable] = Counter(everything)
    assert whole == defined, (
        f"after the flush: missing {defined - whole}, not defined {whole - defined}")
    assert whole_cti == INFINITY_MICROS
    now, now_cti = run(q, given, flush=False)
    assert now_cti == cti, f"output CTI {now_cti}, the propagation rule gives {cti}"
    expected: Counter[Hashable] = Counter(final)
    event(f"defined: {'some' if everything else 'none'}; final at a finite CTI: {'some' if final else 'none'}")
    assert now == expected, f"at CTI {cti}: missing {expected - now}, not final {now - expected}"


# --- as-of join --------------------------------------------------------------------------------

#: the ``on`` of an as-of join, with its plain Python twin (SQL equality: a null matches nothing)
AS_OF_ONS: list[tuple[Callable[[P, P], Any], Callable[[P, P], bool]]] = [
    (lambda l, r: l.k == r.k, lambda l, r: l.k == r.k),
    (lambda l, r: (l.k % 2 == r.k % 2) & (l.v >= r.v), lambda l, r: l.k % 2 == r.k % 2 and l.v >= r.v),
    (lambda l, r: (r.o == l.o) & (r.v != 4), lambda l, r: l.o is not None and r.o == l.o and r.v != 4),
]


def as_of_pair(l: P, r: P) -> P:
    return P(l.k, r.v, l.s, r.o)


def as_of_join(left: list[Lifetime], right: list[Lifetime], on: Callable[[P, P], bool],
               within: int | None) -> list[Lifetime]:
    """Each left event with every right event for which ``on`` holds that starts at or before the
    left start, at most ``within`` before it, and has the latest such start (all ties); the output
    has the left event's lifetime (docs/as-of-joins.md)."""
    out = []
    for ls, le, lp in left:
        candidates = [(rs, rp) for rs, _, rp in right
                      if on(lp, rp) and rs <= ls and (within is None or rs >= ls - within)]
        latest = max((rs for rs, _ in candidates), default=None)
        out += [(ls, le, as_of_pair(lp, rp)) for rs, rp in candidates if rs == latest]
    return out


@st.composite
def rising(draw: st.DrawFn, min_items: int = 0) -> list[Any]:
    """Up to 24 items along a clock that moves 0 to 3 ticks per event (equal starts are common),
    some starting a little before it (late after a CTI row, now and then); a CTI row about every
    fifth item, a few ticks behind the clock: most events are accepted and some output is final
    before the CTI. Points, intervals, a few never ending."""
    items: list[Any] = []
    clock = 0
    point = draw(st.booleans())
    for _ in range(draw(st.integers(min_items, 24))):
        if draw(st.integers(0, 4)) == 0:
            items.append(sq.Cti(max(0, clock - draw(st.integers(0, 4)))))
            continue
        clock += draw(st.integers(0, 3))
        start = max(0, clock - draw(st.sampled_from([0, 0, 0, 1, 3])))
        end = start + 1 if point else start + draw(st.integers(1, 8))
        items.append(sq.Insert(start, sq.INFINITY if not point and draw(st.integers(0, 15)) == 0 else end,
                               draw(crowded_payloads)))
    return items


@st.composite
def side(draw: st.DrawFn, min_items: int = 0) -> list[Any]:
    """Mostly ``rising`` items; else points or intervals crowded with equal starts, or intervals
    spread widely, some never ending (support.streams)."""
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(crowded_inputs(draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]))))
    if choice == 1:
        return draw(inputs(sq.Shape.INTERVAL, open_ends=True))
    return draw(rising(min_items))


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_as_of_join_is_the_latest_matching_partners(data: st.DataObject) -> None:
    """At a finite CTI ``c`` (the least of the inputs'): every result starting before ``c`` — its
    left event is accepted, so stable, and no right event can still come at or before its start."""
    left_items, right_items = data.draw(side(6), label="left"), data.draw(side(6), label="right")
    on, on_python = AS_OF_ONS[data.draw(st.integers(0, len(AS_OF_ONS) - 1), label="on")]
    within = data.draw(st.one_of(st.none(), st.none(), st.integers(0, 8)), label="within")
    left, right = sq.input("left", P, sq.Shape.INTERVAL), sq.input("right", P, sq.Shape.INTERVAL)
    q = left.as_of_join(right, on, as_of_pair, None if within is None else us(within))
    cti = least(cti_of(left_items), cti_of(right_items))
    everything = as_of_join(accepted(left_items), accepted(right_items), on_python, within)
    check(q, {"left": left_items, "right": right_items}, everything,
          [e for e in everything if cti is not None and e[0] < cti], cti)


# --- to_signal ---------------------------------------------------------------------------------

#: the key of a signal, with its plain Python twin (a null key is one key: None == None)
SIGNAL_KEYS: list[tuple[Callable[[P], Any], Callable[[P], Hashable]]] = [
    (lambda e: e.k % 2, lambda e: e.k % 2),
    (lambda e: e.o, lambda e: e.o),
    (lambda e: e.s, lambda e: e.s),
]


def to_signal(events: list[Lifetime], key: Callable[[P], Hashable]) -> list[Lifetime]:
    """Each event from its start to the next later start of an event with its key (INFINITY if
    none), its own end playing no part (docs/as-of-joins.md#signals)."""
    return [(s, min((s2 for s2, _, p2 in events if key(p2) == key(p) and s2 > s), default=INFINITY_MICROS), p)
            for s, _, p in events]


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_to_signal_lasts_until_the_next_later_start_of_its_key(data: st.DataObject) -> None:
    """At a finite CTI ``c`` (the input's): every event whose end is before ``c``, or at ``c`` —
    an accepted event of its key starts there, the boundary is stable."""
    items = data.draw(side(), label="items")
    key, key_python = SIGNAL_KEYS[data.draw(st.integers(0, len(SIGNAL_KEYS) - 1), label="key")]
    q = sq.input("in", P, sq.Shape.INTERVAL).to_signal(key)
    cti = cti_of(items)
    everything = to_signal(accepted(items), key_python)
    check(q, {"in": items}, everything, [e for e in everything if cti is not None and e[1] <= cti], cti)


# --- session windows ---------------------------------------------------------------------------


def sessions(events: list[Lifetime], gap: int) -> list[list[Lifetime]]:
    """The maximal sets of events whose extended lifetimes ``[s, e + gap)`` overlap, directly or
    through others: the connected components of the overlap of all pairs (touching is no
    overlap: lifetimes are half-open)."""
    component = list(range(len(events)))

    def root(i: int) -> int:
        while component[i] != i:
            i = component[i]
        return i

    for i, (si, ei, _) in enumerate(events):
        for j, (sj, ej, _) in enumerate(events):
            if si < extend(ej, gap) and sj < extend(ei, gap):
                component[root(i)] = root(j)
    found: dict[int, list[Lifetime]] = {}
    for i, e in enumerate(events):
        found.setdefault(root(i), []).append(e)
    return list(found.values())


def total(values: list[int | None]) -> int | None:
    """``w.sum``: nulls skipped, null when all are."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def session_window(events: list[Lifetime], gap: int, longest: int | None, group: Callable[[P], int] | None
                   ) -> tuple[list[tuple[Lifetime, int]], list[tuple[int, int]]]:
    """The output events — per session ``[first start, greatest end + gap)``; with ``longest``
    (``max_duration``) one per piece ``[S + k*longest, ...)`` that holds a start, of the events
    starting in it, the last piece ending with the session — each with its session's end; and
    every session's (start, end)."""
    out: list[tuple[Lifetime, int]] = []
    bounds: list[tuple[int, int]] = []
    keys = sorted({group(p) for _, _, p in events}) if group is not None else [None]
    for key in keys:
        members = [e for e in events if group is None or group(e[2]) == key]
        for session in sessions(members, gap):
            start, end = min(s for s, _, _ in session), max(extend(e, gap) for _, e, _ in session)
            bounds.append((start, end))
            if longest is None:
                pieces = [(start, end, session)]
            else:
                pieces = []
                for k in sorted({(s - start) // longest for s, _, _ in session}):
                    piece_start = start + k * longest
                    inside = [e for e in session if piece_start <= e[0] < piece_start + longest]
                    pieces.append((piece_start, min(piece_start + longest, end), inside))
            for piece_start, piece_end, inside in pieces:
                if group is None:
                    payload = P(0, len(inside), "s", max(p.v for _, _, p in inside))
                else:
                    payload = P(key, len(inside), "gs", total([p.o for _, _, p in inside]))  # type: ignore[arg-type]
                out.append(((piece_start, piece_end, payload), end))
    return out, bounds


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_session_windows_are_the_components_of_overlapping_extended_lifetimes(data: st.DataObject) -> None:
    """At a finite input CTI ``c``: the output CTI is the start of the earliest session (of any
    group) that ends after ``c``, or ``c``; released is every session (every piece of it) whose end
    ``c`` has reached and that starts before the output CTI."""
    items = data.draw(side(), label="items")
    gap = data.draw(st.integers(1, 8), label="gap")
    longest = data.draw(st.one_of(st.none(), st.integers(1, 10)), label="max_duration")
    grouped = data.draw(st.booleans(), label="grouped")
    source = sq.input("in", P, sq.Shape.INTERVAL)
    window = us(gap), None if longest is None else us(longest)
    if grouped:
        q = source.group_by(lambda e: e.k % 3).session_window(*window).select(
            lambda w: P(w.key, w.count(), "gs", w.sum(lambda e: e.o)))
    else:
        q = source.session_window(*window).select(lambda w: P(0, w.count(), "s", w.max(lambda e: e.v)))
    pieces, bounds = session_window(accepted(items), gap, longest, (lambda p: p.k % 3) if grouped else None)
    c = cti_of(items)
    output_cti = None if c is None else min([c] + [s for s, e in bounds if e > c])
    # a piece is stable with its session; the release rule wants its start before the output CTI,
    # which another group's session may hold back
    check(q, {"in": items}, [piece for piece, _ in pieces],
          [piece for piece, end in pieces if c is not None and output_cti is not None and end <= c
           and piece[0] < output_cti], output_cti)


# --- count windows -----------------------------------------------------------------------------


class Calls(sq.UserAggregate[Optional[int], list[str], str]):
    """The ``add`` calls, in order, as 'value@start-end' (microseconds)."""

    result_type = str

    def zero(self) -> list[str]:
        return []

    def add(self, acc: list[str], value: Optional[int], start: datetime, end: datetime) -> list[str]:
        return [*acc, f"{value}@{to_micros(start)}-{to_micros(end)}"]

    def result(self, acc: list[str]) -> str:
        return " ".join(acc)


def calls(members: list[Lifetime], end: int) -> str:
    """What ``Calls`` folds over a window ending at ``end``: each member's ``o`` with its lifetime
    clipped to the window, ordered by clipped start, clipped end, then value, nulls first
    (docs/user-aggregates.md); members start inside the window, so only their ends are clipped."""
    clipped = sorted(((s, min(e, end), p.o) for s, e, p in members),
                     key=lambda c: (c[0], c[1], c[2] is not None, c[2] or 0))
    return " ".join(f"{o}@{s}-{e}" for s, e, o in clipped)



def count_window(events: list[Lifetime], n: int, group: Callable[[P], int]
                 ) -> tuple[list[Lifetime], list[tuple[int, int | None]]]:
    """Per group, a window at every distinct start time ``t``: the ``n`` least distinct start times
    at or after ``t`` — none if there are fewer (it never fills) — over ``[t, last + 1)``, holding
    every event that starts at one of them (docs/count-windows.md); its payload: the key, the
    count, the ``Calls`` fold and the sum of ``o``. Also every window's first start and last start
    (None for one that has not filled)."""
    out: list[Lifetime] = []
    windows: list[tuple[int, int | None]] = []
    for key in sorted({group(p) for _, _, p in events}):
        members = [e for e in events if group(e[2]) == key]
        starts = sorted({s for s, _, _ in members})
        for t in starts:
            times = [s for s in starts if s >= t][:n]
            if len(times) < n:
                windows.append((t, None))
                continue
            windows.append((t, times[-1]))
            inside = [e for e in members if e[0] in times]
            out.append((t, times[-1] + 1, P(key, len(inside), calls(inside, times[-1] + 1),
                                            total([p.o for _, _, p in inside]))))
    return out, windows


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_count_windows_hold_n_consecutive_distinct_start_times(data: st.DataObject) -> None:
    """At an input CTI ``c`` below INFINITY: the output CTI is the first start of the earliest window, over
    all groups, that has not filled or whose last start time is not before ``c`` (of those starting
    before ``c``), or ``c``; released is every window that has filled, whose last start time is
    before ``c`` and that starts before the output CTI."""
    items = data.draw(side(), label="items")
    n = data.draw(st.integers(1, 4), label="n")
    q = sq.input("in", P, sq.Shape.INTERVAL).group_by(lambda e: e.k % 3).count_window(n).select(
        lambda w: P(w.key, w.count(), w.aggregate(Calls(), lambda e: e.o), w.sum(lambda e: e.o)))
    everything, windows = count_window(accepted(items), n, lambda p: p.k % 3)
    c = cti_of(items)
    # at an input CTI of INFINITY no event can come: a window that has not filled never will, so the
    # output CTI stays INFINITY (docs/decisions.md, "count-window CTI at INFINITY")
    output_cti = None if c is None else c if c == INFINITY_MICROS else min(
        [c] + [first for first, last in windows if first < c and (last is None or last >= c)])
    check(q, {"in": items}, everything, [e for e in everything if c is not None and output_cti is not None
                                         and e[1] - 1 < c and e[0] < output_cti], output_cti)


# --- patterns ----------------------------------------------------------------------------------

#: the ``on`` of a pattern, with its plain Python twin: an equality key, a key and a condition of
#: both, a condition without a key, none at all (Esper's ``every a -> b``)
PATTERN_ONS: list[tuple[Callable[[P, P], Any], Callable[[P, P], bool]]] = [
    (lambda a, b: a.k == b.k, lambda a, b: a.k == b.k),
    (lambda a, b: (a.k % 2 == b.k % 2) & (a.v >= b.v), lambda a, b: a.k % 2 == b.k % 2 and a.v >= b.v),
    (lambda a, b: a.v < b.v, lambda a, b: a.v < b.v),
    (lambda a, b: True, lambda a, b: True),
]


def pattern_pair(a: P, b: P) -> P:
    return P(a.k, b.v, a.s + b.s, b.o)


def partners(a: Lifetime, right: list[Lifetime], on: Callable[[P, P], bool], within: int | None) -> list[Lifetime]:
    """The right events for which ``on`` holds that start strictly after ``a`` and, with ``within``,
    less than ``within`` after it (docs/patterns.md)."""
    return [b for b in right if a[0] < b[0] and (within is None or b[0] < a[0] + within) and on(a[2], b[2])]


def followed_by(left: list[Lifetime], right: list[Lifetime], on: Callable[[P, P], bool], within: int | None,
                all_matches: bool) -> list[Lifetime]:
    """Every left event with each of its partners — only those with the earliest start unless
    ``all_matches`` — as a point at the partner's start."""
    out = []
    for a in left:
        found = partners(a, right, on, within)
        earliest = min((b[0] for b in found), default=None)
        out += [(b[0], b[0] + 1, pattern_pair(a[2], b[2])) for b in found if all_matches or b[0] == earliest]
    return out


def not_followed_by(left: list[Lifetime], right: list[Lifetime], on: Callable[[P, P], bool],
                    within: int) -> list[Lifetime]:
    """Every left event without a partner, as a point at its start plus ``within``."""
    return [(a[0] + within, a[0] + within + 1, a[2]) for a in left if not partners(a, right, on, within)]


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_followed_by_is_each_left_event_with_its_earliest_partners(data: st.DataObject) -> None:
    """At a finite CTI ``c`` (the least of the inputs'): every match starting before ``c`` — both
    events are accepted, so stable, and a right event still to come starts at or after ``c``, after
    the match. The right input is the left one about one time in four (a stream followed by itself)."""
    left_items = data.draw(side(6), label="left")
    same = data.draw(st.integers(0, 3), label="self") == 0
    right_items = left_items if same else data.draw(side(6), label="right")
    on, on_python = PATTERN_ONS[data.draw(st.integers(0, len(PATTERN_ONS) - 1), label="on")]
    within = data.draw(st.one_of(st.none(), st.integers(1, 8)), label="within")
    all_matches = data.draw(st.booleans(), label="all_matches")
    left = sq.input("left", P, sq.Shape.INTERVAL)
    right = left if same else sq.input("right", P, sq.Shape.INTERVAL)
    q = left.followed_by(right, on, pattern_pair, None if within is None else us(within), all_matches)
    given = {"left": left_items} if same else {"left": left_items, "right": right_items}
    cti = least(cti_of(left_items), cti_of(right_items))
    everything = followed_by(accepted(left_items), accepted(right_items), on_python, within, all_matches)
    check(q, given, everything, [e for e in everything if cti is not None and e[0] < cti], cti)


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_not_followed_by_is_each_left_event_without_a_partner_within(data: st.DataObject) -> None:
    """At finite CTIs: the output CTI is the lesser of the left CTI plus ``within`` (a left event
    still to come is absent that long after it, or later) and the right CTI; every absence before it
    is final — the right CTI passed it, so no partner can still come."""
    left_items, right_items = data.draw(side(6), label="left"), data.draw(side(6), label="right")
    on, on_python = PATTERN_ONS[data.draw(st.integers(0, len(PATTERN_ONS) - 1), label="on")]
    within = data.draw(st.integers(1, 8), label="within")
    left, right = sq.input("left", P, sq.Shape.INTERVAL), sq.input("right", P, sq.Shape.INTERVAL)
    q = left.not_followed_by(right, on, us(within))
    lcti = cti_of(left_items)
    cti = least(None if lcti is None else extend(lcti, within), cti_of(right_items))
    everything = not_followed_by(accepted(left_items), accepted(right_items), on_python, within)
    check(q, {"left": left_items, "right": right_items}, everything,
          [e for e in everything if cti is not None and e[0] < cti], cti)
