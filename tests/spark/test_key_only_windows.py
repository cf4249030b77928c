"""Windows whose ``select`` reads no aggregate (issue 13): a grouped window that outputs only its
key, a ``group_apply`` whose windows output a constant, and an ungrouped window of constants still
release one event per non-empty window (per group), on Spark as in the reference evaluator.

Every window kind over the same six events, worked by hand (times in microseconds, ``k`` the key):

    a [10, 14) k=1     b [12, 17) k=2     c [13, 15) k=1
    f [13, 16) k=2     d [26, 28) k=1     e [27, 29) k=null

The null key is a group of its own; released events are ordered by start, end, then payload
(nulls first)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Optional, Sequence, TypeVar

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from streamql.time import to_micros
from support.frames import bind, frame

SOURCE = "samples"
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))

T = TypeVar("T")


@dataclass(frozen=True)
class Sample:
    k: Optional[int]
    v: int


@dataclass(frozen=True)
class Key:
    key: Optional[int]


@dataclass(frozen=True)
class Marker:
    x: int


ITEMS: list[InputItem[Sample]] = [
    sq.Insert(10, 14, Sample(1, 1)),     # a
    sq.Insert(12, 17, Sample(2, 2)),     # b
    sq.Insert(13, 15, Sample(1, 3)),     # c
    sq.Insert(13, 16, Sample(2, 4)),     # f
    sq.Insert(26, 28, Sample(1, 5)),     # d
    sq.Insert(27, 29, Sample(None, 6)),  # e
]


def us(n: int) -> timedelta:
    return timedelta(microseconds=n)


# Each kind as a function of a plain or a grouped stream (both have the same window methods).
KINDS: dict[str, Callable[[Any], Any]] = {
    "snapshot": lambda q: q.snapshot_window(),
    "tumbling": lambda q: q.tumbling_window(us(5)),
    "hopping": lambda q: q.hopping_window(us(6), us(3)),
    "count": lambda q: q.count_window(2),
}

#: (start, end, key) of the key-only select's windows per kind, worked by hand
KEYED: dict[str, list[tuple[int, int, Optional[int]]]] = {
    # k=1 endpoints 10 13 14 15 26 28 (nothing alive in [15, 26)); k=2: 12 13 16 17; null: 27 29.
    # Adjacent windows of one key with equal payloads stay separate events.
    "snapshot": [(10, 13, 1), (12, 13, 2), (13, 14, 1), (13, 16, 2), (14, 15, 1), (16, 17, 2),
                 (26, 28, 1), (27, 29, None)],
    # [10, 15) holds a, c (k=1) and b, f (k=2); [15, 20) the tails of b, f; [20, 25) nothing;
    # [25, 30) holds d (k=1) and e (null)
    "tumbling": [(10, 15, 1), (10, 15, 2), (15, 20, 2), (25, 30, None), (25, 30, 1)],
    # windows [3j, 3j + 6): a in j = 2..4, c in 3..4, d in 7..9; b and f in 3..5; e in 8..9
    "hopping": [(6, 12, 1), (9, 15, 1), (9, 15, 2), (12, 18, 1), (12, 18, 2), (15, 21, 2),
                (21, 27, 1), (24, 30, None), (24, 30, 1), (27, 33, None), (27, 33, 1)],
    # two consecutive distinct starts, [first, last + 1): k=1 starts 10 13 26; k=2 starts 12 13;
    # the null group's one start fills no window
    "count": [(10, 14, 1), (12, 14, 2), (13, 27, 1)],
}

#: (start, end) of the ungrouped constant select's windows per kind, worked by hand
UNGROUPED: dict[str, list[tuple[int, int]]] = {
    # endpoints 10 12 13 14 15 16 17 26 27 28 29; nothing alive in [17, 26)
    "snapshot": [(10, 12), (12, 13), (13, 14), (14, 15), (15, 16), (16, 17), (26, 27), (27, 28), (28, 29)],
    "tumbling": [(10, 15), (15, 20), (25, 30)],
    # j = 2..5 and 7..9: no event overlaps [18, 24)
    "hopping": [(6, 12), (9, 15), (12, 18), (15, 21), (21, 27), (24, 30), (27, 33)],
    # distinct starts 10 12 13 26 27
    "count": [(10, 13), (12, 14), (13, 27), (26, 28)],
}


def run(spark: SparkSession, q: sq.Stream[T], source: sq.Stream[Sample], items: Sequence[InputItem[Sample]],
        at: sq.AdvanceTimeSettings = FLUSH) -> sq.Result[T]:
    """The Spark Result of ``q``, after checking that it equals the reference evaluator's."""
    expected = sq.reference.run(q, {SOURCE: sq.reference.ReferenceInput(items, at)})
    df = frame(spark, Sample, sq.Shape.INTERVAL, items, partitions=3)
    actual = bind(sq.Binder(spark), source, df, sq.Shape.INTERVAL, at).run(q)
    assert actual == expected
    return actual


def spans(result: sq.Result[T]) -> list[tuple[int, int, T]]:
    """The released events as (start, end) in microseconds with their payloads."""
    return [(to_micros(e.start), to_micros(e.end), e.payload) for e in result.events]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_grouped_window_selecting_only_the_key(spark: SparkSession, kind: str) -> None:
    """``group_by(k).<window>.select(lambda w: Key(w.key))``: one event per non-empty window of each group."""
    source = sq.input(SOURCE, Sample, sq.Shape.INTERVAL)
    q: sq.Stream[Key] = KINDS[kind](source.group_by(lambda e: e.k)).select(lambda w: Key(w.key))
    assert spans(run(spark, q, source, ITEMS)) == [(s, e, Key(k)) for s, e, k in KEYED[kind]]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_group_apply_of_a_window_selecting_a_constant(spark: SparkSession, kind: str) -> None:
    """``group_apply`` whose sub-query's window reads no aggregate, the result only the key: the
    same events as the grouped window's key-only select."""
    source = sq.input(SOURCE, Sample, sq.Shape.INTERVAL)

    def windows_of(group: sq.Stream[Sample]) -> sq.Stream[Marker]:
        out: sq.Stream[Marker] = KINDS[kind](group).select(lambda w: Marker(1))
        return out

    q = source.group_apply(lambda e: e.k, windows_of, lambda key, m: Key(key))
    assert spans(run(spark, q, source, ITEMS)) == [(s, e, Key(k)) for s, e, k in KEYED[kind]]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_ungrouped_window_selecting_a_constant(spark: SparkSession, kind: str) -> None:
    """An ungrouped window whose select reads no aggregate: one event per non-empty window."""
    source = sq.input(SOURCE, Sample, sq.Shape.INTERVAL)
    q: sq.Stream[Marker] = KINDS[kind](source).select(lambda w: Marker(7))
    assert spans(run(spark, q, source, ITEMS)) == [(s, e, Marker(7)) for s, e in UNGROUPED[kind]]


def test_key_only_tumbling_window_over_an_event_that_never_ends(spark: SparkSession) -> None:
    """The horizon path of hopping windows: at the flush, b (k=2) never ends and reaches the
    windows starting at or before the greatest finite time seen. For ``group_by`` that is over
    the whole input (a's end, 18): [10, 15) and [15, 20). A ``group_apply`` group sees only its
    own events and the CTIs (one per event, the last at 12): b's horizon is 12, only [10, 15)."""
    source = sq.input(SOURCE, Sample, sq.Shape.INTERVAL)
    items: list[InputItem[Sample]] = [sq.Insert(10, 18, Sample(1, 1)), sq.Insert(12, sq.INFINITY, Sample(2, 2))]
    grouped = source.group_by(lambda e: e.k).tumbling_window(us(5)).select(lambda w: Key(w.key))
    applied = source.group_apply(lambda e: e.k, lambda g: g.tumbling_window(us(5)).select(lambda w: Marker(1)),
                                 lambda key, m: Key(key))
    assert spans(run(spark, grouped, source, items)) == [
        (10, 15, Key(1)), (10, 15, Key(2)), (15, 20, Key(1)), (15, 20, Key(2))]
    assert spans(run(spark, applied, source, items)) == [(10, 15, Key(1)), (10, 15, Key(2)), (15, 20, Key(1))]
