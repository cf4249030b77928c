"""Wrong field types in ``select`` constructors, and selects that build no payload."""
from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Optional

import attrs

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int
    voltage: float
    read_at: datetime
    note: Optional[str] = None


@attrs.frozen
class Count:
    meter: str
    n: int


@dataclasses.dataclass(frozen=True)
class Stamp:
    meter: str
    at: datetime


readings = sq.input("readings", Reading)

a = readings.select(lambda e: Count(e.meter, e.meter))  # E: Argument 2 to "Count" has incompatible type "str"; expected "int"
b = readings.select(lambda e: Count(n=e.meter, meter=e.meter))  # E: Argument "n" to "Count" has incompatible type "str"; expected "int"
c = readings.select(lambda e: Count(e.consumption, e.consumption))  # E: Argument 1 to "Count" has incompatible type "int"; expected "str"
d = readings.select(lambda e: Count(e.meter, e.voltage))  # E: Argument 2 to "Count" has incompatible type "float"; expected "int"
e = readings.select(lambda e: Count(e.note, 1))  # E: Argument 1 to "Count" has incompatible type "str | None"; expected "str"
f = readings.select(lambda e: Stamp(e.meter, e.consumption))  # E: Argument 2 to "Stamp" has incompatible type "int"; expected "datetime"
g = readings.select(lambda e: Count(e.meter, sq.if_(e.voltage > 1.0, 1, "many")))  # E: Argument 2 to "Count" has incompatible type "object"; expected "int"
h = readings.select(lambda e: Count(e.meter, sq.length(e.consumption)))  # E: Argument 1 to "length" has incompatible type "int"; expected "str"
i = readings.select(lambda e: Count(sq.coalesce(e.note, e.consumption), 1))  # E: Argument 1 to "Count" has incompatible type "object"; expected "str"

# select must build a payload instance, not a scalar or a tuple
j = readings.select(lambda e: e.consumption)  # E: Value of type variable "Payload" of "select" of "Stream" cannot be "int"
k = readings.select(lambda e: (e.meter, e.consumption))  # E: Value of type variable "Payload" of "select" of "Stream" cannot be "tuple[str, int]"
n = sq.input("numbers", int)  # E: Value of type variable "Payload" of "input" cannot be "int"
