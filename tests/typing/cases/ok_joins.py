"""Well-typed multi-stream and Esper-style queries: ``join`` (with a predicate and with
``on=None``), ``anti_join``, ``clip``, ``union`` and ``keep_last``, ``time_batch``,
``length_batch``, each with the payload type it produces.

Must pass ``mypy --strict`` with no error (and runs: the queries are also valid at runtime).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Optional

import attrs

import streamql as sq
from streamql.reference import ReferenceInput

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SECOND = timedelta(seconds=1)


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    watts: int


@attrs.frozen
class MeterSite:
    meter: str
    site: str
    limit: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Located:
    meter: str
    site: str
    watts: int


@dataclasses.dataclass(frozen=True)
class Outage:
    meter: str


@dataclasses.dataclass(frozen=True)
class Total:
    watts: int


readings: sq.Stream[Reading] = sq.input("readings", Reading)
sites: sq.Stream[MeterSite] = sq.input("sites", MeterSite, shape=sq.Shape.INTERVAL)
outages: sq.Stream[Outage] = sq.input("outages", Outage, shape=sq.Shape.EDGE)

# join: the predicate sees (left, right), the select builds the output payload
located: sq.Stream[Located] = readings.join(
    sites, lambda r, s: r.meter == s.meter, lambda r, s: Located(r.meter, s.site, r.watts))
over_limit: sq.Stream[Located] = readings.join(
    sites, lambda r, s: (r.meter == s.meter) & (r.watts > sq.coalesce(s.limit, 0)),
    lambda r, s: Located(meter=r.meter, site=s.site, watts=r.watts - sq.coalesce(s.limit, 0)))
every_pair = readings.join(outages, None, lambda r, o: Outage(o.meter))
every_pair_typed: sq.Stream[Outage] = every_pair

# anti_join and clip keep the left payload type
served: sq.Stream[Reading] = readings.anti_join(outages, lambda r, o: r.meter == o.meter)
alone: sq.Stream[Reading] = readings.anti_join(sites, None)
clipped: sq.Stream[MeterSite] = sites.clip(readings, lambda s, r: (s.meter == r.meter) & (r.watts == 0))

# union: any number of streams of one payload type
merged: sq.Stream[Reading] = readings.union(served, alone.where(lambda r: r.watts > 0))
nothing_more: sq.Stream[Reading] = readings.union()

# Esper-style lifetimes keep the payload type, and compose with windows
last5: sq.Stream[Reading] = readings.keep_last(5)
filtered_first: sq.Stream[Reading] = readings.where(lambda r: r.watts >= 200).keep_last(5)
filtered_after: sq.Stream[Reading] = readings.keep_last(5).where(lambda r: r.watts >= 200)
batches: sq.Stream[Reading] = readings.time_batch(SECOND)
batch_sums: sq.Stream[Total] = readings.time_batch(SECOND).tumbling_window(SECOND).select(
    lambda w: Total(w.sum(lambda r: r.watts)))
length_batches: sq.Stream[Total] = readings.length_batch(3).snapshot_window().select(
    lambda w: Total(w.sum(lambda r: r.watts)))
chained: sq.Stream[Located] = located.keep_last(2).union(over_limit.length_batch(2))

# results are typed
items: list[sq.Insert[Reading] | sq.Cti] = [sq.Insert(T0, T0 + sq.TICK, Reading("m1", 100)), sq.Cti(T0 + SECOND)]
result: sq.Result[Reading] = sq.reference.run(last5, {"readings": ReferenceInput(items)}, output=sq.Shape.EDGE)
inserted: list[str] = [e.payload.meter for e in result.edges if e.kind is sq.EdgeKind.START]
joined: sq.Result[Located] = sq.reference.run(located, {
    "readings": ReferenceInput(items),
    "sites": ReferenceInput([sq.Insert(T0, T0 + SECOND, MeterSite("m1", "north")), sq.Cti(T0 + SECOND)])})
site_names: list[str] = [e.payload.site for e in joined.events]
