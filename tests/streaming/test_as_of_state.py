"""The live state of ``as_of_join`` and ``to_signal`` keeps what a later micro-batch still looks back
to: a symbol quoted once, long ago, keeps that quote (and with it the quotes after it), and each
micro-batch releases exactly what the reference releases over the input so far. (That the state
stays bounded when every key keeps moving: tests/streaming/test_bounded_state.py.)"""
from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from support.incremental import StreamInput, run_in_steps
from support.streams import P, us

SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, flush=True))
TRADES = sq.input("left", P, sq.Shape.POINT)
QUOTES = sq.input("right", P, sq.Shape.POINT)


def quotes() -> list[Any]:
    # key 0 is quoted once, at the start; keys 1 and 2 every 30 us
    return [sq.Insert(1, 2, P(0, 100, "q", None))] + [
        sq.Insert(t, t + 1, P(1 + (t // 30) % 2, t, "q", None)) for t in range(5, 600, 15)]


def trades() -> list[Any]:
    return [sq.Insert(t, t + 1, P(t // 10 % 3, t, "t", None)) for t in range(10, 600, 10)]


@pytest.mark.slow  # bounded state: the deep tier's (the default tier's budget)
@pytest.mark.parametrize("within", [None, 1_000])
def test_a_key_quoted_long_ago_keeps_its_quote(spark: SparkSession, within: int | None) -> None:
    q = TRADES.as_of_join(QUOTES, lambda t, q: t.k == q.k, lambda t, q: P(t.k, t.v, q.s, q.v),
                          None if within is None else us(within))
    sides = {"left": StreamInput(TRADES, P, sq.Shape.POINT, trades(), SETTINGS),
             "right": StreamInput(QUOTES, P, sq.Shape.POINT, quotes(), SETTINGS)}
    released, carried = run_in_steps(spark, q, sides, [0, 10, 20, 30, 40, 50], sq.Shape.INTERVAL)
    # every trade of key 0 is priced by the quote at 1 (checked against the reference after every step)
    key_0 = [i for i in trades() if i.payload.k == 0]
    assert len(key_0) > 10
    assert [e.payload.o for e in released if e.payload.k == 0] == [100] * len(key_0)
    assert any(i.floor is not None for i in carried.state.inputs.values())


@pytest.mark.slow  # bounded state: the deep tier's (the default tier's budget)
def test_a_signal_keeps_the_last_event_of_each_key(spark: SparkSession) -> None:
    # the windows of the signal: key 0's quote of 1 is in force in every one of them
    q = QUOTES.to_signal(lambda e: e.k).group_by(lambda e: e.k).tumbling_window(us(20)).select(
        lambda w: P(w.key, w.count(), "w", w.min(lambda e: e.v)))
    sides = {"right": StreamInput(QUOTES, P, sq.Shape.POINT, quotes(), SETTINGS)}
    released, carried = run_in_steps(spark, q, sides, [0, 8, 16, 24, 32], sq.Shape.INTERVAL)
    assert [e.payload.o for e in released if e.payload.k == 0] == [100] * 30
    assert carried.state.inputs["right"].floor is not None
