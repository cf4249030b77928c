"""``Stream.explain()``: the query tree, payload types and CTI rules as stable text."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import streamql as sq


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class Usage:
    meter: str
    kilowatts: float


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


@dataclass(frozen=True)
class Site:
    meter: str
    site: str


@dataclass(frozen=True)
class Located:
    site: str
    kilowatts: float


@dataclass(frozen=True)
class Count:
    n: int


readings = sq.input("readings", Reading)
usage = (readings.where(lambda e: e.consumption > 0)
         .select(lambda e: Usage(e.meter, e.consumption / 1000))
         .alter_duration(timedelta(minutes=3)))


def test_a_pipeline_lists_each_operator_its_type_and_cti_rule() -> None:
    assert usage.explain() == """\
alter_duration(0:03:00) -> Usage
│   CTI: the input CTI
└── select(Usage(meter=e.meter, kilowatts=(e.consumption / 1000))) -> Usage
    │   CTI: the input CTI
    └── where((e.consumption > 0)) -> Reading
        │   CTI: the input CTI
        └── input 'readings' (POINT) -> Reading
                CTI: its CTI rows, generation or import"""


def test_windows_show_their_kind_grouping_aggregates_and_cti_rule() -> None:
    averages = (readings.alter_duration(timedelta(minutes=3)).group_by(lambda e: e.meter).snapshot_window()
                .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))
    hourly = readings.hopping_window(timedelta(hours=1), timedelta(minutes=15)).select(lambda w: Count(w.count()))
    assert averages.explain().splitlines()[:2] == [
        "group_by(e.meter).snapshot_window().select(MeterAverage(meter=key, average=w.avg(e.consumption)))"
        " -> MeterAverage",
        "│   CTI: the input CTI",
    ]
    assert hourly.explain().splitlines()[:2] == [
        "hopping_window(1:00:00, 0:15:00).select(Count(n=w.count())) -> Count",
        "│   CTI: the start of the earliest window not yet stable, or the input CTI if earlier",
    ]


def test_multi_stream_operators_show_both_branches() -> None:
    sites = sq.input("sites", Site, shape=sq.Shape.EDGE)
    located = usage.shift(timedelta(seconds=1)).join(
        sites, lambda u, s: u.meter == s.meter, lambda u, s: Located(s.site, u.kilowatts))
    either = located.union(located.where(lambda e: e.kilowatts > 1))
    assert either.explain() == """\
union of 2 -> Located
│   CTI: the least of the inputs' CTIs
├── join(on=(u.meter == s.meter), select=Located(site=s.site, kilowatts=u.kilowatts)) -> Located
│   │   CTI: the least of the inputs' CTIs
│   ├── shift(0:00:01) -> Usage
│   │   │   CTI: the input CTI moved by 0:00:01
│   │   └── alter_duration(0:03:00) -> Usage
│   │       │   CTI: the input CTI
│   │       └── select(Usage(meter=e.meter, kilowatts=(e.consumption / 1000))) -> Usage
│   │           │   CTI: the input CTI
│   │           └── where((e.consumption > 0)) -> Reading
│   │               │   CTI: the input CTI
│   │               └── input 'readings' (POINT) -> Reading
│   │                       CTI: its CTI rows, generation or import
│   └── input 'sites' (EDGE) -> Site
│           CTI: its CTI rows, generation or import
└── where((e.kilowatts > 1)) -> Located
    │   CTI: the input CTI
    └── join(on=(u.meter == s.meter), select=Located(site=s.site, kilowatts=u.kilowatts)) -> Located
        │   CTI: the least of the inputs' CTIs
        ├── shift(0:00:01) -> Usage
        │   │   CTI: the input CTI moved by 0:00:01
        │   └── alter_duration(0:03:00) -> Usage
        │       │   CTI: the input CTI
        │       └── select(Usage(meter=e.meter, kilowatts=(e.consumption / 1000))) -> Usage
        │           │   CTI: the input CTI
        │           └── where((e.consumption > 0)) -> Reading
        │               │   CTI: the input CTI
        │               └── input 'readings' (POINT) -> Reading
        │                       CTI: its CTI rows, generation or import
        └── input 'sites' (EDGE) -> Site
                CTI: its CTI rows, generation or import"""


def test_group_apply_shows_its_sub_query_and_esper_operators_their_rules() -> None:
    per_meter = readings.group_apply(
        lambda e: e.meter,
        lambda s: s.keep_last(3).time_batch(timedelta(seconds=10)).tumbling_window(timedelta(hours=1))
        .select(lambda w: Count(w.count())),
        lambda meter, c: MeterAverage(meter, c.n * 1.0))
    assert per_meter.explain() == """\
group_apply(key=e.meter, result=MeterAverage(meter=key, average=(c.n * 1.0))) -> MeterAverage
│   CTI: the sub-query's rule applied to the input CTI, least over the groups
├── input 'readings' (POINT) -> Reading
│       CTI: its CTI rows, generation or import
└── apply: tumbling_window(1:00:00).select(Count(n=w.count())) -> Count
    │   CTI: the start of the earliest window not yet stable, or the input CTI if earlier
    └── time_batch(0:00:10) -> Reading
        │   CTI: the end of the batch holding the input CTI
        └── keep_last(3) -> Reading
            │   CTI: the input CTI
            └── the group's stream -> Reading
                    CTI: the CTI of the grouped stream (every group sees the same CTIs)"""
