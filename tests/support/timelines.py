"""A small hand-worked run shared by the timeline and plot tests: readings of two meters, a
grouped snapshot average, CTIs every three readings (one reading late and dropped); and sessions
as EDGE events."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import streamql as sq

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
averages = (readings.alter_duration(timedelta(seconds=60)).group_by(lambda e: e.meter).snapshot_window()
            .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))
# arrival order; the fifth reading (at 0:05) comes after the CTI of 0:20 and is dropped
READINGS = [sq.Insert(at(s), at(s) + sq.TICK, Reading(m, float(c))) for s, m, c in
            [(0, "m1", 100), (10, "m2", 250), (25, "m1", 200), (40, "m2", 260), (5, "m1", 999),
             (70, "m1", 150), (90, "m2", 270), (130, "m1", 120)]]
EVERY_3 = sq.AdvanceTimeSettings(
    generation=sq.AdvanceTimeGeneration(every_events=3, delay=timedelta(seconds=5), flush=True),
    policy=sq.AdvanceTimePolicy.DROP)


@dataclass(frozen=True)
class Session:
    user: str


sessions = sq.input("sessions", Session, shape=sq.Shape.EDGE)

# CTIs from the CTI items only (generation never fires); late events are adjusted
ADJUST = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1000, delay=timedelta(0)),
                                policy=sq.AdvanceTimePolicy.ADJUST)
SESSIONS: list[sq.StartEdge[Session] | sq.EndEdge[Session] | sq.Cti] = [
    sq.StartEdge(at(0), Session("a")), sq.Cti(at(10)),
    sq.StartEdge(at(5), Session("b")),  # late: its start moves to the CTI, 0:10
    sq.EndEdge(at(0), at(20), Session("a")), sq.Cti(at(30)),
    sq.StartEdge(at(40), Session("c")),  # never ends
]
