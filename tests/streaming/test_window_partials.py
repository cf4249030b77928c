"""Live hopping and tumbling windows on partial aggregates (``streamql.spark.incremental_windows``):
in micro-batches they release, after every step, exactly what the reference releases over the
input so far, and they carry one row per open window per group, never an input event."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.incremental_windows import incremental_window
from support.incremental import StreamInput, cuts, expected_after, flushing, run_in_steps
from support.streams import SELECTS, WHERES, P, inputs, us

SCALE = int(os.environ.get("STREAMQL_EXAMPLES", "1"))


@dataclass(frozen=True)
class Stats:
    k: int
    n: int
    total: Optional[int]
    mean: Optional[float]
    low: Optional[int]
    high: Optional[int]


def stats(key: int, w: Any) -> Stats:
    return Stats(key, w.count(), w.sum(lambda e: e.o), w.avg(lambda e: e.o), w.min(lambda e: e.v),
                 w.max(lambda e: e.o))


@st.composite
def chains(draw: st.DrawFn, q: sq.Stream[P]) -> sq.Stream[P]:
    """Operators that map each event on their own and cannot open one."""
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["where", "select", "to_point", "shift_back"]))
        if kind == "where":
            q = WHERES[draw(st.integers(0, len(WHERES) - 1))](q)
        elif kind == "select":
            q = SELECTS[draw(st.integers(0, len(SELECTS) - 1))](q)
        elif kind == "to_point":
            q = q.to_point()
        else:
            q = q.shift(-us(draw(st.integers(0, 10))))
    return q


@settings(deadline=None, max_examples=8 * SCALE,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_windows_on_partials_equal_reference_after_every_micro_batch(spark: SparkSession, data: st.DataObject) -> None:
    source = sq.input("in", P, sq.Shape.POINT)
    q = data.draw(chains(source), label="chain")
    size = us(data.draw(st.integers(1, 30), label="size"))
    hop = size if data.draw(st.booleans(), label="tumbling") else us(data.draw(st.integers(1, 30), label="hop"))
    query: sq.Stream[Any]
    if data.draw(st.booleans(), label="grouped"):
        query = q.group_by(lambda e: e.k % 3).hopping_window(size, hop).select(lambda w: stats(w.key, w))
    else:
        query = q.hopping_window(size, hop).select(lambda w: stats(0, w))
    assert incremental_window(query.node) is not None
    note(f"query tree: {query.node!r}")
    items = data.draw(inputs(sq.Shape.POINT), label="items")
    sides = {"in": StreamInput(source, P, sq.Shape.POINT, items, data.draw(flushing(), label="settings"))}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    released, carried = run_in_steps(spark, query, sides, data.draw(cuts(len(items)), label="cuts"), output)
    assert released == expected_after(query, sides, len(items), True, output)
    assert carried.events == {} and carried.released == {} and set(carried.partials) == {"window"}


def test_the_state_is_the_open_windows(spark: SparkSession) -> None:
    # points every 10 us over 3 keys, a CTI at every event; windows of 30 us every 10 us: after a
    # step only the windows the CTI has not reached the end of are carried, three per key at most
    source = sq.input("in", P, sq.Shape.POINT)
    query = source.group_by(lambda e: e.k % 3).hopping_window(us(30), us(10)).select(lambda w: stats(w.key, w))
    items = [sq.Insert(10 * i, 10 * i + 1, P(i, i, "x", i)) for i in range(60)]
    settings_ = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    sides = {"in": StreamInput(source, P, sq.Shape.POINT, items, settings_)}
    released, carried = run_in_steps(spark, query, sides, [0, 20, 40], sq.Shape.INTERVAL, check_every_step=False)
    assert released == expected_after(query, sides, len(items), True, sq.Shape.INTERVAL)
    assert carried.partials["window"].count() == 0  # flushed: every window released
    partway, carried = run_in_steps(spark, query, {"in": StreamInput(
        source, P, sq.Shape.POINT, items, settings_.without_flush())}, [0, 20, 40], sq.Shape.INTERVAL,
        check_every_step=False)
    # the CTI is at the last start (590): the windows [570, 600), [580, 610), [590, 620) are open
    assert sorted(r["_sq_window"] for r in carried.partials["window"].select("_sq_window").distinct().collect()) \
        == [57, 58, 59]
    assert carried.partials["window"].count() <= 9
