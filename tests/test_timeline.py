"""``sq.timeline.trace``: a run replayed as lanes, dropped/adjusted marks, CTIs and release steps."""
from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.ingress.replay import reference_inputs
from streamql.time import to_micros
from streamql.timeline import Mark, trace, trace_binding
from support.frames import bind, frame
from support.streams import P, advance_settings, build, edge_items, inputs, pipelines
from support.timelines import ADJUST, EVERY_3, READINGS, SESSIONS, T0, MeterAverage, at, averages, readings, sessions
from support.depth import examples

def released(step: Any) -> list[tuple[str, int, int, float]]:
    return sorted((e.payload.meter, int((e.start - T0).total_seconds()), int((e.end - T0).total_seconds()),
                   e.payload.average) for e in step.events)


def test_release_steps_of_a_hand_worked_run() -> None:
    tl = trace(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)})
    # CTIs: 3rd accepted reading (0:25) - 5 s at position 2; 6th (1:30) - 5 s at position 6; the flush
    assert [(s.number, s.position, s.cti) for s in tl.steps] == [
        (1, 2, at(20)), (2, 6, at(85)), (3, None, sq.INFINITY)]
    assert released(tl.steps[0]) == []  # no snapshot of [0:00, 0:20) has ended yet
    assert released(tl.steps[1]) == [("m1", 0, 25, 100.0), ("m1", 25, 60, 150.0), ("m1", 60, 70, 200.0),
                                     ("m1", 70, 85, 175.0), ("m2", 10, 40, 250.0), ("m2", 40, 70, 255.0)]
    assert released(tl.steps[2]) == [("m1", 85, 130, 150.0), ("m1", 130, 190, 120.0), ("m2", 70, 90, 260.0),
                                     ("m2", 90, 100, 265.0), ("m2", 100, 150, 270.0)]
    lane = tl.lane("readings")
    assert [c.time for c in lane.ctis] == [at(20), at(85), sq.INFINITY]
    assert [(b.start, b.mark) for b in lane.bars if b.dropped] == [(at(5), Mark.POINT)]
    assert sum(1 for b in lane.bars if not b.dropped) == 7
    output = tl.lane("output")
    assert output.output and [c.step for c in output.ctis] == [1, 2, 3]
    assert Counter(b.step for b in output.bars) == Counter({2: 6, 3: 5})


def test_group_by_gives_one_output_lane_per_key() -> None:
    tl = trace(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)}, group_by=lambda a: a.meter)
    assert [lane.name for lane in tl.lanes] == ["readings", "output m1", "output m2"]
    assert [len(lane.bars) for lane in tl.lanes[1:]] == [6, 5]


def test_adjusted_and_open_events_and_edge_output_steps() -> None:
    tl = trace(sessions, {"sessions": sq.reference.ReferenceInput(SESSIONS, ADJUST)}, sq.Shape.EDGE)
    bars = {b.payload.user: b for b in tl.lane("sessions").bars}
    assert bars["b"].adjusted and bars["b"].original_start == at(5) and bars["b"].start == at(10)
    assert bars["b"].mark is Mark.OPEN and bars["c"].mark is Mark.OPEN
    assert (bars["a"].start, bars["a"].end, bars["a"].mark) == (at(0), at(20), Mark.INTERVAL)
    out = {b.payload.user: b for b in tl.lane("output").bars}
    # a's start edge is released by the CTI of 0:10 (step 1); its end edge as soon as it arrives, the
    # event having started before the CTI (step 2, CTI unchanged); b's start edge by the CTI of 0:30
    assert [(s.position, s.cti) for s in tl.steps] == [(1, at(10)), (3, at(10)), (4, at(30))]
    assert (out["a"].step, out["a"].end_step) == (1, 2)
    assert (out["b"].step, out["b"].end_step, out["b"].mark) == (3, None, Mark.OPEN)
    assert "c" not in out  # no CTI after 0:40: its start edge is never released


def test_a_given_result_is_drawn_and_matched_to_the_replays_steps() -> None:
    given_inputs = {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)}
    result = sq.reference.run(averages, given_inputs)
    extra = sq.Event(at(500), at(501), MeterAverage("m9", 1.0))
    shown = sq.Result(result.events + [extra], [], result.dropped, result.adjusted, result.bad_rows,
                      result.final_cti)
    tl = trace(averages, given_inputs, result=shown)
    steps = {(b.payload.meter, b.start): b.step for b in tl.lane("output").bars}
    assert steps[("m9", at(500))] is None and steps[("m1", at(0))] == 2 and steps[("m2", at(100))] == 3


def test_more_items_than_max_events_is_an_error_naming_the_limit() -> None:
    with pytest.raises(sq.BindingError, match="8 input items, more than max_events=5"):
        trace(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)}, max_events=5)


source = sq.input("s", P, shape=sq.Shape.INTERVAL)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=inputs(sq.Shape.INTERVAL), ops=pipelines(), advance=advance_settings(),
       output=st.sampled_from([sq.Shape.INTERVAL, sq.Shape.POINT, sq.Shape.EDGE]))
def test_release_steps_partition_the_result_and_follow_the_prefix_runs(
        items: list[Any], ops: list[tuple[str, Any]], advance: sq.AdvanceTimeSettings | None,
        output: sq.Shape) -> None:
    q = build(source, ops)
    given_inputs = {"s": sq.reference.ReferenceInput(items, advance)}
    tl = trace(q, given_inputs, output)
    final = sq.reference.run(q, given_inputs, output)
    values = final.edges if output is sq.Shape.EDGE else final.events
    # every released event in exactly one step, nothing else
    assert Counter(v for s in tl.steps for v in s.released) == Counter(values)
    assert [s.cti for s in tl.steps] == sorted({s.cti for s in tl.steps})
    assert tl.steps == [] or tl.steps[-1].cti == final.final_cti
    # what was released up to a step is what the reference releases over the input up to it
    for s in tl.steps:
        if s.position is None:
            continue
        no_flush = None if advance is None else advance.without_flush()
        prefix = sq.reference.run(q, {"s": sq.reference.ReferenceInput(items[:s.position + 1], no_flush)}, output)
        upto = Counter(v for earlier in tl.steps[:s.number] for v in earlier.released)
        assert upto == Counter(prefix.edges if output is sq.Shape.EDGE else prefix.events)
        assert prefix.final_cti == s.cti
    lane = tl.lane("s")
    assert sum(1 for b in lane.bars if b.dropped) == final.dropped
    assert sum(1 for b in lane.bars if b.adjusted) == final.adjusted


# --- from Spark ----------------------------------------------------------------------------


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data(), shape=st.sampled_from([sq.Shape.INTERVAL, sq.Shape.POINT, sq.Shape.EDGE]),
       shuffled=st.booleans())
def test_bound_dataframes_replay_as_their_items(spark: SparkSession, data: st.DataObject, shape: sq.Shape,
                                                shuffled: bool) -> None:
    items = data.draw(edge_items() if shape is sq.Shape.EDGE else inputs(shape))
    declared = sq.input("s", P, shape=shape)
    binder = bind(sq.Binder(spark), declared, frame(spark, P, shape, items, arrival=shuffled), shape, None,
                  arrival=shuffled)
    replayed = reference_inputs(binder, declared, 1000)
    assert [in_micros(i) for i in replayed["s"].events] == [in_micros(i) for i in items]


def in_micros(item: Any) -> Any:
    """An input item with its times as integer microseconds (a datetime and its microseconds are one time)."""
    times = {name: to_micros(getattr(item, name)) for name in ("start", "end", "time") if hasattr(item, name)}
    return attrs.evolve(item, **times)


def test_a_spark_run_is_traced_with_sparks_output(spark: SparkSession) -> None:
    df = spark.createDataFrame([(i.start, i.payload.meter, i.payload.consumption) for i in READINGS],
                               "ts timestamp, meter string, consumption double")
    binder = sq.Binder(spark).bind(readings, df, start="ts", advance_time=EVERY_3)
    tl = trace_binding(binder, averages)
    expected = trace(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)})
    assert tl.steps == expected.steps and tl.lanes == expected.lanes
    assert tl.result == binder.run(averages)
    with pytest.raises(sq.BindingError, match=r"'readings' has 8 rows, more than max_events=7"):
        trace_binding(binder, averages, max_events=7)
