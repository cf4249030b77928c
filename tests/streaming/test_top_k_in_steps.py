"""Top-k per window live: in micro-batches the incremental step releases, after every micro-batch,
exactly what the reference releases over the input so far (batch equals streaming). A window with
a top_k keeps what a window with a user-defined aggregate keeps (its retention floor is the
window's), and never runs on the partial aggregates of plain sums."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Optional

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.streaming.partials import incremental_window
from support.depth import spark_examples
from support.incremental import StreamInput, cuts, expected_after, flushing, run_in_steps
from support.streams import P, SPARK_EXAMPLES, build, inputs, pipelines, side_by_side, us
from support.top_k_cases import CASES, POINTS, Reading, meter_readings, point, top_3_meters_per_hour


@dataclass(frozen=True)
class Ranked:
    k: int
    v: int
    rank: int
    o: Optional[int]


def test_top_k_does_not_run_on_partial_aggregates() -> None:
    """A hopping window of points through per-event operators runs on partials when it sums; with
    a top_k it needs its members, so the step keeps the events (the re-evaluating step)."""
    hourly = POINTS.where(lambda e: sq.coalesce(e.kwh, 0.0) > 0).tumbling_window(timedelta(hours=1))
    assert incremental_window(hourly.select(lambda w: Ranked(w.count(), 0, 0, None)).node) is not None
    assert incremental_window(top_3_meters_per_hour().node) is None
    assert incremental_window(hourly.top_k(3, lambda e: e.kwh, lambda e, r: Ranked(r, 0, r, None)).node) is None


@pytest.mark.slow
def test_top_3_meters_per_hour_in_micro_batches(spark: SparkSession) -> None:
    q = top_3_meters_per_hour()
    items = meter_readings()
    settings_ = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    sides = {"points": StreamInput(POINTS, Reading, sq.Shape.POINT, items, settings_)}
    # releases are checked against the reference after every micro-batch
    released, _ = run_in_steps(spark, q, sides, [0, 3, 5], sq.Shape.INTERVAL)
    assert released == expected_after(q, sides, len(items), True, sq.Shape.INTERVAL)
    case = next(c for c in CASES if c.name == "top 3 meters per hour")
    assert sorted(released, key=repr) == sorted(case.events(), key=repr)


BYS: list[Callable[[P], Any]] = [lambda e: e.v, lambda e: e.o, lambda e: e.s]


@st.composite
def top_k_windows(draw: st.DrawFn, q: sq.Stream[P]) -> sq.Stream[Ranked]:
    kind = draw(st.sampled_from(["snapshot", "hopping", "tumbling", "count", "session"]))
    windowed: Any = q.group_by(lambda e: e.k % 3) if draw(st.booleans()) else q
    if kind == "snapshot":
        windowed = windowed.snapshot_window()
    elif kind == "hopping":
        windowed = windowed.hopping_window(us(draw(st.integers(1, 30))), us(draw(st.integers(1, 30))))
    elif kind == "tumbling":
        windowed = windowed.tumbling_window(us(draw(st.integers(1, 30))))
    elif kind == "count":
        windowed = windowed.count_window(draw(st.integers(1, 3)))
    else:
        windowed = windowed.session_window(us(draw(st.integers(1, 10))))
    result: sq.Stream[Ranked] = windowed.top_k(draw(st.integers(1, 3)), draw(st.sampled_from(BYS)),
                                               lambda e, rank: Ranked(e.k, e.v, rank, e.o),
                                               descending=draw(st.booleans()))
    return result


@pytest.mark.slow
@settings(SPARK_EXAMPLES, max_examples=spark_examples(5, least=1))
@given(data=st.data())
def test_top_k_in_micro_batches_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True)), label="items")
    source = sq.input("in", P, shape)
    q = data.draw(top_k_windows(build(source, data.draw(pipelines(), label="pipeline"))), label="window")
    note(f"query tree: {q.node!r}")
    sides = {"in": StreamInput(source, P, shape, items, data.draw(flushing(), label="settings"))}
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    released, _ = run_in_steps(spark, q, sides, data.draw(cuts(len(items)), label="cuts"), output)
    expected = expected_after(q, sides, len(items), True, output)
    event(f"released {'some' if expected else 'none'}")
    assert released == expected


def test_top_k_keeps_only_what_open_windows_need(spark: SparkSession) -> None:
    """Tumbling windows of 15 minutes: after every micro-batch the state holds no reading that ends
    before the output floor less the window's size (the retention floor of the same window with a
    select), and the releases equal the reference's."""
    items = [point(5 * i, Reading("north", f"m{i % 4}", float(i % 7))) for i in range(25)]
    q = POINTS.tumbling_window(timedelta(minutes=15)).top_k(1, lambda e: e.kwh, lambda e, r: Ranked(r, 0, r, None))
    settings_ = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    sides = {"points": StreamInput(POINTS, Reading, sq.Shape.POINT, items, settings_)}
    size = 15 * 60 * 1_000_000
    released, _ = run_in_steps(spark, q, sides, [0, 8, 16], sq.Shape.INTERVAL,
                               state_bounds={"points": lambda floor: floor - size})
    assert released == expected_after(q, sides, len(items), True, sq.Shape.INTERVAL)
