"""Misspelled and missing fields: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from typing import Optional

import attrs

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Location:
    building: str
    floor: int


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int
    location: Location
    note: Optional[str] = None


@attrs.frozen
class Usage:
    meter: str
    kwh: float


readings = sq.input("readings", Reading)
usage = readings.select(lambda e: Usage(e.meter, e.consumption / 1000))

a = readings.where(lambda e: e.consumtion > 100)  # E: "Reading" has no attribute "consumtion"; maybe "consumption"?
b = readings.select(lambda e: Usage(e.metre, 1.0))  # E: "Reading" has no attribute "metre"
c = readings.where(lambda e: e.location.flor == 3)  # E: "Location" has no attribute "flor"
d = usage.where(lambda u: u.consumption > 1)  # E: "Usage" has no attribute "consumption"
e = usage.alter_duration(lambda u: u.duration)  # E: "Usage" has no attribute "duration"
f = readings.select(lambda e: Usage(e.meter, kw=1.0))  # E: Unexpected keyword argument "kw" for "Usage"
g = readings.select(lambda e: Usage(e.meter))  # E: Missing positional argument "kwh" in call to "Usage"

result = sq.reference.run(usage, {})
kwh = result.events[0].payload.kw  # E: "Usage" has no attribute "kw"
start = result.events[0].begin  # E: "Event[Usage]" has no attribute "begin"
