"""Mistakes in multi-stream and Esper-style queries: mypy reports each on its line, as the marker
comments say."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import attrs

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    watts: int


@attrs.frozen
class MeterSite:
    meter: str
    site: str


@dataclasses.dataclass(frozen=True)
class Located:
    meter: str
    site: str
    watts: int


@dataclasses.dataclass(frozen=True)
class Outage:
    meter: str


readings = sq.input("readings", Reading)
sites = sq.input("sites", MeterSite, shape=sq.Shape.INTERVAL)
outages = sq.input("outages", Outage)

# union needs streams of one payload type
a = readings.union(sites)  # E: Argument 1 to "union" of "Stream" has incompatible type "Stream[MeterSite]"; expected "Stream[Reading]"
b = readings.union(readings, outages)  # E: Argument 2 to "union" of "Stream" has incompatible type "Stream[Outage]"; expected "Stream[Reading]"

# misspelled fields in a predicate or a select of two payloads
c = readings.join(sites, lambda r, s: r.meter == s.metre, lambda r, s: Located(r.meter, s.site, r.watts))  # E: "MeterSite" has no attribute "metre"
d = readings.join(sites, lambda r, s: r.meter == s.meter, lambda r, s: Located(r.meter, s.sight, r.watts))  # E: "MeterSite" has no attribute "sight"
e = readings.join(sites, None, lambda r, s: Located(r.meter, s.site, r.wats))  # E: "Reading" has no attribute "wats"; maybe "watts"?
f = readings.anti_join(outages, lambda r, o: r.meter == o.meters)  # E: "Outage" has no attribute "meters"; maybe "meter"?
g = sites.clip(readings, lambda s, r: s.meter == r.metre)  # E: "Reading" has no attribute "metre"

# a select of the wrong payload type, or of no payload at all
h: sq.Stream[Located] = readings.join(sites, None, lambda r, s: Outage(r.meter))  # E: Argument 3 to "join" of "Stream" has incompatible type "Callable[[Reading, MeterSite], Outage]"; expected "Callable[[Reading, MeterSite], Located]"  # E: Incompatible return value type (got "Outage", expected "Located")
i = readings.join(sites, None, lambda r, s: r.watts)  # E: Value of type variable "Payload" of "join" of "Stream" cannot be "int"
j = readings.join(sites, None, lambda r, s: Located(r.meter, s.site, s.site))  # E: Argument 3 to "Located" has incompatible type "str"; expected "int"
k = readings.join(sites, lambda r, s: r.watts, lambda r, s: Outage(r.meter))  # E: Argument 2 to "join" of "Stream" has incompatible type "Callable[[Reading, MeterSite], int]"  # E: Incompatible return value type (got "int", expected "bool")

# anti_join and clip keep the left payload type; clip needs a predicate
m: sq.Stream[Outage] = readings.anti_join(outages, None)  # E: Incompatible types in assignment (expression has type "Stream[Reading]", variable has type "Stream[Outage]")
n: sq.Stream[MeterSite] = readings.clip(sites, lambda r, s: r.meter == s.meter)  # E: Incompatible types in assignment (expression has type "Stream[Reading]", variable has type "Stream[MeterSite]")
o = readings.clip(sites, None)  # E: Argument 2 to "clip" of "Stream" has incompatible type "None"

# Esper-style parameters
p = readings.keep_last(timedelta(seconds=5))  # E: Argument 1 to "keep_last" of "Stream" has incompatible type "timedelta"; expected "int"
q = readings.time_batch(5)  # E: Argument 1 to "time_batch" of "Stream" has incompatible type "int"; expected "timedelta"
r = readings.length_batch("3")  # E: Argument 1 to "length_batch" of "Stream" has incompatible type "str"; expected "int"
s: sq.Stream[Outage] = readings.keep_last(5)  # E: Incompatible types in assignment (expression has type "Stream[Reading]", variable has type "Stream[Outage]")
