"""streamql builds its plans without PySpark's call-site recording (its DataFrame debugging,
``streamql/spark/runtime/origins.py``), whatever the session's setting, and leaves the setting as
it found it: on for the user's own DataFrame code where it was on."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterator

import pytest
from pyspark.errors import utils as errors_utils
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.spark.runtime.connect import is_connect
from streamql.spark.runtime.origins import building, recording_known
from support.frames import bind, frame

pytestmark = pytest.mark.skipif(not recording_known(), reason="this PySpark records no call sites")


@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


@dataclass(frozen=True)
class Total:
    meter: int
    total: int


@pytest.fixture
def call_sites(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The call sites PySpark records, with its recording on (the test session turns it off)."""
    if is_connect(spark):
        pytest.skip("a classic session: over Spark Connect the call site stays in the client")
    recorded: list[str] = []
    capture = errors_utils._capture_call_site

    def counted(depth: int) -> str:
        recorded.append(capture(depth + 1).splitlines()[-1])  # the caller of ``counted``
        return recorded[-1]

    monkeypatch.setattr(errors_utils, "_capture_call_site", counted)
    monkeypatch.setattr(errors_utils, "_enable_debugging_cache", True)
    yield recorded


def test_a_query_is_planned_and_run_without_recording_and_the_setting_stays(spark: SparkSession,
                                                                            call_sites: list[str]) -> None:
    readings = sq.input("readings", Reading, sq.Shape.POINT)
    items: list[object] = [sq.Insert(k, k + 1, Reading(k % 2, k)) for k in range(8)]
    settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, delay=sq.TICK, flush=True))
    source = frame(spark, Reading, sq.Shape.POINT, items)
    binder = bind(sq.Binder(spark), readings, source, sq.Shape.POINT, settings)
    call_sites.clear()
    source.select((F.col("meter") + 1).alias("m"))  # the user's own code is recorded
    assert len(call_sites) >= 1 and __file__ in call_sites[-1]
    call_sites.clear()
    query = (readings.group_by(lambda r: r.meter).tumbling_window(sq.TICK * 4)
             .select(lambda w: Total(w.key, w.sum(lambda r: r.value))))
    result = binder.run(query)
    assert call_sites == [], call_sites
    assert errors_utils._enable_debugging_cache is True  # as it was
    assert sorted(e.payload.total for e in result.events) == sorted(
        sum(k for k in range(8) if k % 2 == m and lo <= k < lo + 4) for m in (0, 1) for lo in (0, 4))


def test_blocks_in_several_threads_nest_and_the_last_one_out_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(errors_utils, "_enable_debugging_cache", None)  # not read yet
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with building():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    with building():
        assert errors_utils._enable_debugging_cache is False
        thread.start()
        assert inside.wait(10)
    # the other thread is still building: the recording stays off
    assert errors_utils._enable_debugging_cache is False
    leave.set()
    thread.join(10)
    assert errors_utils._enable_debugging_cache is None
    with pytest.raises(ValueError), building():
        raise ValueError("an error inside a block")
    assert errors_utils._enable_debugging_cache is None
