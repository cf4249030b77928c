"""The delta group's crash job: run as a child process (``python delta_job.py SOURCE SINK CHECKPOINT
KILL_AT``), it runs the sliding average (``support.json_readings``) from a Delta table read as a
stream into a Delta sink, and kills itself and its JVM with SIGKILL in micro-batch ``KILL_AT`` right
after that micro-batch's Delta commit, before streamql commits its state: the crash that Delta's
idempotent writes are for."""
from __future__ import annotations

import os
import signal
import sys
from typing import Any

from pyspark.sql import SparkSession

from streamql.spark.streaming import state


def kill_before_commit(at: int) -> None:
    """``StateStore.commit`` that kills the process group at micro-batch ``at``: the step has written
    its sink by then (``streamql.running._Query._step``), and its state is not yet committed."""
    commit = state.StateStore.commit

    def killing(self: state.StateStore, carried: Any) -> Any:
        if carried.state.batch == at:
            os.killpg(os.getpgid(0), signal.SIGKILL)
        return commit(self, carried)

    state.StateStore.commit = killing  # type: ignore[method-assign]


def main(source: str, sink: str, checkpoint: str, kill_at: str) -> None:
    from support.delta_lake import DELTA_SETTINGS, delta_jars
    from support.jvm import TEST_JVM_OPTIONS
    from delta_lake.test_delta import start

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.jars", delta_jars()).config(map=DELTA_SETTINGS)
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
             .config("spark.python.sql.dataFrameDebugging.enabled", "false")
             .getOrCreate())
    kill_before_commit(int(kill_at))
    running = start(spark, source, sink, checkpoint)
    running.await_termination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
