"""A stream of one payload type where another is expected, and wrongly typed results."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import attrs

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int


@attrs.frozen
class Usage:
    meter: str
    kwh: float


@attrs.frozen
class Alert:
    meter: str
    level: str


def alerts(usage: sq.Stream[Usage]) -> sq.Stream[Alert]:
    return usage.select(lambda u: Alert(u.meter, "high"))


def to_usage(readings: sq.Stream[Reading]) -> sq.Stream[Usage]:
    return readings  # E: Incompatible return value type (got "Stream[Reading]", expected "Stream[Usage]")


readings = sq.input("readings", Reading)
usage = readings.select(lambda e: Usage(e.meter, e.consumption / 1000))

wrong_input = alerts(readings)  # E: Argument 1 to "alerts" has incompatible type "Stream[Reading]"; expected "Stream[Usage]"
wrong_chain = alerts(readings.where(lambda e: e.consumption > 0).shift(timedelta(seconds=1)))  # E: Argument 1 to "alerts" has incompatible type "Stream[Reading]"; expected "Stream[Usage]"
declared: sq.Stream[Usage] = sq.input("usage", Reading)  # E: Argument 2 to "input" has incompatible type "type[Reading]"; expected "type[Usage]"
kept: sq.Stream[Reading] = usage.where(lambda u: u.kwh > 1.0)  # E: Incompatible types in assignment (expression has type "Stream[Usage]", variable has type "Stream[Reading]")
selected: sq.Stream[Usage] = usage.select(lambda u: Alert(u.meter, "x"))  # E: has incompatible type "Callable[[Usage], Alert]"; expected "Callable[[Usage], Usage]"  # E: Incompatible return value type (got "Alert", expected "Usage")
fragments: list[sq.Stream[Usage]] = [usage, readings]  # E: List item 1 has incompatible type "Stream[Reading]"; expected "Stream[Usage]"
not_a_stream: sq.Stream[Usage] = Usage("m", 1.0)  # E: Incompatible types in assignment (expression has type "Usage", variable has type "Stream[Usage]")

result = sq.reference.run(usage, {})
wrong_result: sq.Result[Reading] = sq.reference.run(usage, {})  # E: Argument 1 to "run" has incompatible type "Stream[Usage]"; expected "Stream[Reading]"
wrong_event: sq.Event[Reading] = result.events[0]  # E: Incompatible types in assignment (expression has type "Event[Usage]", variable has type "Event[Reading]")
wrong_payload: Reading = result.events[0].payload  # E: Incompatible types in assignment (expression has type "Usage", variable has type "Reading")
wrong_field: int = result.events[0].payload.meter  # E: Incompatible types in assignment (expression has type "str", variable has type "int")
wrong_kwh: int = result.events[0].payload.kwh  # E: Incompatible types in assignment (expression has type "float", variable has type "int")
not_a_list: sq.Event[Usage] = result.events  # E: Incompatible types in assignment (expression has type "list[Event[Usage]]", variable has type "Event[Usage]")
run_on_fragment: sq.Result[Alert] = sq.reference.run(alerts, {})  # E: Argument 1 to "run" has incompatible type "Callable[[Stream[Usage]], Stream[Alert]]"; expected "Stream[Alert]"
