"""Late events you can see: ``Result.late`` is ``list[sq.Late]`` with typed fields, filled by
``sq.reference.run(q, inputs, late=True)``; ``Binder.run(q, late=True)``, ``Binder.late(q)``,
``write(late_path=)`` and ``start(late_sink=)`` type-check. Must pass ``mypy --strict`` with no
error (and runs: the reference part is evaluated)."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
from pyspark.sql import DataFrame

import streamql as sq
from streamql.reference import ReferenceInput

T0 = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)


@dataclasses.dataclass(frozen=True)
class Usage:
    meter: str
    watts: int


usage = sq.input("usage", Usage, shape=sq.Shape.INTERVAL)
busy: sq.Stream[Usage] = usage.where(lambda e: e.watts > 50)
settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True), policy=sq.AdvanceTimePolicy.ADJUST)
items: list[sq.Insert[Usage] | sq.Cti] = [
    sq.Insert(T0, T0 + timedelta(minutes=10), Usage("m1", 100)),
    sq.Insert(T0 - timedelta(minutes=5), T0 + timedelta(minutes=5), Usage("m2", 80)),
]

result: sq.Result[Usage] = sq.reference.run(busy, {"usage": ReferenceInput(items, settings)}, late=True)
records: list[sq.Late] = result.late
none_yet: list[sq.Late] = sq.reference.run(busy, {"usage": ReferenceInput(items, settings)}, sq.Shape.EDGE).late
record = records[0]
name: str = record.input
arrival: int | None = record.arrival
action: str = record.action
kind: str = record.kind
start: datetime | None = record.start
end: datetime | None = record.end
cti: datetime | None = record.cti
new_start: datetime | None = record.new_start
new_end: datetime | None = record.new_end
payload: Any = record.payload
reason: str | None = record.reason
moved: timedelta | None = None if record.new_start is None or record.start is None else record.new_start - record.start
by_arrival = sorted(records, key=lambda r: (r.input, -1 if r.arrival is None else r.arrival))
without_reason: list[sq.Late] = [attrs.evolve(r, reason=None) for r in records]
dropped: int = sum(1 for r in records if r.action == "dropped")
made = sq.Late("usage", 1, "dropped", "INSERT", T0, T0 + sq.TICK, T0, None, None, Usage("m1", 1), None)

assert (action, kind, new_start, dropped) == ("adjusted", "INSERT", T0, 0), records
assert none_yet == [] and made != record


def on_spark(binding: sq.Binder) -> None:
    """Not run here (no Spark): the Binder's late-event API type-checks."""
    spark_result: sq.Result[Usage] = binding.run(busy, late=True)
    spark_records: list[sq.Late] = spark_result.late
    rows: DataFrame = binding.late(busy)
    rows.filter("action = 'adjusted'").select("arrival", "payload.meter").show()
    written: sq.Result[Usage] = binding.write(busy, "/data/busy", late_path="/data/busy-late")
    binding.start(busy, sink="/data/out", checkpoint="/data/ck", late_sink="/data/late").stop()
    assert spark_records is not None and written.events == []
