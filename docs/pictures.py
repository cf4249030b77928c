"""The documentation's timeline pictures: each is ``sq.plot.timeline`` over a real run of the
reference evaluator. The MkDocs hook (docs/hooks.py) draws them when the site is built;
``python docs/pictures.py DIR`` writes them as PNG files to DIR, and
``python docs/pictures.py --readme`` draws the README's picture, docs/images/readme-timeline.png.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from matplotlib.figure import Figure

import streamql as sq
from streamql.reference import ReferenceInput

T0 = datetime(2009, 7, 15, 9, 0, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def point(minutes: float, payload: Any) -> sq.Insert[Any]:
    return sq.Insert(at(minutes), at(minutes) + sq.TICK, payload)


def interval(start: float, end: float, payload: Any) -> sq.Insert[Any]:
    return sq.Insert(at(start), at(end), payload)


def every(n: int, delay_minutes: float = 0, policy: sq.AdvanceTimePolicy = sq.AdvanceTimePolicy.DROP
          ) -> sq.AdvanceTimeSettings:
    """A CTI after every ``n`` events, ``delay_minutes`` behind the greatest start; flushed at the end."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=n, delay=timedelta(minutes=delay_minutes),
                                                           flush=True), policy=policy)


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float  # watts


@dataclass(frozen=True)
class Usage:
    meter: str
    kilowatts: float


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


@dataclass(frozen=True)
class Count:
    n: int


@dataclass(frozen=True)
class Total:
    total: float


@dataclass(frozen=True)
class Site:
    meter: str
    site: str


@dataclass(frozen=True)
class Located:
    site: str
    kilowatts: float


@dataclass(frozen=True)
class Session:
    user: str


readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
# arrival order: the reading at 9:02 arrives after the CTI of 9:03 (4th reading - 1 minute): late
READINGS = [point(m, Reading(meter, w)) for m, meter, w in
            [(0, "m1", 100), (1, "m2", 250), (3, "m1", 200), (4, "m2", 0), (7, "m1", 150), (2, "m1", 120),
             (9, "m2", 270), (11, "m1", 180), (13, "m2", 260), (14, "m1", 90)]]


def kilowatts(e: Usage) -> str:
    return f"{e.kilowatts:.2f}"


def release() -> Figure:
    """The README's query: readings over 0 W as kilowatts, each counting for three minutes."""
    usage = (readings.where(lambda e: e.consumption > 0)
             .select(lambda e: Usage(e.meter, e.consumption / 1000))
             .alter_duration(timedelta(minutes=3)))
    return sq.plot.timeline(usage, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            labels={"readings": lambda e: e.meter, "output": lambda e: f"{e.meter} {e.kilowatts}"},
                            title="usage: readings > 0 W as kW for 3 minutes; a CTI every 4 readings, 1 minute behind")


def adjust() -> Figure:
    """The same input with the ADJUST policy: the late reading is moved to the CTI, not dropped."""
    sliding = readings.alter_duration(timedelta(minutes=3))
    return sq.plot.timeline(sliding, {"readings": ReferenceInput(
        READINGS, every(4, 1, sq.AdvanceTimePolicy.ADJUST))}, labels={"readings": lambda e: e.meter},
        title="alter_duration(3 min) with ADJUST: the late 9:02 reading starts at the CTI of 9:03 instead")


def snapshot() -> Figure:
    averages = (readings.alter_duration(timedelta(minutes=3)).group_by(lambda e: e.meter).snapshot_window()
                .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))
    return sq.plot.timeline(averages, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            group_by=lambda a: a.meter, labels={"readings": lambda e: e.meter,
                                                                "output": lambda a: f"{a.average:.0f}"},
                            title="3-minute sliding average per meter: alter_duration + group_by + snapshot_window")


def hopping() -> Figure:
    counts = readings.hopping_window(timedelta(minutes=6), timedelta(minutes=3)).select(lambda w: Count(w.count()))
    return sq.plot.timeline(counts, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            labels={"output": lambda c: f"n={c.n}"},
                            title="hopping_window(6 min, 3 min): readings per window")


def tumbling() -> Figure:
    totals = readings.tumbling_window(timedelta(minutes=5)).select(
        lambda w: Total(w.sum(lambda e: e.consumption)))
    return sq.plot.timeline(totals, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            labels={"output": lambda t: f"{t.total:.0f} W"},
                            title="tumbling_window(5 min): total consumption per window")


def count() -> Figure:
    averages = readings.count_window(3).select(lambda w: Total(w.avg(lambda e: e.consumption)))
    return sq.plot.timeline(averages, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            labels={"output": lambda t: f"{t.total:.0f}"},
                            title="count_window(3): the average of every 3 consecutive readings")


def grouping() -> Figure:
    per_meter = readings.group_apply(
        lambda e: e.meter,
        lambda s: s.tumbling_window(timedelta(minutes=5)).select(lambda w: Count(w.count())),
        lambda meter, c: MeterAverage(meter, c.n * 1.0))
    return sq.plot.timeline(per_meter, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            group_by=lambda a: a.meter, labels={"readings": lambda e: e.meter,
                                                                "output": lambda a: f"n={a.average:.0f}"},
                            title="group_apply: readings per meter per 5-minute window")


usage_intervals = sq.input("usage", Usage, shape=sq.Shape.INTERVAL)
sites = sq.input("sites", Site, shape=sq.Shape.INTERVAL)
USAGE = [interval(0, 4, Usage("m1", 0.1)), interval(2, 7, Usage("m2", 0.25)), interval(6, 9, Usage("m1", 0.2)),
         interval(8, 12, Usage("m2", 0.3)), interval(11, 14, Usage("m1", 0.15))]
SITES = [interval(0, 10, Site("m1", "north")), interval(0, 15, Site("m2", "south")),
         interval(10, 15, Site("m1", "east"))]


def join() -> Figure:
    located = usage_intervals.join(sites, lambda u, s: u.meter == s.meter, lambda u, s: Located(s.site, u.kilowatts))
    return sq.plot.timeline(located, {"usage": ReferenceInput(USAGE, every(2)),
                                      "sites": ReferenceInput(SITES, every(1))},
                            labels={"usage": lambda u: u.meter, "sites": lambda s: f"{s.meter}@{s.site}",
                                    "output": lambda x: f"{x.site} {x.kilowatts}"},
                            title="join on the meter: output lifetimes are the intersections; CTI = the least of both")


def union() -> Figure:
    other = sq.input("other", Usage, shape=sq.Shape.INTERVAL)
    merged = usage_intervals.union(other)
    more = [interval(1, 3, Usage("m3", 0.05)), interval(5, 6, Usage("m3", 0.07)), interval(10, 13, Usage("m3", 0.06))]
    return sq.plot.timeline(merged, {"usage": ReferenceInput(USAGE, every(2)), "other": ReferenceInput(more, every(1))},
                            labels={"output": lambda u: u.meter},
                            title="union: every event of both; the CTI is the least of the inputs' CTIs")


def keep_last() -> Figure:
    last_two = readings.keep_last(2)
    return sq.plot.timeline(last_two, {"readings": ReferenceInput(READINGS, every(4, 1))},
                            labels={"readings": lambda e: e.meter, "output": lambda e: f"{e.consumption:.0f}"},
                            title="keep_last(2): each reading lives until the second reading after it")


sessions = sq.input("sessions", Session, shape=sq.Shape.EDGE)
SESSIONS: list[sq.StartEdge[Session] | sq.EndEdge[Session] | sq.Cti] = [
    sq.StartEdge(at(0), Session("ann")), sq.StartEdge(at(2), Session("bob")), sq.Cti(at(3)),
    sq.EndEdge(at(0), at(6), Session("ann")), sq.StartEdge(at(7), Session("cy")), sq.Cti(at(8)),
    sq.StartEdge(at(4), Session("dee")),  # late: moved to the CTI of 9:08 by ADJUST
    sq.EndEdge(at(2), at(10), Session("bob")), sq.Cti(at(12)),
]


def edges() -> Figure:
    adjust_only = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000, delay=timedelta(0)),
                                         policy=sq.AdvanceTimePolicy.ADJUST)
    return sq.plot.timeline(sessions, {"sessions": ReferenceInput(SESSIONS, adjust_only)}, output=sq.Shape.EDGE,
                            labels={"sessions": lambda s: s.user, "output": lambda s: s.user},
                            title="EDGE input and output: start edges open events, end edges close them")


PICTURES: dict[str, Callable[[], Figure]] = {
    "release": release, "adjust": adjust, "snapshot": snapshot, "hopping": hopping, "tumbling": tumbling,
    "count": count, "grouping": grouping, "join": join, "union": union, "keep-last": keep_last, "edges": edges,
}

README_PICTURE = Path(__file__).parent / "images" / "readme-timeline.png"


def main(arguments: list[str]) -> None:
    """``--readme``: (re)draw the README's picture; otherwise every picture into the given directory."""
    if arguments == ["--readme"]:
        README_PICTURE.parent.mkdir(exist_ok=True)
        release().savefig(README_PICTURE, dpi=100, metadata={"Software": None})
        print(README_PICTURE)
        return
    target = Path(arguments[0] if arguments else "site-pictures")
    target.mkdir(parents=True, exist_ok=True)
    for name, make in PICTURES.items():
        make().savefig(target / f"{name}.png", dpi=100, metadata={"Software": None})
        print(target / f"{name}.png")


if __name__ == "__main__":
    main(sys.argv[1:])
