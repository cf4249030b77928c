"""Mistakes in top-k per window: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import streamql as sq

HOUR = timedelta(hours=1)


@dataclasses.dataclass(frozen=True)
class Reading:
    region: str
    meter: str
    kwh: float


@dataclasses.dataclass(frozen=True)
class Top:
    meter: str
    rank: int


readings = sq.input("readings", Reading)

a = readings.tumbling_window(HOUR).top_k("3", lambda e: e.kwh, lambda e, rank: Top(e.meter, rank))  # E: Argument 1 to "top_k" of "Windowed" has incompatible type "str"; expected "int"
# a misspelled field in by
b = readings.tumbling_window(HOUR).top_k(3, lambda e: e.kw, lambda e, rank: Top(e.meter, rank))  # E: "Reading" has no attribute "kw"; maybe "kwh"?
# the rank is an int: Top.meter wants a str
c = readings.snapshot_window().top_k(3, lambda e: e.kwh, lambda e, rank: Top(rank, rank))  # E: Argument 1 to "Top" has incompatible type "int"; expected "str"
# select builds a payload, not a plain value
d = readings.snapshot_window().top_k(3, lambda e: e.kwh, lambda e, rank: rank)  # E: Value of type variable "Payload" of "top_k" of "Windowed" cannot be "int"
# the result is a Stream of what select builds
e: sq.Stream[Reading] = readings.group_by(lambda e: e.region).tumbling_window(HOUR).top_k(1, lambda e: e.kwh, lambda e, rank: Top(e.meter, rank))  # E: Argument 3 to "top_k" of "GroupedWindowed" has incompatible type  # E: Incompatible return value type (got "Top", expected "Reading")
# descending is a bool
f = readings.count_window(5).top_k(1, lambda e: e.kwh, lambda e, rank: Top(e.meter, rank), descending="no")  # E: Argument "descending" to "top_k" of "Windowed" has incompatible type "str"; expected "bool"
