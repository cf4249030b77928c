"""A live step's shuffles take as many partitions as the session runs tasks at once
(``streamql.running.step_partitions``), not ``spark.sql.shuffle.partitions`` when that is more:
the steps run without adaptive execution, which would have coalesced them. The user's session
keeps its setting."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from pyspark.sql import SparkSession

from streamql.running import step_partitions
from streamql.spark.runtime.jobs import in_job_group
from support.json_readings import EVERY_4, rows
from support.live_counts import files, sink_matches_batch, start

#: a number of shuffle partitions no other part of a step's plan has (the test session runs 2 tasks at once)
CONFIGURED = 37


@contextlib.contextmanager
def shuffle_partitions(spark: SparkSession, partitions: int) -> Iterator[None]:
    before = spark.conf.get("spark.sql.shuffle.partitions") or "200"
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        yield
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def last_job_id(spark: SparkSession) -> int:
    """The id of a job run now (job ids grow by one per job)."""
    sc = spark.sparkContext
    group = "streamql-test-step-partitions"
    with in_job_group(sc, group, "the last job id"):
        spark.range(1).count()
    return max(sc.statusTracker().getJobIdsForGroup(group))


def stage_tasks_after(spark: SparkSession, job: int) -> list[int]:
    """The task counts of every stage of the jobs after ``job``, up to now."""
    tracker = spark.sparkContext.statusTracker()
    tasks = []
    for later in range(job + 1, last_job_id(spark)):
        info = tracker.getJobInfo(later)
        assert info is not None, later
        for stage in info.stageIds:
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None:
                tasks.append(stage_info.numTasks)
    return tasks


def test_the_step_partitions_are_the_configured_ones_at_most_the_tasks_run_at_once(spark: SparkSession) -> None:
    cores = spark.sparkContext.defaultParallelism
    with shuffle_partitions(spark, CONFIGURED):
        assert step_partitions(spark) == cores < CONFIGURED
    with shuffle_partitions(spark, 1):
        assert step_partitions(spark) == 1


def test_a_live_steps_shuffles_run_as_many_tasks_as_the_session_runs_at_once(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    everything = rows(0, 24)
    files(tmp_path / "in", [everything[0:8], everything[8:16], everything[16:24]])
    with shuffle_partitions(spark, CONFIGURED):
        before = last_job_id(spark)
        running = start(spark, tmp_path)  # grouped hopping counts: a shuffle by meter a step
        running.process_all_available()
        tasks = stage_tasks_after(spark, before)
        assert [p.batch for p in running.progress] == [0, 1, 2]
        running.stop()  # the final step (flush) runs in the user's session, with its adaptive execution
        assert spark.conf.get("spark.sql.shuffle.partitions") == str(CONFIGURED)  # the user's session untouched
    assert tasks and CONFIGURED not in tasks, tasks
    assert spark.sparkContext.defaultParallelism in tasks, tasks  # the shuffles' stages
    released = sink_matches_batch(spark, tmp_path, everything, EVERY_4)
    assert sum(p.released for p in running.progress) == released > 0
