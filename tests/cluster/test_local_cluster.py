"""streamql on a Spark cluster (docs/cluster.md: the same script runs on a standalone cluster, YARN
or Kubernetes): ``cluster_job.py`` starts ``local-cluster[2,1,1024]`` — a standalone master with two
workers whose executors are separate JVMs with their own Python workers — runs a query with CTI
generation, DROP, late events and an arrival column over a DataFrame of several partitions, and
compares ``Binder.run`` with ``sq.reference.run``.

It runs in a subprocess because a process holds one SparkContext (the session fixture's).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

JOB = Path(__file__).resolve().parent / "cluster_job.py"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.cluster
@pytest.mark.slow
def test_query_on_a_local_cluster_equals_the_reference() -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    try:
        done = subprocess.run([sys.executable, str(JOB)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=240)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the local-cluster job did not finish in {exc.timeout} s:\n{exc.stdout!r}\n{exc.stderr!r}")
    report = f"stdout:\n{done.stdout}\nstderr (end):\n{done.stderr[-4000:]}"
    assert done.returncode == 0, report
    assert "executors=2" in done.stdout, report
