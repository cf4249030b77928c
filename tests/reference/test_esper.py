"""Hand-worked examples of the Esper-style operators — ``keep_last`` (``#length``), ``time_batch``
and ``length_batch`` — run through ``sq.reference.run``.

Every expected output is worked out by hand from docs/esper-windows.md and docs/ctis-and-release.md,
and written out in full. Seed 003 (Esper: Processing Model) shows Withdrawal events W1 to W6
arriving over time; its diagrams did not survive, so the amounts here are chosen for the
examples (W1 500, W2 100, W3 200, W4 50, W5 150, W6 700; W7 80 and W8 300 carry the examples on).
With EDGE output (``run(q, output=sq.Shape.EDGE)``), START edges are Esper's insert stream (new
events) and END edges its remove stream (old events).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any, Optional, cast

import pytest

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput

UTC = timezone.utc
TICK = sq.TICK
INF = sq.INFINITY
SECOND = timedelta(seconds=1)
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))
#: Esper posts results as each event arrives: a CTI one tick after every event (seed 001's liveliness)
LIVELY = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-TICK))
#: a CTI at every event's own start (delay 0)
AT_EACH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))


def at(second: float) -> datetime:
    """12:00:00 + ``second`` seconds on 2024-05-01 (UTC)."""
    return datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC) + timedelta(seconds=second)


def point(start: datetime, payload: Any) -> sq.Insert[Any]:
    return sq.Insert(start, start + TICK, payload)


@dataclasses.dataclass(frozen=True)
class Withdrawal:
    name: str
    amount: int


@dataclasses.dataclass(frozen=True)
class Sum:
    total: int


WITHDRAWALS = sq.input("withdrawals", Withdrawal, shape=sq.Shape.POINT)
AMOUNTS = [500, 100, 200, 50, 150, 700, 80, 300]
# W1 .. W8 arrive a second apart, W1 at 12:00:01
W: list[InputItem[Withdrawal]] = [point(at(i), Withdrawal(f"W{i}", amount)) for i, amount in enumerate(AMOUNTS, 1)]
SEED = W[:6]


def run(query: sq.Stream[Any], items: list[InputItem[Any]], settings: Optional[sq.AdvanceTimeSettings],
        output: sq.Shape = sq.Shape.INTERVAL, name: str = "withdrawals") -> sq.Result[Any]:
    return sq.reference.run(query, {name: ReferenceInput(items, settings)}, output=output)


def streams(result: sq.Result[Withdrawal]) -> list[tuple[str, float, str]]:
    """Edges as (insert/remove, second, name): Esper's new and old events in order."""
    return [("insert" if e.kind is sq.EdgeKind.START else "remove", (e.time - at(0)).total_seconds(),
             e.payload.name) for e in result.edges]


# --- keep_last: Esper's length window -------------------------------------------------------------


def test_seed_length_window_of_five_insert_and_remove_streams() -> None:
    # "select * from Withdrawal#length(5)": every arriving event is a new event; "when event W1
    # leaves the length window on arrival of event W6, it is posted as an old event"
    result = run(WITHDRAWALS.keep_last(5), SEED, LIVELY, sq.Shape.EDGE)
    # W1 lives [1, 6): 6 is the start of the 5th event after it. At 6 its END edge comes before
    # W6's START edge (END before START at equal times)
    assert streams(result) == [
        ("insert", 1, "W1"), ("insert", 2, "W2"), ("insert", 3, "W3"), ("insert", 4, "W4"), ("insert", 5, "W5"),
        ("remove", 6, "W1"), ("insert", 6, "W6"),
    ]
    assert result.final_cti == at(6) + TICK
    # as intervals only W1 is complete; the others are still in the window
    intervals = run(WITHDRAWALS.keep_last(5), SEED, LIVELY)
    assert intervals.events == [sq.Event(at(1), at(6), Withdrawal("W1", 500))]
    # flushed: the rest stay in the window for good
    flushed = run(WITHDRAWALS.keep_last(5), SEED, FLUSH)
    assert [(e.start, e.end, e.payload.name) for e in flushed.events] == [
        (at(1), at(6), "W1"), (at(2), INF, "W2"), (at(3), INF, "W3"), (at(4), INF, "W4"), (at(5), INF, "W5"),
        (at(6), INF, "W6")]


def test_length_window_slides_one_event_at_a_time() -> None:
    result = run(WITHDRAWALS.keep_last(5), W, LIVELY, sq.Shape.EDGE)
    # W7 pushes W2 out, W8 pushes W3 out
    assert streams(result) == [
        ("insert", 1, "W1"), ("insert", 2, "W2"), ("insert", 3, "W3"), ("insert", 4, "W4"), ("insert", 5, "W5"),
        ("remove", 6, "W1"), ("insert", 6, "W6"),
        ("remove", 7, "W2"), ("insert", 7, "W7"),
        ("remove", 8, "W3"), ("insert", 8, "W8"),
    ]


def test_seed_filter_before_the_window() -> None:
    # "select * from Withdrawal(amount>=200)#length(5)": events under 200 never enter the window.
    # W1 (500), W3 (200), W6 (700), W8 (300) enter; four events do not fill a window of five, so
    # nothing leaves
    query = WITHDRAWALS.where(lambda e: e.amount >= 200).keep_last(5)
    assert streams(run(query, W, LIVELY, sq.Shape.EDGE)) == [
        ("insert", 1, "W1"), ("insert", 3, "W3"), ("insert", 6, "W6"), ("insert", 8, "W8")]


def test_seed_where_after_the_window() -> None:
    # "select * from Withdrawal#length(5) where amount >= 200": every event enters the window, and
    # "the where-clause applies to both new events and old events": W1 and W3 leave the window (on
    # the arrival of W6 and W8) and pass the condition, so they are posted as old events
    query = WITHDRAWALS.keep_last(5).where(lambda e: e.amount >= 200)
    assert streams(run(query, W, LIVELY, sq.Shape.EDGE)) == [
        ("insert", 1, "W1"), ("insert", 3, "W3"),
        ("remove", 6, "W1"), ("insert", 6, "W6"),
        ("remove", 8, "W3"), ("insert", 8, "W8"),
    ]


def test_sum_over_the_length_window() -> None:
    # "select sum(amount) from Withdrawal#length(5)": a snapshot over the window's lifetimes; as
    # EDGE output the insert stream is each new sum and the remove stream the sum it replaces
    query = WITHDRAWALS.keep_last(5).snapshot_window().select(lambda w: Sum(w.sum(lambda e: e.amount)))
    result = run(query, W, LIVELY)
    # sums: 500; +100 = 600; +200 = 800; +50 = 850; +150 = 1000; -500 +700 = 1200 (W2..W6);
    # -100 +80 = 1180 (W3..W7); from 8: -200 +300 = 1280 (W4..W8), still open
    assert [(e.start, e.end, e.payload.total) for e in result.events] == [
        (at(1), at(2), 500), (at(2), at(3), 600), (at(3), at(4), 800), (at(4), at(5), 850),
        (at(5), at(6), 1000), (at(6), at(7), 1200), (at(7), at(8), 1180)]
    edges = run(query, W, LIVELY, sq.Shape.EDGE).edges
    assert [(e.kind.name, (e.time - at(0)).total_seconds(), e.payload.total) for e in edges][-4:] == [
        ("END", 7, 1200), ("START", 7, 1180), ("END", 8, 1180), ("START", 8, 1280)]


def test_length_window_end_at_the_cti() -> None:
    # a CTI at each event's own start: after W6 the CTI is 6. W1's end, 6, is W6's start: W6 is
    # accepted, and an event that still comes at 6 starts with it, so W1 still ends at 6: the
    # END edge is released. W6's own START is not (6 is not before the CTI)
    result = run(WITHDRAWALS.keep_last(5), SEED, AT_EACH, sq.Shape.EDGE)
    assert streams(result) == [
        ("insert", 1, "W1"), ("insert", 2, "W2"), ("insert", 3, "W3"), ("insert", 4, "W4"), ("insert", 5, "W5"),
        ("remove", 6, "W1")]
    assert run(WITHDRAWALS.keep_last(5), SEED, AT_EACH).events == [sq.Event(at(1), at(6), Withdrawal("W1", 500))]
    # with the CTI at 5.5 only (W6 has arrived after it), an event at 5.7 could still come and end
    # W1 there: its end is held, its start was released
    held: list[InputItem[Withdrawal]] = [*SEED[:5], sq.Cti(at(5.5)), SEED[5]]
    assert run(WITHDRAWALS.keep_last(5), held, None).events == []
    assert streams(run(WITHDRAWALS.keep_last(5), held, None, sq.Shape.EDGE)) == [
        ("insert", 1, "W1"), ("insert", 2, "W2"), ("insert", 3, "W3"), ("insert", 4, "W4"), ("insert", 5, "W5")]


def test_keep_last_replaces_interval_lifetimes() -> None:
    intervals = sq.input("intervals", Withdrawal, shape=sq.Shape.INTERVAL)
    items: list[InputItem[Withdrawal]] = [
        sq.Insert(at(1), at(100), Withdrawal("long", 1)),
        sq.Insert(at(2), at(3), Withdrawal("short", 2)),
        sq.Insert(at(4), at(5), Withdrawal("last", 3)),
    ]
    # keep_last(1): each event lives until the next one starts, whatever its own end was
    result = run(intervals.keep_last(1), items, FLUSH, name="intervals")
    assert [(e.start, e.end, e.payload.name) for e in result.events] == [
        (at(1), at(2), "long"), (at(2), at(4), "short"), (at(4), INF, "last")]


@dataclasses.dataclass(frozen=True)
class Tick:
    symbol: str
    price: Optional[int]


TICKS = sq.input("ticks", Tick, shape=sq.Shape.POINT)
# three events start at 1; in start-time order, ties go by the payload fields in order, nulls first:
# (a, None), (a, 5), (b, None) — whatever their arrival order
TIED: list[InputItem[Tick]] = [
    point(at(1), Tick("b", None)), point(at(1), Tick("a", 5)), point(at(1), Tick("a", None)),
    point(at(2), Tick("z", 1)), point(at(3), Tick("z", 2)),
]


def test_keep_last_orders_equal_starts_by_payload() -> None:
    expected = [(at(1), at(2), Tick("a", 5)), (at(1), at(3), Tick("b", None)),
                (at(2), INF, Tick("z", 1)), (at(3), INF, Tick("z", 2))]
    # keep_last(2): order (1, a, None), (1, a, 5), (1, b, None), (2, z, 1), (3, z, 2).
    # (a, None) ends at the start of the 2nd event after it, (b, None) at 1: an empty lifetime,
    # removed. (a, 5) ends at 2, (b, None) at 3, the last two never
    for items in (TIED, TIED[::-1], [TIED[i] for i in (2, 0, 4, 1, 3)]):
        result = run(TICKS.keep_last(2), items, FLUSH, name="ticks")
        assert [(e.start, e.end, e.payload) for e in result.events] == expected


def test_equal_starts_and_payloads_are_ordered_by_end() -> None:
    # two events with one start and one payload differ only by their ends: the order (then by end)
    # cannot show in the output, whose lifetimes replace the ends, but it makes it deterministic
    intervals = sq.input("intervals", Tick, shape=sq.Shape.INTERVAL)
    items: list[InputItem[Tick]] = [sq.Insert(at(1), at(9), Tick("a", 1)), sq.Insert(at(1), at(4), Tick("a", 1)),
                                    sq.Insert(at(2), at(3), Tick("b", 1))]
    for order in (items, items[::-1]):
        result = run(intervals.keep_last(1), order, FLUSH, name="intervals")
        # (1, a, end 4) ends at 1 (empty, removed), (1, a, end 9) at 2, b never
        assert [(e.start, e.end, e.payload) for e in result.events] == [
            (at(1), at(2), Tick("a", 1)), (at(2), INF, Tick("b", 1))]


# --- time_batch ----------------------------------------------------------------------------------

# withdrawals at 0.2 s, 0.7 s, 1.3 s, 3.4 s and 3.9 s: batches [0, 1), [1, 2), [3, 4); [2, 3) is empty
BATCHED: list[InputItem[Withdrawal]] = [
    point(at(0.2), Withdrawal("A", 100)), point(at(0.7), Withdrawal("B", 50)), point(at(1.3), Withdrawal("C", 200)),
    point(at(3.4), Withdrawal("D", 75)), point(at(3.9), Withdrawal("E", 25)),
]


def test_seed_time_batch_posts_each_batch_at_its_end() -> None:
    # "select account, amount from Withdrawal#time_batch(1 sec)": each batch's events are posted
    # when the batch ends, and posted as old events when the next batch is
    query = WITHDRAWALS.time_batch(SECOND)
    result = run(query, BATCHED, FLUSH)
    # an event in [b, b + 1) lives [b + 1, b + 2)
    assert [(e.start, e.end, e.payload.name) for e in result.events] == [
        (at(1), at(2), "A"), (at(1), at(2), "B"), (at(2), at(3), "C"), (at(4), at(5), "D"), (at(4), at(5), "E")]
    assert streams(run(query, BATCHED, FLUSH, sq.Shape.EDGE)) == [
        ("insert", 1, "A"), ("insert", 1, "B"),
        ("remove", 2, "A"), ("remove", 2, "B"), ("insert", 2, "C"),
        ("remove", 3, "C"),                       # the empty batch [2, 3): only old events
        ("insert", 4, "D"), ("insert", 4, "E"),
        ("remove", 5, "D"), ("remove", 5, "E"),
    ]


def test_seed_time_batch_sums() -> None:
    # "select sum(amount) as mysum from Withdrawal#time_batch(1 sec)": one sum per batch, over the
    # batch's lifetime; a tumbling window of the same size and a snapshot both give it
    tumbling = WITHDRAWALS.time_batch(SECOND).tumbling_window(SECOND).select(lambda w: Sum(w.sum(lambda e: e.amount)))
    snapshot = WITHDRAWALS.time_batch(SECOND).snapshot_window().select(lambda w: Sum(w.sum(lambda e: e.amount)))
    expected = [sq.Event(at(1), at(2), Sum(150)), sq.Event(at(2), at(3), Sum(200)), sq.Event(at(4), at(5), Sum(100))]
    assert run(tumbling, BATCHED, FLUSH).events == expected
    assert run(snapshot, BATCHED, FLUSH).events == expected
    # with a CTI just after every withdrawal the input CTI ends at 3.9 s + t, inside the batch
    # [3, 4): that batch may still grow, so the output CTI is its end, 4, and the sum from 4 waits
    for query in (tumbling, snapshot):
        live = run(query, BATCHED, LIVELY)
        assert live.events == expected[:2]
        assert live.final_cti == at(4)


def test_time_batch_output_cti_is_the_end_of_the_batch_holding_the_input_cti() -> None:
    query = WITHDRAWALS.time_batch(SECOND)
    for cti, expected_cti, released in [
        (at(1.3), at(2), ["A", "B"]),        # [1, 2) still open: A and B, posted at 1, are final
        (at(2), at(3), ["A", "B", "C"]),     # a CTI at a batch's start: the batch before is complete
        (at(1) - TICK, at(1), []),           # [0, 1) not complete: nothing
    ]:
        result = run(query, [*BATCHED[:3], sq.Cti(cti)], None)
        assert result.final_cti == expected_cti
        assert [e.payload.name for e in result.events] == released
    # no CTI, no output; INFINITY stays INFINITY
    assert run(query, BATCHED, None).final_cti is None
    assert run(query, BATCHED, FLUSH).final_cti == INF


def test_time_batch_batches_are_aligned_to_the_epoch() -> None:
    # 4-second batches: [12:00:00, 12:00:04), [12:00:04, 12:00:08) — whenever the first event comes
    query = WITHDRAWALS.time_batch(timedelta(seconds=4))
    result = run(query, W[2:6], FLUSH)  # W3..W6 at 3, 4, 5, 6
    assert [(e.start, e.end, e.payload.name) for e in result.events] == [
        (at(4), at(8), "W3"), (at(8), at(12), "W4"), (at(8), at(12), "W5"), (at(8), at(12), "W6")]


# --- length_batch ------------------------------------------------------------------------------------


def test_length_batch_posts_full_batches() -> None:
    # "win:length_batch ... collects a given number of events and posts collected events as a batch
    # ... when the given number of events has collected": batches of 3 over W1..W7. W1-W3 is full at
    # 3 and lives until W4-W6 is full, at 6; W4-W6 lives until a third batch fills (W7 alone does not)
    query = WITHDRAWALS.length_batch(3)
    result = run(query, W[:7], LIVELY, sq.Shape.EDGE)
    assert streams(result) == [
        ("insert", 3, "W1"), ("insert", 3, "W2"), ("insert", 3, "W3"),
        ("remove", 6, "W1"), ("remove", 6, "W2"), ("remove", 6, "W3"),
        ("insert", 6, "W4"), ("insert", 6, "W5"), ("insert", 6, "W6"),
    ]
    flushed = run(query, W[:7], FLUSH)
    assert [(e.start, e.end, e.payload.name) for e in flushed.events] == [
        (at(3), at(6), "W1"), (at(3), at(6), "W2"), (at(3), at(6), "W3"),
        (at(6), INF, "W4"), (at(6), INF, "W5"), (at(6), INF, "W6")]
    # the sum per batch, with the insert stream of sums
    sums = query.snapshot_window().select(lambda w: Sum(w.sum(lambda e: e.amount)))
    assert run(sums, W[:7], LIVELY).events == [sq.Event(at(3), at(6), Sum(800))]


def test_length_batch_end_at_the_cti() -> None:
    query = WITHDRAWALS.length_batch(3)
    # a CTI at each event's start: after W6 it is 6. The first batch ends at W6's start, 6: W6 is
    # accepted, so the boundary is final and the batch is released; the second batch starts at the
    # CTI and waits
    result = run(query, SEED, AT_EACH)
    assert [(e.start, e.end, e.payload.name) for e in result.events] == [
        (at(3), at(6), "W1"), (at(3), at(6), "W2"), (at(3), at(6), "W3")]
    # CTI at 5.5 with W6 arriving after it: an event at 5.7 could still complete the second batch
    # there: held
    held: list[InputItem[Withdrawal]] = [*SEED[:5], sq.Cti(at(5.5)), SEED[5]]
    assert run(query, held, None).events == []
    assert run(query, held, None, sq.Shape.POINT).events == [
        sq.Event(at(3), at(3) + TICK, Withdrawal(n, a)) for n, a in [("W1", 500), ("W2", 100), ("W3", 200)]]


def test_length_batch_orders_equal_starts_by_payload() -> None:
    # three ticks at 1 arrive c, a, b; one at 2. Batches of 2 in start-time order, ties by payload:
    # {a, b} (full at 1) and {c, d} (full at 2) — not {c, a} by arrival
    items: list[InputItem[Tick]] = [point(at(1), Tick("c", 0)), point(at(1), Tick("a", 0)),
                                    point(at(1), Tick("b", 0)), point(at(2), Tick("d", 0))]
    result = run(TICKS.length_batch(2), items, FLUSH, name="ticks")
    assert [(e.start, e.end, e.payload.symbol) for e in result.events] == [
        (at(1), at(2), "a"), (at(1), at(2), "b"), (at(2), INF, "c"), (at(2), INF, "d")]


def test_length_batch_that_fills_at_the_same_instant_as_the_next() -> None:
    # batches of 1 with two events at 1: the first batch would live [1, 1): empty, removed
    items: list[InputItem[Tick]] = [point(at(1), Tick("b", 0)), point(at(1), Tick("a", 0))]
    result = run(TICKS.length_batch(1), items, FLUSH, name="ticks")
    assert [(e.start, e.end, e.payload.symbol) for e in result.events] == [(at(1), INF, "b")]


# --- errors raised when the query is built ---------------------------------------------------------


@pytest.mark.parametrize("n", [0, -1, True, 2.5, "5"])
def test_keep_last_and_length_batch_need_a_positive_int(n: object) -> None:
    with pytest.raises(sq.ExpressionError, match="keep_last needs a positive int"):
        WITHDRAWALS.keep_last(cast(int, n))
    with pytest.raises(sq.ExpressionError, match="length_batch needs a positive int"):
        WITHDRAWALS.length_batch(cast(int, n))


@pytest.mark.parametrize("size", [timedelta(0), timedelta(seconds=-1)])
def test_time_batch_needs_a_positive_size(size: timedelta) -> None:
    with pytest.raises(sq.ExpressionError, match="time_batch needs a positive size"):
        WITHDRAWALS.time_batch(size)


@pytest.mark.parametrize("size", [1, 1.5, "1s", None])
def test_time_batch_needs_a_timedelta(size: object) -> None:
    with pytest.raises(sq.ExpressionError, match="time_batch: size must be a timedelta"):
        WITHDRAWALS.time_batch(cast(timedelta, size))
