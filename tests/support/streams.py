"""Hypothesis strategies shared by the Spark-versus-reference property tests: a payload type,
random inputs with CTI rows, advance-time settings, pipelines of the one-input operators and a
user-defined aggregate of the payload."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Optional

import attrs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.time import MAX_MICROS, to_micros
from support.depth import PARTS

#: hypothesis settings for property tests that run Spark jobs per example
SPARK_EXAMPLES = settings(deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass(frozen=True)
class P:
    k: int
    v: int
    s: str
    o: Optional[int]


def us(n: int) -> timedelta:
    return timedelta(microseconds=n)

Op = Callable[[sq.Stream[P]], sq.Stream[P]]

WHERES: list[Op] = [
    lambda q: q.where(lambda e: e.v > 3),
    lambda q: q.where(lambda e: (e.k % 3 == 0) | sq.is_null(e.o)),
    lambda q: q.where(lambda e: e.s.startswith("a") & (e.v != 2)),
    lambda q: q.where(lambda e: sq.coalesce(e.o, 0) + e.k >= 4),
]
SELECTS: list[Op] = [
    lambda q: q.select(lambda e: P(e.k + 1, e.v * 2 - e.k, e.s.upper(), e.o)),
    lambda q: q.select(lambda e: P(e.v // 3, e.k % 4, e.s + "x", sq.if_(e.v > 2, e.o, None))),
    lambda q: q.select(lambda e: P(abs(e.k - 5), round(e.v / 2), e.s[1:], sq.greatest(e.k, e.v))),
]


@st.composite
def pipelines(draw: st.DrawFn) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["where", "select", "alter_duration", "alter_duration_payload",
                                     "alter_lifetime", "shift", "to_point"]))
        if kind == "where":
            ops.append((kind, draw(st.integers(0, len(WHERES) - 1))))
        elif kind == "select":
            ops.append((kind, draw(st.integers(0, len(SELECTS) - 1))))
        elif kind == "alter_duration":
            ops.append((kind, draw(st.integers(1, 40))))
        elif kind == "alter_duration_payload":
            ops.append((kind, None))
        elif kind == "alter_lifetime":
            ops.append((kind, (draw(st.integers(-30, 30)), draw(st.one_of(st.none(), st.integers(1, 30))))))
        elif kind == "shift":
            ops.append((kind, draw(st.integers(-30, 30))))
        else:
            ops.append((kind, None))
    return ops


def build(source: sq.Stream[P], ops: list[tuple[str, Any]]) -> sq.Stream[P]:
    q = source
    for kind, arg in ops:
        if kind == "where":
            q = WHERES[arg](q)
        elif kind == "select":
            q = SELECTS[arg](q)
        elif kind == "alter_duration":
            q = q.alter_duration(us(arg))
        elif kind == "alter_duration_payload":
            q = q.alter_duration(lambda e: us(1) * (e.v % 7) + us(2))
        elif kind == "alter_lifetime":
            q = q.alter_lifetime(us(arg[0]), None if arg[1] is None else us(arg[1]))
        elif kind == "shift":
            q = q.shift(us(arg))
        else:
            q = q.to_point()
    return q


payloads = st.builds(P, st.integers(-5, 9), st.integers(-3, 9), st.sampled_from(["a", "ab", "b", "", " c"]),
                     st.one_of(st.none(), st.integers(0, 5)))


def cti_row(draw: st.DrawFn, greatest: int) -> sq.Cti:
    """A CTI row at a time in [0, ``greatest``], or about one in ten at ``INFINITY`` (Spark keeps no
    CTI history: an input reaching ``INFINITY`` by a CTI row, not the flush, is a documented corner;
    docs/decisions.md). Shrinks towards a finite time."""
    if draw(st.integers(0, 9)) == 9:
        return sq.Cti(sq.INFINITY)
    return sq.Cti(draw(st.integers(0, greatest)))


@st.composite
def inputs(draw: st.DrawFn, shape: sq.Shape, open_ends: bool = False, min_items: int = 0) -> list[Any]:
    """``min_items`` to 25 items in arrival order: about one in ten a CTI row (one CTI row in ten
    at ``INFINITY``: events after it are late), the others events starting in [0, 100]; with
    ``open_ends`` about one INTERVAL event in eight never ends (end ``INFINITY``)."""
    items: list[Any] = []
    for _ in range(draw(st.integers(min_items, 25))):
        if draw(st.integers(0, 9)) == 0:
            items.append(cti_row(draw, 120))
            continue
        start = draw(st.integers(0, 100))
        length = 1 if shape is sq.Shape.POINT else draw(st.integers(1, 30))
        end: Any = start + length
        if open_ends and shape is sq.Shape.INTERVAL and draw(st.integers(0, 7)) == 0:
            end = sq.INFINITY
        items.append(sq.Insert(start, end, draw(payloads)))
    return items


#: how far apart ``side_by_side`` lays its parts: far wider than a part reaches (starts in [0, 100],
#: CTI rows up to 120, lifetimes up to 40, then pipelines, windows, gaps and ``within`` of at most
#: 40 more), and small enough that an event that never ends crosses few windows to the last part
SPACING = 1_000


def _moved(value: Any, by: int, last: bool) -> Any:
    """``value`` (an item, or a list, tuple or dict of them) ``by`` microseconds later; a CTI row at
    ``INFINITY`` in a part that is not the ``last`` becomes one at the part's far end (all later
    parts would be late), every other ``INFINITY`` and every null time stays."""
    if isinstance(value, list):
        return [_moved(v, by, last) for v in value]
    if isinstance(value, tuple):
        return tuple(_moved(v, by, last) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, by, last) for k, v in value.items()}
    if isinstance(value, sq.Cti) and _infinite(value.time) and not last:
        return sq.Cti(by + SPACING // 2)
    if not attrs.has(type(value)):
        return value
    times = {f: getattr(value, f) for f in ("start", "end", "time") if hasattr(value, f)}
    return attrs.evolve(value, **{f: _later(t, by) for f, t in times.items()})


def _infinite(t: Any) -> bool:
    return t is not None and to_micros(t) > MAX_MICROS


def _later(t: Any, by: int) -> Any:
    if t is None or _infinite(t):  # a null (a bad row) or INFINITY
        return t
    return t + (timedelta(microseconds=by) if isinstance(t, datetime) else by)


@st.composite
def side_by_side(draw: st.DrawFn, strategy: st.SearchStrategy[Any], parts: int = PARTS) -> Any:
    """``parts`` draws of ``strategy`` laid side by side in time (``laid_side_by_side``,
    tests/support/depth.py). With one part, the draw itself."""
    return laid_side_by_side([draw(strategy) for _ in range(parts)])


def laid_side_by_side(drawn: list[Any]) -> Any:
    """The ``i``-th of ``drawn`` (a list of items, or a tuple or dict of such lists: several inputs)
    moved ``i * SPACING`` later, then joined: lists one after the other in arrival order, tuples
    and dicts member by member. A CTI row at ``INFINITY`` ends only the last part (``_moved``)."""
    return _joined([_moved(part, i * SPACING, i == len(drawn) - 1) for i, part in enumerate(drawn)])


def _joined(drawn: list[Any]) -> Any:
    first = drawn[0]
    if isinstance(first, list):
        return [item for part in drawn for item in part]
    if isinstance(first, tuple):
        return tuple(_joined([part[i] for part in drawn]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _joined([part[k] for part in drawn]) for k in first}
    if len(drawn) == 1:
        return first
    raise TypeError(f"side_by_side cannot join {type(first).__name__} values")


@st.composite
def advance_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings | None:
    if draw(st.integers(0, 6)) == 0:
        return None
    if draw(st.booleans()):
        generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 5)),
                                              delay=us(draw(st.sampled_from([-1, 0, 3, 10]))),
                                              flush=draw(st.booleans()))
    else:
        generation = sq.AdvanceTimeGeneration(every=us(draw(st.sampled_from([1, 5, 20]))),
                                              delay=us(draw(st.sampled_from([-1, 0, 3, 10]))),
                                              flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


@st.composite
def side_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings | None:
    """One input's settings of a multi-stream query: mostly flushing settings, so that most examples
    release something; else ``advance_settings`` (no settings, DROP/ADJUST, flush or not)."""
    # hypothesis tries small draws first: let them give flushing settings
    if draw(st.integers(0, 2)) == 2:
        return draw(advance_settings())
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 4)),
                                                           delay=us(draw(st.sampled_from([0, 3]))), flush=True),
                                  policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


class TimeWeighted(sq.UserAggregate[Optional[int], tuple[int, int], Optional[float]]):
    """Sum of value × clipped duration over total clipped duration (values skipped when null): a
    user-defined aggregate of ``P.o`` that reads the lifetimes.

    >>> w.aggregate(TimeWeighted(), lambda e: e.o)  # doctest: +SKIP
    """

    result_type = Optional[float]

    def zero(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, acc: tuple[int, int], value: Optional[int], start: datetime, end: datetime) -> tuple[int, int]:
        micros = (end - start) // sq.TICK
        return acc if value is None else (acc[0] + value * micros, acc[1] + micros)

    def result(self, acc: tuple[int, int]) -> Optional[float]:
        return None if acc[1] == 0 else acc[0] / acc[1]


# --- Esper-style lifetimes: crowded start times and payloads -----------------------------------


@dataclass(frozen=True)
class Inner:
    a: Optional[int]
    b: str


@dataclass(frozen=True)
class Tied:
    """A payload whose order among equal starts needs every rule: a nullable float with NaN and
    the infinities, and a nullable nested payload with a nullable field."""

    k: int
    x: Optional[float]
    inner: Optional[Inner]


tied_payloads = st.builds(
    Tied, st.integers(0, 2),
    st.one_of(st.none(), st.sampled_from([-1.5, 0.0, 2.25, float("inf"), float("-inf"), float("nan")])),
    st.one_of(st.none(), st.builds(Inner, st.one_of(st.none(), st.integers(0, 1)), st.sampled_from(["", "a", "b"]))))
#: ``P`` payloads from few values: equal starts often carry equal payloads, and events then differ by end
crowded_payloads = st.builds(P, st.integers(0, 3), st.sampled_from([1, 4, 7]), st.sampled_from(["a", "b"]),
                             st.one_of(st.none(), st.sampled_from([0, 3])))


#: the most items of each of two crowded inputs of one example (``crowded_inputs(most=...)``): 30
#: alone; 12 laid side by side, where hypothesis' buffer of draws holds two inputs of 25 parts of
#: 12 items, not of 30
PAIRED_CROWDED = 30 if PARTS == 1 else 12


@st.composite
def crowded_inputs(draw: st.DrawFn, shape: sq.Shape, payloads: st.SearchStrategy[Any] = crowded_payloads,
                   most: int = 30) -> list[Any]:
    """Up to ``most`` items in arrival order whose starts crowd into few instants (a span of 4, 12 or
    60 ticks): many equal starts, equal payloads among them; about one in eight a CTI row (one CTI
    row in ten at ``INFINITY``)."""
    span = draw(st.sampled_from([4, 12, 60]))
    items: list[Any] = []
    for _ in range(draw(st.integers(0, most))):
        if draw(st.integers(0, 7)) == 0:
            items.append(cti_row(draw, span + 2))
            continue
        start = draw(st.integers(0, span))
        length = 1 if shape is sq.Shape.POINT else draw(st.integers(1, 6))
        items.append(sq.Insert(start, start + length, draw(payloads)))
    return items


@st.composite
def edge_items(draw: st.DrawFn) -> list[Any]:
    """Start edges (some duplicates of an earlier (start, payload)), end edges for open ones (with
    ends that may be late), events that never end, end edges before their start edge or with no
    start edge at all, and CTI rows (rarely INFINITY)."""
    items: list[Any] = []
    seen: list[tuple[int, P]] = []  # every (start, payload) a start edge had
    open_: list[tuple[int, P]] = []  # start edges that may still get their end edge
    later: list[tuple[int, P]] = []  # keys whose end edge came first
    for _ in range(draw(st.integers(0, 22))):
        choice = draw(st.integers(0, 19))
        if choice < 2:
            items.append(sq.Cti(sq.INFINITY if draw(st.integers(0, 15)) == 0 else draw(st.integers(0, 120))))
        elif choice < 10 or not open_:
            if draw(st.booleans()) and later:
                start, p = later.pop(0)
            elif seen and choice == 9:
                start, p = draw(st.sampled_from(seen))
            else:
                start, p = draw(st.integers(0, 100)), draw(payloads)
            items.append(sq.StartEdge(start, p))
            seen.append((start, p))
            open_.append((start, p))
        elif choice < 18:
            start, p = open_.pop(draw(st.integers(0, len(open_) - 1)))
            items.append(sq.EndEdge(start, start + draw(st.integers(1, 40)), p))
        else:
            start, p = draw(st.integers(0, 100)), draw(payloads)
            if choice == 18:
                later.append((start, p))  # its start edge may come later
            items.append(sq.EndEdge(start, start + draw(st.integers(1, 40)), p))
    return items
