"""Advance-time settings and ``sq.reference.run``: the result is ``sq.Result[T]`` for a
``Stream[T]``, so released payloads are typed. Must pass ``mypy --strict`` with no error.
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import attrs

import streamql as sq
from streamql.reference import ReferenceInput

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int


@attrs.frozen
class Usage:
    meter: str
    kwh: float


generation = sq.AdvanceTimeGeneration(every_events=1, delay=timedelta(0), flush=True)
by_time = sq.AdvanceTimeGeneration(every=timedelta(minutes=1), delay=sq.TICK)
settings = sq.AdvanceTimeSettings(generation=generation, policy=sq.AdvanceTimePolicy.ADJUST)
imported = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport(from_input="readings"))
both = sq.AdvanceTimeSettings(by_time, sq.AdvanceTimeImport("readings"), sq.AdvanceTimePolicy.DROP)
every_events: int | None = generation.every_events
delay: timedelta = by_time.delay
policy: sq.AdvanceTimePolicy = settings.policy

readings = sq.input("readings", Reading)
usage: sq.Stream[Usage] = readings.select(lambda e: Usage(e.meter, e.consumption / 1000))

items: list[sq.Insert[Reading] | sq.Cti] = [
    sq.Insert(T0, T0 + sq.TICK, Reading("m1", 1500)),
    sq.Insert(T0 + timedelta(minutes=1), T0 + timedelta(minutes=1) + sq.TICK, Reading("m2", 500)),
    sq.Cti(T0 + timedelta(minutes=5)),
]
source = ReferenceInput(items, advance_time=settings)
# a list mixing Insert and Cti joins to list[object] without a context: name the payload type
micros = sq.reference.ReferenceInput[Reading]([sq.Insert(0, 1, Reading("m1", 1)), sq.Cti(10)])

result: sq.Result[Usage] = sq.reference.run(usage, {"readings": source})
first: sq.Event[Usage] = result.events[0]
meter: str = result.events[0].payload.meter
kwh: float = result.events[0].payload.kwh
start: datetime = first.start
open_ended: bool = first.end == sq.INFINITY
counts: int = result.dropped + result.adjusted + result.bad_rows
final_cti: datetime | None = result.final_cti

edge_result = sq.reference.run(readings, {"readings": micros}, output=sq.Shape.EDGE)
edge_payloads: list[Reading] = [e.payload for e in edge_result.edges]
starts: list[datetime] = [e.time for e in edge_result.edges if e.kind is sq.EdgeKind.START]
inline = sq.reference.run(readings, {"readings": ReferenceInput([sq.Insert(0, 1, Reading("m", 2)), sq.Cti(10)])})
consumption: int = sum(e.payload.consumption for e in inline.events)

assert meter == "m1" and kwh == 1.5, result
