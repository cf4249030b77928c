"""Draw a query's run on sample data and print what each output CTI released.

    python examples/timeline.py [picture.png]

Runs the 3-minute sliding average per meter over twelve readings in the reference evaluator
(no JVM), saves the timeline picture (default: timeline.png) and prints the release steps.
Needs the ``plot`` extra: ``pip install -e '.[plot]'``.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import streamql as sq
from streamql.reference import ReferenceInput


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float  # watts


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


T0 = datetime(2009, 7, 15, 9, 0, tzinfo=timezone.utc)


def reading(minute: int, meter: str, watts: float) -> sq.Insert[Reading]:
    at = T0 + timedelta(minutes=minute)
    return sq.Insert(at, at + sq.TICK, Reading(meter, watts))


def main(picture: str) -> None:
    readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
    averages = (readings.alter_duration(timedelta(minutes=3)).group_by(lambda e: e.meter).snapshot_window()
                .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))
    # arrival order: the reading of 9:02 arrives after the CTI of 9:03 and is dropped
    items = [reading(m, meter, w) for m, meter, w in
             [(0, "m1", 100.0), (1, "m2", 250.0), (3, "m1", 200.0), (4, "m2", 240.0), (7, "m1", 150.0),
              (2, "m1", 120.0), (9, "m2", 270.0), (11, "m1", 180.0), (13, "m2", 260.0), (14, "m1", 90.0),
              (16, "m2", 230.0), (18, "m1", 110.0)]]
    settings = sq.AdvanceTimeSettings(
        sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(minutes=1), flush=True),
        policy=sq.AdvanceTimePolicy.DROP)
    inputs = {"readings": ReferenceInput(items, settings)}

    figure = sq.plot.timeline(averages, inputs, group_by=lambda a: a.meter,
                              labels={"readings": lambda e: e.meter, "output": lambda a: f"{a.average:.0f}"})
    figure.savefig(picture)
    print(f"saved {picture}")

    for step in sq.timeline.trace(averages, inputs).steps:
        cti = "INFINITY (flush)" if step.cti == sq.INFINITY else f"{step.cti:%H:%M}"
        print(f"CTI {step.number} at {cti} released {len(step.events)}:")
        for e in step.events:
            print(f"  {e.payload.meter} [{e.start:%H:%M}, {e.end:%H:%M})  average {e.payload.average:.1f} W")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "timeline.png")
