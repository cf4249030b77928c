"""A streaming ``length_batch`` drops the first events of each group and numbers the rest from the
count it dropped (its offsets, ``streamql.spark.streaming.retention``): after every micro-batch it has
released what the reference releases over the input so far, with its state written and read back
between micro-batches; where the events it would drop are not the first of their group's order
(a long interval), the input keeps everything until they are."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.query import esper
from streamql.spark.streaming.state import StateStore
from streamql.spark.streaming.retention import CountedBatch, counted_batches
from support.depth import tiered
from support.incremental import StreamInput, run_in_steps
from support.streams import P, us

STEPS, PER_STEP = 8, 10
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5))
POINTS = sq.input("in", P, sq.Shape.POINT)
INTERVALS = sq.input("in", P, sq.Shape.INTERVAL)


def by_key(key: int, e: P) -> P:
    return P(key, e.v, e.s, e.o)


def points() -> list[Any]:
    return [sq.Insert(10 * i, 10 * i + 1, P(i, i % 11, "s", i % 5)) for i in range(STEPS * PER_STEP)]


def run(spark: SparkSession, q: sq.Stream[Any], shape: sq.Shape, items: list[Any], store: Path) -> list[int]:
    """Runs ``q`` in micro-batches through a state store, checking every one against the
    reference; the state's rows after each."""
    sides = {"in": StreamInput(POINTS if shape is sq.Shape.POINT else INTERVALS, P, shape, items, SETTINGS)}
    sizes: list[int] = []
    run_in_steps(spark, q, sides, [PER_STEP * i for i in range(STEPS)], sq.Shape.INTERVAL, store=str(store),
                 sizes=sizes)
    return sizes


def offsets(spark: SparkSession, store: Path) -> list[tuple[Any, ...]]:
    """The offsets of the query's one length batch in the states the store kept (the last two)."""
    states = StateStore(spark, str(store))
    rows: list[tuple[Any, ...]] = []
    for batch in states.committed():
        frame = states.load(batch).partials.get("length_batch/0")
        rows += [] if frame is None else [tuple(r) for r in frame.collect()]
    return rows


QUERIES: dict[str, Callable[[], sq.Stream[Any]]] = {
    # three groups whose batches end at different times: the input's floor cuts into batches
    "per group": lambda: POINTS.group_apply(lambda e: e.k % 3, lambda s: s.length_batch(3), by_key),
    # keep_last holds the input's floor below the batches' boundaries
    "ungrouped, held by another path": lambda: POINTS.length_batch(3).union(POINTS.keep_last(5)),
}


#: bounded state of every family runs in the deep tier (each query is 8 micro-batches checked against the reference)
IN_DEFAULT_TIER: set[str] = set()  # bounded state of every family is the deep tier's (20 s a query)


@pytest.mark.parametrize("name", tiered(sorted(QUERIES), default=IN_DEFAULT_TIER))
def test_offsets_count_the_dropped_events(spark: SparkSession, tmp_path: Path, name: str) -> None:
    sizes = run(spark, QUERIES[name](), sq.Shape.POINT, points(), tmp_path)
    assert max(sizes) <= 60, sizes
    # a late floor fell inside a batch of some group: its offset was written and read back
    assert offsets(spark, tmp_path), "no offset carried"


@pytest.mark.slow  # bounded state: the deep tier's (20 s)
def test_a_long_interval_keeps_the_input_until_it_ends(spark: SparkSession, tmp_path: Path) -> None:
    # the first event lasts until 305: every shorter one after it would go first, so the input
    # keeps everything until it ends, then drops what is before the floor again
    items = [sq.Insert(10 * i, 305 if i == 0 else 10 * i + 2, P(i, i % 11, "s", i % 5))
             for i in range(STEPS * PER_STEP)]
    sizes = run(spark, INTERVALS.where(lambda e: e.v != 3).length_batch(2), sq.Shape.INTERVAL, items, tmp_path)
    assert sizes[2] >= 30, sizes  # everything so far
    assert sizes[-1] < sizes[2], sizes


def test_which_length_batches_count_their_dropped_events() -> None:
    plain = POINTS.where(lambda e: e.v > 1).select(lambda e: P(e.k, e.v + 1, e.s, e.o)).length_batch(3)
    assert list(counted_batches(plain.node).values()) == [CountedBatch("in", (), "length_batch/0", points=True)]
    # events whose lifetimes an operator changed are not the input's: they keep the whole input
    assert counted_batches(POINTS.alter_duration(us(5)).length_batch(3).node) == {}
    assert counted_batches(POINTS.keep_last(2).group_apply(lambda e: e.k % 2, lambda s: s.length_batch(3),
                                                           by_key).node) == {}
    nested = POINTS.where(lambda e: e.v > 1).group_apply(
        lambda e: e.k % 2, lambda s: s.group_apply(lambda e: e.v % 3, lambda t: t.length_batch(2), by_key), by_key)
    [(node, counted)] = counted_batches(nested.node).items()
    assert isinstance(node, esper.LengthBatch) and counted.input == "in" and len(counted.groups) == 2
    # one node over two different group streams: its offsets would be ambiguous
    def batches(s: sq.Stream[P]) -> sq.Stream[P]:
        return s.length_batch(2)
    twice = POINTS.group_apply(lambda e: e.k % 2, batches, by_key).union(
        POINTS.group_apply(lambda e: e.k % 3, batches, by_key))
    assert counted_batches(twice.node) == {}
