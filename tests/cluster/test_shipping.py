"""streamql on a Spark cluster (docs/cluster.md: the same script runs on a standalone cluster, YARN
or Kubernetes), whose executors' Python has pyarrow and pandas but not streamql: the binder's worker
check ships streamql to the executors itself (``SparkContext.addPyFile`` with a zip of the package)
and the query — CTI generation, DROP, late readings in every scan unit, an arrival column over four
partitions — equals the reference evaluator's run: ``support/workers_job.py`` on
``local-cluster[2,1,1024]`` (a standalone master with two workers whose executors are separate
JVMs with their own Python workers), its workers running an interpreter that cannot import streamql.

It runs in a subprocess because a process holds one SparkContext (the session fixture's).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.worker_check import child_env, interpreter_without_streamql, run_job


@pytest.mark.cluster
@pytest.mark.slow
def test_the_binder_ships_streamql_to_executors_that_lack_it(tmp_path: Path) -> None:
    worker = interpreter_without_streamql(tmp_path)
    out = run_job(["check", "local-cluster[2,1,1024]"], tmp_path, child_env(PYSPARK_PYTHON=str(worker)),
                  timeout=400)
    report = out["report"]
    assert out["before"] == "['streamql']", report  # the executors could not import streamql
    assert "error" not in out, report
    assert out["executors"] == "2", report
    assert out["equal"] == "True" and int(out["dropped"]) > 1, report  # the query ran, as the reference
    assert out["after"] == "[]", report  # shipped: the workers import it now
