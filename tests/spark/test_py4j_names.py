"""The test processes' memory of py4j's name lookups (tests/support/py4j_names.py): a name the JVM
was asked for once is not asked for again; a static field is read each time; a query's result is
what it is without it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.spark.runtime.connect import is_connect
from support import py4j_names
from support.frames import bind, frame


@pytest.fixture
def calls(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The commands sent to the JVM while the test runs."""
    if is_connect(spark):
        pytest.skip("a Spark Connect session talks to its server without py4j")
    client: Any = spark.sparkContext._jvm._gateway_client  # type: ignore[union-attr]
    sent: list[str] = []
    send = client.send_command

    def recorded(command: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", recorded)
    yield sent


def test_a_function_looked_up_once_is_called_without_a_lookup(spark: SparkSession, calls: list[str]) -> None:
    assert py4j_names._installed  # the session fixture installed it
    F.abs(F.col("x"))  # looked up here, or by an earlier test
    calls.clear()
    F.abs(F.col("x"))
    lookups = [c for c in calls if c.startswith("r\n")]  # py4j's reflection commands
    assert lookups == [], lookups
    # the calls of col and abs themselves; py4j's deletions of the Java objects that Python let go
    # (``m`` ``d``) come whenever Python's garbage collector runs
    assert len([c for c in calls if not c.startswith("m\nd\n")]) == 2, calls


def test_a_static_field_is_read_again_each_time(spark: SparkSession, calls: list[str]) -> None:
    jvm: Any = spark.sparkContext._jvm
    first = jvm.java.lang.Integer.MAX_VALUE
    calls.clear()
    assert jvm.java.lang.Integer.MAX_VALUE == first == 2**31 - 1
    assert len([c for c in calls if c.startswith("r\n")]) == 1  # the field's value, asked for again


@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


@dataclass(frozen=True)
class Total:
    meter: int
    total: int


def _lookups(calls: list[str]) -> int:
    return len([c for c in calls if c.startswith("r\n")])


def test_a_querys_result_is_what_it_is_with_py4js_own_lookups(spark: SparkSession, calls: list[str]) -> None:
    readings = sq.input("readings", Reading, sq.Shape.POINT)
    items: list[object] = [sq.Insert(k, k + 1, Reading(k % 2, k)) for k in range(8)]
    settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, delay=sq.TICK, flush=True))
    binder = bind(sq.Binder(spark), readings, frame(spark, Reading, sq.Shape.POINT, items), sq.Shape.POINT, settings)
    query = (readings.group_by(lambda r: r.meter).tumbling_window(sq.TICK * 4)
             .select(lambda w: Total(w.key, w.sum(lambda r: r.value))))
    binder.run(query)  # every name the run asks for remembered
    calls.clear()
    remembered = binder.run(query)
    with_memory = _lookups(calls)
    with py4j_names.set_aside():
        binder.run(query)
        calls.clear()
        own = binder.run(query)  # as warm as the run above, without the memory
    assert _lookups(calls) > 10 * with_memory + 10  # py4j's own lookups did run (0 and 368 here)
    assert own == remembered
    assert sorted(e.payload.total for e in own.events) == sorted(
        sum(k for k in range(8) if k % 2 == m and lo <= k < lo + 4) for m in (0, 1) for lo in (0, 4))
