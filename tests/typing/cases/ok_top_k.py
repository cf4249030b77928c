"""Well-typed top-k per window: every window kind, ungrouped and grouped, the select's arguments
(the event and its int rank), ascending order, inside group_apply, and run in the reference
evaluator."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Optional

from typing_extensions import assert_type

import streamql as sq
from streamql.reference import ReferenceInput

HOUR = timedelta(hours=1)


@dataclasses.dataclass(frozen=True)
class Reading:
    region: str
    meter: str
    kwh: Optional[float]


@dataclasses.dataclass(frozen=True)
class Top:
    meter: str
    kwh: Optional[float]
    rank: int


def top(e: Reading, rank: int) -> Top:
    assert_type(e, Reading)
    assert_type(rank, int)
    return Top(e.meter, e.kwh, rank)


readings: sq.Stream[Reading] = sq.input("readings", Reading)

assert_type(readings.snapshot_window().top_k(3, lambda e: e.kwh, top), sq.Stream[Top])
assert_type(readings.tumbling_window(HOUR).top_k(1, lambda e: e.meter, lambda e, rank: Top(e.meter, e.kwh, rank)),
            sq.Stream[Top])
assert_type(readings.hopping_window(HOUR, HOUR / 2).top_k(2, lambda e: e.kwh, top, descending=False), sq.Stream[Top])
assert_type(readings.count_window(10).top_k(2, lambda e: e.kwh, top), sq.Stream[Top])
assert_type(readings.session_window(HOUR).top_k(2, lambda e: e.kwh, top), sq.Stream[Top])
per_region = readings.group_by(lambda e: e.region).hopping_window(HOUR, timedelta(minutes=30))
assert_type(per_region, sq.GroupedWindowed[str, Reading])
top_3: sq.Stream[Top] = per_region.top_k(3, lambda e: e.kwh, lambda e, rank: Top(e.meter, e.kwh, rank * 1))
applied = readings.group_apply(lambda e: e.region, lambda s: s.tumbling_window(HOUR).top_k(1, lambda e: e.kwh, top),
                               lambda region, t: Top(region + t.meter, t.kwh, t.rank))
assert_type(applied, sq.Stream[Top])

t0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
result: sq.Result[Top] = sq.reference.run(top_3, {"readings": ReferenceInput(
    [sq.Insert(t0, t0 + sq.TICK, Reading("north", "n1", 5.0)), sq.Insert(t0, t0 + sq.TICK, Reading("north", "n2", 6.0))],
    sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True)))})
assert sorted((e.payload.meter, e.payload.rank) for e in result.events) == [("n1", 2), ("n1", 2), ("n2", 1), ("n2", 1)]
