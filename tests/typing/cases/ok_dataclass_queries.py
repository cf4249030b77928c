"""Well-typed queries over dataclass payloads: every stateless and lifetime operator.

Must pass ``mypy --strict`` with no error (and runs: the queries are also valid at runtime).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Optional

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Location:
    building: str
    floor: int


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int
    voltage: float
    tariff: Decimal
    read_at: datetime
    location: Location
    note: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Usage:
    meter: str
    kwh: float


@dataclasses.dataclass(frozen=True)
class Placed:
    meter: str
    building: str
    floor: int
    late: bool


readings: sq.Stream[Reading] = sq.input("readings", Reading)
intervals: sq.Stream[Reading] = sq.input("intervals", Reading, shape=sq.Shape.INTERVAL)
edges: sq.Stream[Reading] = sq.input("edges", Reading, sq.Shape.EDGE)

# where: comparisons, & and |, string methods all type as bool. (`~cond` does not: typeshed
# types bool.__invert__ as int, so a negated condition is written with != or == False.)
busy: sq.Stream[Reading] = readings.where(lambda e: e.consumption > 100)
in_range = readings.where(lambda e: (e.voltage >= 220.0) & (e.voltage <= 240.0))
odd = readings.where(lambda e: (e.consumption % 2 == 1) | (e.meter != "m0"))
prefixed = readings.where(lambda e: e.meter.upper().startswith("M") & e.meter.endswith("7"))
dear = readings.where(lambda e: e.tariff + e.tariff > Decimal("0.50"))
recent = readings.where(lambda e: e.read_at >= datetime(2024, 1, 1, tzinfo=timezone.utc))
ground = readings.where(lambda e: e.location.floor == 0)
sliced = readings.where(lambda e: e.meter[0:2] == "m-")

# select: positional and keyword constructor arguments, arithmetic, nested fields
usage: sq.Stream[Usage] = readings.select(lambda e: Usage(e.meter, e.consumption / 1000))
usage_kw = readings.select(lambda e: Usage(meter=e.meter.lower(), kwh=e.consumption * 1.5 + 1))
usage_int = readings.select(lambda e: Usage(e.meter, e.consumption))  # int into a float field
placed: sq.Stream[Placed] = readings.select(
    lambda e: Placed(e.meter, e.location.building, e.location.floor + 1, e.consumption > 10)
)
rounded = usage.select(lambda u: Usage(u.meter, round(u.kwh, 2)))
relocated = readings.select(lambda e: Location(e.location.building.strip(), -e.location.floor))

# lifetimes
three_minutes: sq.Stream[Reading] = readings.alter_duration(timedelta(minutes=3))
by_payload = readings.alter_duration(lambda e: timedelta(seconds=1) * e.consumption)
from_field = readings.alter_duration(lambda e: e.read_at - datetime(2024, 1, 1, tzinfo=timezone.utc))
moved = intervals.alter_lifetime(timedelta(seconds=-5))
moved_kw = intervals.alter_lifetime(start_shift=timedelta(seconds=5), duration=timedelta(minutes=1))
resized = intervals.alter_lifetime(duration=timedelta(hours=1))
later: sq.Stream[Reading] = readings.shift(timedelta(hours=1))
earlier = edges.shift(-sq.TICK)
points: sq.Stream[Reading] = intervals.to_point()

# chains keep the payload type through every operator
chained: sq.Stream[Usage] = (
    readings.where(lambda e: e.consumption > 0)
    .alter_duration(timedelta(minutes=5))
    .shift(timedelta(seconds=30))
    .select(lambda e: Usage(e.meter, e.voltage))
    .where(lambda u: u.kwh < 10.0)
    .to_point()
)
payload_type: type[Usage] = chained.payload_type
