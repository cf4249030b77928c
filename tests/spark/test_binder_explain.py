"""``Binder.explain``: the numbered query tree, then the Spark physical plan with each line named by
the streamql operator it implements."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from support.timelines import EVERY_3, READINGS, MeterAverage, averages, readings


@dataclass(frozen=True)
class Site:
    meter: str
    site: str


@dataclass(frozen=True)
class Located:
    site: str
    average: float


def plan_of(text: str) -> list[tuple[str, str]]:
    """(operator label, plan line) pairs of the plan section."""
    section = text.split("each line names the streamql operator it implements ==\n", 1)[1]
    return [(label.strip(), line.strip()) for label, line in (row.split(" │ ", 1) for row in section.splitlines())]


def owner(plan: list[tuple[str, str]], starts: str) -> set[str]:
    return {label for label, line in plan if line.lstrip(":+- ").removeprefix("*(1) ").startswith(starts)}


@pytest.fixture(scope="module")
def binder(spark: SparkSession) -> sq.Binder:
    df = spark.createDataFrame([(i.start, i.payload.meter, i.payload.consumption) for i in READINGS],
                               "ts timestamp, meter string, consumption double")
    return sq.Binder(spark).bind(readings, df, start="ts", advance_time=EVERY_3)


def test_the_tree_is_numbered_and_each_plan_line_named(binder: sq.Binder, spark: SparkSession) -> None:
    busy = averages.where(lambda a: a.average > 150)
    text = binder.explain(busy)
    assert text.split("\n\n")[0] == """\
== streamql query ==
[1] where((a.average > 150)) -> MeterAverage
│   CTI: the input CTI
└── [2] group_by(e.meter).snapshot_window().select(MeterAverage(meter=key, average=w.avg(e.consumption))) -> MeterAverage
    │   CTI: the input CTI
    └── [3] alter_duration(0:01:00) -> Reading
        │   CTI: the input CTI
        └── [4] input 'readings' (POINT) -> Reading
                CTI: its CTI rows, generation or import"""
    assert "(INTERVAL output)" in text
    plan = plan_of(text)
    if spark.conf.get("spark.sql.adaptive.enabled") == "true":  # its root is Spark's, no operator's
        assert plan[0] == ("spark", "AdaptiveSparkPlan isFinalPlan=false")
    else:
        assert plan[0][0] != "spark"
    # the snapshot sweep: one shuffle by the group key and a running-sum window, nothing global
    assert owner(plan, "Window") == {"[2] snapshot_window"}
    assert owner(plan, "Exchange hashpartitioning") == {"[2] snapshot_window"}
    assert not any("SinglePartition" in line for _, line in plan)
    assert owner(plan, "Scan ExistingRDD") == {"[4] input 'readings'"}
    # the where's condition and the release rule's are filters of their own: an operator's output is
    # fenced, so that a later filter is not inlined into it (docs/architecture.md#plans-grow-linearly)
    assert owner(plan, "Filter") >= {"[1] where", "release"}
    assert all(len(line) <= 150 for _, line in plan)  # long lines are cut
    assert {label for label, _ in plan} >= {"[2] snapshot_window", "[3] alter_duration", "[4] input 'readings'"}


def test_a_join_names_both_inputs_and_the_join(binder: sq.Binder, spark: SparkSession) -> None:
    sites = sq.input("sites", Site, shape=sq.Shape.INTERVAL)
    located = averages.join(sites, lambda a, s: a.meter == s.meter, lambda a, s: Located(s.site, a.average))
    sites_df = spark.createDataFrame([(0, 10**12, "m1", "north"), (0, 10**12, "m2", "south")],
                                     "start long, end long, meter string, site string")
    both = binder.bind(sites, sites_df, start="start", end="end", advance_time=EVERY_3)
    plan = plan_of(both.explain(located, sq.Shape.EDGE))
    labels = {label for label, _ in plan}
    assert {"[1] join", "[2] snapshot_window", "[4] input 'readings'", "[5] input 'sites'"} <= labels
    assert any("[1] join" in label and "SortMergeJoin" in line for label, line in plan)


def test_explain_checks_its_arguments(binder: sq.Binder) -> None:
    with pytest.raises(sq.BindingError, match="output must be a sq.Shape"):
        binder.explain(averages, "EDGE")  # type: ignore[arg-type]
    other = sq.input("other", MeterAverage)
    with pytest.raises(sq.BindingError, match="not bound: other"):
        binder.explain(other.alter_duration(timedelta(seconds=1)))
