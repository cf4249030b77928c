"""Unit-testing a query with the reference evaluator: plain Python lists in, no JVM, no Spark.

The input is an analog signal quantised into edge events (StreamInsight's "Event Structure":
for every new value an END edge for the old value and a START edge for the new one). The
query keeps the levels of at least 2 volts and labels them. With EDGE output, the released
START edges are the insert stream and the END edges the remove stream (Esper's terms).

The functions named ``test_*`` are ordinary pytest tests; run as a script, the file prints
what the query releases and then runs the tests.

Run it with ``.venv/bin/python examples/reference_only.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput

UTC = timezone.utc


@dataclass(frozen=True)
class Level:
    volts: float


@dataclass(frozen=True)
class Alarm:
    label: str
    volts: float


def at(second: int) -> datetime:
    return datetime(2024, 5, 1, 12, 0, second, tzinfo=UTC)


signal = sq.input("signal", Level, shape=sq.Shape.EDGE)
alarms = (
    signal
    .where(lambda e: e.volts >= 2.0)
    .select(lambda e: Alarm(label=sq.if_(e.volts >= 4.0, "HIGH", "RAISED"), volts=e.volts))
)

# the signal: 1 V from 12:00:00, 2.5 V from :05, 4.5 V from :12, 3 V from :20 (still on)
EDGES: list[InputItem[Level]] = [
    sq.StartEdge(at(0), Level(1.0)),
    sq.EndEdge(at(0), at(5), Level(1.0)),
    sq.StartEdge(at(5), Level(2.5)),
    sq.EndEdge(at(5), at(12), Level(2.5)),
    sq.StartEdge(at(12), Level(4.5)),
    sq.EndEdge(at(12), at(20), Level(4.5)),
    sq.StartEdge(at(20), Level(3.0)),
]

# a CTI one tick after every start edge commits each start as soon as it arrives
LIVE = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-sq.TICK))
# the same, plus a final CTI at INFINITY when the input ends
FLUSHED = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-sq.TICK, flush=True))


def run(settings: sq.AdvanceTimeSettings, output: sq.Shape = sq.Shape.INTERVAL) -> sq.Result[Alarm]:
    return sq.reference.run(alarms, {"signal": ReferenceInput(EDGES, settings)}, output=output)


def test_intervals_wait_for_their_end_edge() -> None:
    result = run(LIVE)
    # the 3 V level is still on: as an interval it is not stable yet, so it is not released
    assert result.events == [
        sq.Event(at(5), at(12), Alarm("RAISED", 2.5)),
        sq.Event(at(12), at(20), Alarm("HIGH", 4.5)),
    ]
    assert result.final_cti == at(20) + sq.TICK


def test_edges_insert_and_remove() -> None:
    edges = run(LIVE, sq.Shape.EDGE).edges
    # every START edge is out as soon as a CTI passes its start; END edges once the end is known.
    # At one time, END edges come before START edges.
    assert [(e.kind, e.time, e.payload.label) for e in edges] == [
        (sq.EdgeKind.START, at(5), "RAISED"),
        (sq.EdgeKind.END, at(12), "RAISED"),
        (sq.EdgeKind.START, at(12), "HIGH"),
        (sq.EdgeKind.END, at(20), "HIGH"),
        (sq.EdgeKind.START, at(20), "RAISED"),
    ]


def test_flush_releases_the_open_level() -> None:
    result = run(FLUSHED)
    # at CTI INFINITY no end edge can come any more: the open level is released, ending at INFINITY
    assert result.events[-1] == sq.Event(at(20), sq.INFINITY, Alarm("RAISED", 3.0))
    assert result.final_cti == sq.INFINITY
    # as edges it never gets an END edge
    assert [e.kind for e in run(FLUSHED, sq.Shape.EDGE).edges].count(sq.EdgeKind.END) == 2


def test_no_cti_no_output() -> None:
    result = sq.reference.run(alarms, {"signal": ReferenceInput(EDGES)})
    assert result.events == [] and result.final_cti is None


def hms(t: datetime) -> str:
    return "INFINITY" if t == sq.INFINITY else t.strftime("%H:%M:%S")


def show(title: str, result: sq.Result[Any]) -> None:
    print(f"{title}  (final_cti={result.final_cti})")
    for e in result.events:
        print(f"  [{hms(e.start)}, {hms(e.end)})  {e.payload}")
    for edge in result.edges:
        print(f"  {edge.kind.name:<5} {hms(edge.time)}  (start {hms(edge.start)})  {edge.payload}")


def main() -> None:
    show("INTERVAL output, CTI after every start edge:", run(LIVE))
    show("EDGE output, CTI after every start edge:", run(LIVE, sq.Shape.EDGE))
    show("INTERVAL output, flushed:", run(FLUSHED))
    show("EDGE output, flushed:", run(FLUSHED, sq.Shape.EDGE))
    tests = [test_intervals_wait_for_their_end_edge, test_edges_insert_and_remove,
             test_flush_releases_the_open_level, test_no_cti_no_output]
    for test in tests:
        test()
    print(f"{len(tests)} tests passed")


if __name__ == "__main__":
    main()
