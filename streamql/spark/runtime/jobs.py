"""Counting the Spark jobs a piece of work runs.

A Spark job costs 0.1-0.3 s of fixed time on a small cluster, which dominates a small
micro-batch; ``RunningQuery.progress`` reports how many a step ran. The jobs run from the
calling thread are put in a job group of their own (a thread-local property, restored after)
and counted from Spark's status tracker. A Spark Connect session has no status tracker on the
client: there the count is ``None`` (docs/spark-connect.md).
"""
from __future__ import annotations

import itertools
import uuid
from contextlib import contextmanager
from typing import Any, Iterator

import attrs
from streamql.spark.compat import SparkContext  # pyspark-client has none

from streamql.spark.runtime.connect import context_of

_NUMBERS = itertools.count(1)
_GROUP = "spark.jobGroup.id"
_DESCRIPTION = "spark.job.description"


@attrs.define
class JobCount:
    """The jobs counted by ``counting_jobs`` (filled in when its block ends; ``None`` on a Spark
    Connect session)."""

    group: str
    jobs: int | None = 0


@contextmanager
def in_job_group(sc: SparkContext, group: str, description: str) -> Iterator[None]:
    """The jobs that the block runs from this thread are in job group ``group``; the caller's job
    group and description are restored after."""
    saved = {name: sc.getLocalProperty(name) for name in (_GROUP, _DESCRIPTION)}
    sc.setLocalProperty(_GROUP, group)
    sc.setLocalProperty(_DESCRIPTION, description)
    try:
        yield
    finally:
        for name, previous in saved.items():
            sc.setLocalProperty(name, previous)  # type: ignore[arg-type]  # None removes it


@contextmanager
def counting_jobs(spark: Any, description: str) -> Iterator[JobCount]:
    """Counts the Spark jobs that the block runs from this thread (into the yielded ``JobCount``);
    ``spark``: a SparkSession of either kind. On a Spark Connect session nothing is counted
    (``jobs`` is ``None``)."""
    count = JobCount(f"streamql-{next(_NUMBERS)}-{uuid.uuid4().hex[:8]}")
    sc = context_of(spark)
    if sc is None:
        count.jobs = None
        yield count
        return
    with in_job_group(sc, count.group, description):
        try:
            yield count
        finally:
            count.jobs = len(sc.statusTracker().getJobIdsForGroup(count.group))


__all__ = ["JobCount", "counting_jobs", "in_job_group"]
