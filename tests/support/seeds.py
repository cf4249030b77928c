"""The seed documents' tables, shared by the reference and the Spark seed tests.

Seed 000 (StreamInsight: Event Structure), the power meter stream:

    INSERT 2009-07-15 09:13:33.317  2009-07-15 09:14:09.270  100
    INSERT 2009-07-15 09:14:09.270  2009-07-15 09:14:22.255  200
    INSERT 2009-07-15 09:14:22.255  2009-07-15 09:15:04.987  100

as interval events, and as point events (end = start + one tick).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import streamql as sq
from streamql.events import InputItem

UTC = timezone.utc
TICK = sq.TICK
INF = sq.INFINITY


@dataclasses.dataclass(frozen=True)
class PowerReading:
    consumption: int


@dataclasses.dataclass(frozen=True)
class Watts:
    watts: float


def t(hh: int, mm: int, ss: int, ms: int) -> datetime:
    return datetime(2009, 7, 15, hh, mm, ss, ms * 1000, tzinfo=UTC)


T1, T2, T3, T4 = t(9, 13, 33, 317), t(9, 14, 9, 270), t(9, 14, 22, 255), t(9, 15, 4, 987)
INTERVAL_TABLE: list[InputItem[Any]] = [
    sq.Insert(T1, T2, PowerReading(100)),
    sq.Insert(T2, T3, PowerReading(200)),
    sq.Insert(T3, T4, PowerReading(100)),
]
POINT_TABLE: list[InputItem[Any]] = [
    sq.Insert(T1, T1 + TICK, PowerReading(100)),
    sq.Insert(T2, T2 + TICK, PowerReading(200)),
    sq.Insert(T3, T3 + TICK, PowerReading(100)),
]

METER_INTERVALS = sq.input("meter", PowerReading, shape=sq.Shape.INTERVAL)
METER_POINTS = sq.input("meter", PowerReading, shape=sq.Shape.POINT)


def every_event(delay: timedelta = timedelta(0), flush: bool = False,
                policy: sq.AdvanceTimePolicy = sq.AdvanceTimePolicy.DROP) -> sq.AdvanceTimeSettings:
    """Seed 001: ``new AdvanceTimeGenerationSettings(1, delay, flush)`` — a CTI after every event."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=delay, flush=flush), policy=policy)
