"""Well-typed use of the many-query API: a mapping of queries of different payload types in,
results by name out (``Result[Any]``: each query's events keep their payloads, checked by the
reader with ``isinstance``), and a running query whose output is read by name.

Must pass ``mypy --strict`` with no error. The functions are not called here (they need Spark).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping

import streamql as sq


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: float


@dataclass(frozen=True)
class Count:
    readings: int


readings: sq.Stream[Reading] = sq.input("readings", Reading)


def counts_of(meter: str) -> sq.Stream[Count]:
    return (readings.where(lambda r: r.meter == meter)
            .hopping_window(timedelta(hours=1), timedelta(minutes=15))
            .select(lambda w: Count(w.count())))


queries: dict[str, sq.Stream[Any]] = {"m1": counts_of("m1"), "m2": counts_of("m2"),
                                      "high": readings.where(lambda r: r.watts > 450)}


def totals(binding: sq.Binder) -> dict[str, int]:
    results: dict[str, sq.Result[Any]] = binding.run_many(queries)
    edges: dict[str, sq.Result[Any]] = binding.run_many(queries, output=sq.Shape.EDGE)
    counted: dict[str, int] = {name: len(result.events) + len(edges[name].edges) for name, result in results.items()}
    high: list[sq.Event[Any]] = results["high"].events
    watts = [e.payload.watts for e in high if isinstance(e.payload, Reading)]
    counted["watts"] = int(sum(watts))
    return counted


def written(binding: sq.Binder, folder: str) -> Mapping[str, sq.Result[Any]]:
    return binding.write_many(queries, {name: f"{folder}/{name}" for name in queries}, format="json",
                              mode="overwrite")


def started(binding: sq.Binder, folder: str) -> sq.Stream[Any]:
    running: sq.RunningQuery[Any] = binding.start_many(queries, sinks={name: f"{folder}/{name}" for name in queries},
                                                       checkpoint=f"{folder}/ck", name="meters")
    running.process_all_available()
    high: sq.Stream[Any] = running.as_stream("high")
    return high.where(lambda r: r.watts > 490)
