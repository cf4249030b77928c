"""The range borders of ungrouped snapshot, session and count windows (and of ``keep_last``'s
numbering) come from sketches of the starts that the arrival-order scan's summary pass made
(``Flow.starts``), where the operators between the input and the window keep starts (``where``,
``select``, ``alter_duration``, ``to_point``), move them by a constant (``shift``,
``alter_lifetime``) or put inputs together (``union``): the plan runs no quantile job (a plan may
still run other jobs: the counts per range of a numbering, the output CTI of session and count
windows). Elsewhere (after a join, say) the window computes its borders with a job as before. Borders only spread the
work, so the Result is the reference evaluator's either way."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from streamql import binder as binder_module
from streamql.query.nodes import inputs_of
from streamql.spark.operators.flow import input_flow
from streamql.spark.runtime.phases import Phase, recording
from support.depth import tiered
from support.frames import bind, frame


@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


@dataclass(frozen=True)
class Total:
    value: int


READINGS = sq.input("readings", Reading, sq.Shape.INTERVAL)
OTHERS = sq.input("others", Reading, sq.Shape.INTERVAL)
AT = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4, delay=sq.TICK * 3),
                            policy=sq.AdvanceTimePolicy.ADJUST)


def items(offset: int) -> list[InputItem[Reading]]:
    """Intervals in rising start order, a late one now and then (ADJUST moves its start)."""
    out: list[InputItem[Reading]] = []
    for k in range(30):
        out.append(sq.Insert(7 * k + offset, 7 * k + offset + 5 + k % 9, Reading(k % 3, k)))
        if k % 8 == 7:
            out.append(sq.Insert(7 * k - 20 + offset, 7 * k - 12 + offset, Reading(5, 100 + k)))
    return out


def total(s: sq.Stream[Reading]) -> Callable[[Any], Total]:
    return lambda w: Total(w.sum(lambda e: e.value))


QUERIES: dict[str, sq.Stream[Any]] = {
    "snapshot after where and select": READINGS.where(lambda e: e.value % 4 != 1)
    .select(lambda e: Reading(e.meter, e.value * 2)).snapshot_window().select(total(READINGS)),
    "snapshot after shift and union": READINGS.shift(timedelta(microseconds=3)).union(OTHERS)
    .snapshot_window().select(total(READINGS)),
    "session after alter_duration": READINGS.alter_duration(sq.TICK * 4)
    .session_window(timedelta(microseconds=2)).select(total(READINGS)),
    "count window after to_point": READINGS.to_point().count_window(3).select(total(READINGS)),
    "keep_last": READINGS.keep_last(4),
}


def run(spark: SparkSession, query: sq.Stream[Any]) -> tuple[sq.Result[Any], dict[str, Phase]]:
    """The query's Result and phases."""
    binder = sq.Binder(spark)
    for source, offset in ((READINGS, 0), (OTHERS, 2)):
        df = frame(spark, Reading, sq.Shape.INTERVAL, items(offset), partitions=3)
        binder = bind(binder, source, df, sq.Shape.INTERVAL, AT)
    with recording(spark) as phases:
        result = binder.run(query)
    return result, phases.by_name


def expected(query: sq.Stream[Any]) -> sq.Result[Any]:
    given = {"readings": sq.reference.ReferenceInput(items(0), AT), "others": sq.reference.ReferenceInput(items(2), AT)}
    return sq.reference.run(query, {name: given[name] for name in inputs_of(query.node)})


def plan_jobs(phases: dict[str, Phase]) -> int:
    """The jobs of planning: the plan's own and its range borders' (the quantile job, a phase of its
    own inside the plan)."""
    counts = [phases[name].jobs for name in ("plan", "range borders") if name in phases]
    assert all(c is not None for c in counts)
    return sum(c for c in counts if c is not None)


#: the default tier's cases (the rest run in the deep tier: each runs its query twice)
DEFAULT = ("keep_last",)


@pytest.mark.parametrize("name", tiered(QUERIES, default=DEFAULT))
def test_ungrouped_windows_take_their_borders_from_the_scan(spark: SparkSession, name: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    query = QUERIES[name]
    result, phases = run(spark, query)
    assert result == expected(query)
    assert result.events, "the query releases events"
    # the same run with the scan's sketches thrown away: the borders take a quantile job
    monkeypatch.setattr(binder_module, "input_flow", lambda *args: input_flow(*args[:4]))
    without, phases_without = run(spark, query)
    assert without == result
    assert plan_jobs(phases) < plan_jobs(phases_without)
    if name.startswith("snapshot"):
        assert plan_jobs(phases) == 0


@pytest.mark.slow
def test_after_a_join_the_borders_take_a_job(spark: SparkSession) -> None:
    query = READINGS.join(OTHERS, lambda a, b: a.meter == b.meter, lambda a, b: Reading(a.meter, a.value + b.value)) \
        .snapshot_window().select(total(READINGS))
    result, phases = run(spark, query)
    assert result == expected(query)
    assert phases["range borders"].jobs is not None and phases["range borders"].jobs > 0

