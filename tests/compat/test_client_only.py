"""streamql with ``pyspark-client`` (Spark Connect only, no JVM; docs/compatibility.md): a
Spark Connect session to a Spark Connect server of the same version, started here in another
environment (``STREAMQL_CONNECT_SERVER_PYTHON``: an interpreter with the ``pyspark`` distribution
and streamql, whose Python workers run streamql's functions), runs a query and gets the reference
evaluator's Result. ``.ci/matrix client`` runs it; anywhere else it is skipped."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Iterator

import pytest

import streamql as sq
from streamql.time import from_micros

pytestmark = pytest.mark.compat

SERVER_PYTHON = os.environ.get("STREAMQL_CONNECT_SERVER_PYTHON")

#: a classic session with Spark Connect's plugin: a Spark Connect server on ``port``, until killed
SERVER = """
import sys, time
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]")
         .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
         .config("spark.connect.grpc.binding.port", sys.argv[1])
         .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").config("spark.pyspark.python", sys.executable)
         .getOrCreate())
print("serving", flush=True)
while True:
    time.sleep(60)
"""


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: float


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def remote() -> Iterator[Any]:
    if SERVER_PYTHON is None:
        pytest.skip("run by .ci/matrix client (STREAMQL_CONNECT_SERVER_PYTHON)")
    from pyspark.sql import SparkSession

    port = _free_port()
    env = {**os.environ, "PYSPARK_PYTHON": SERVER_PYTHON}
    server = subprocess.Popen([SERVER_PYTHON, "-c", SERVER, str(port)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # the server is up once its session is
        assert line.strip() == "serving", f"the Spark Connect server did not start (exit {server.poll()})"
        deadline = time.monotonic() + 60
        while True:
            try:
                session = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
                session.range(1).collect()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield session
        session.stop()
    finally:
        server.kill()
        server.wait()


def test_pyspark_client_has_no_jvm_side() -> None:
    from importlib import metadata

    if SERVER_PYTHON is None:
        pytest.skip("run by .ci/matrix client (STREAMQL_CONNECT_SERVER_PYTHON)")
    assert metadata.version("pyspark-client")
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("pyspark")


def test_a_query_over_pyspark_client_gives_the_reference_result(remote: Any) -> None:
    from streamql.spark.runtime.connect import is_connect

    assert is_connect(remote)
    readings = sq.input("readings", Reading, sq.Shape.POINT)
    settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=timedelta(0)),
                                      policy=sq.AdvanceTimePolicy.DROP)
    q = readings.group_by(lambda r: r.meter).tumbling_window(timedelta(microseconds=10)).select(
        lambda w: Reading(w.key, w.sum(lambda r: r.watts)))
    data = [(0, "a", 1.0), (5, "b", 2.0), (3, "a", 9.0), (12, "a", 4.0), (20, "b", 1.0)]
    items = [sq.Insert(from_micros(t), from_micros(t + 1), Reading(m, w)) for t, m, w in data]
    df = remote.createDataFrame([(t, "INSERT", i, m, w) for i, (t, m, w) in enumerate(data)],
                                "start long, kind string, arrival long, meter string, watts double")
    result = sq.Binder(remote).bind(readings, df, start="start", kind="kind", arrival="arrival",
                                    advance_time=settings).run(q, late=True)
    assert result == sq.reference.run(q, {"readings": sq.reference.ReferenceInput(items, settings)}, late=True)
    assert result.dropped == 1
