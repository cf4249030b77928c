"""Python workers that just work (docs/binding.md#the-session-and-its-python-workers): a session's
first Python job for streamql — a batch run's first summary pass, or ``check_workers``' probe —
checks, once per SparkContext, that Spark's Python workers import streamql and pyarrow and find
pandas, and the binder raises a ``BindingError`` naming both interpreters and the fix when they
cannot; the summary pass checks it in its own job (``workers.collected``), with the probe's message;
``sq.local_session`` builds a session whose workers run the driver's interpreter.

The end-to-end cases run ``support/workers_job.py`` in a child process (a process holds one
SparkContext, the session fixture's): with workers that cannot import streamql, and with
``local_session`` and no ``PYSPARK_PYTHON`` at all.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.runtime import workers
from streamql.spark.runtime.jobs import counting_jobs
from streamql.spark.runtime.phases import recording
from streamql.spark.runtime.workers import Failure, Probe
from support.frames import bind, frame
from support.worker_check import child_env, interpreter_without_streamql, run_job


@pytest.mark.slow  # a Spark of its own in a subprocess (~19 s): the deep tier
def test_workers_that_cannot_import_streamql_get_a_binding_error_from_the_first_python_job(tmp_path: Path) -> None:
    worker = interpreter_without_streamql(tmp_path)
    out = run_job(["check", "local[1]"], tmp_path, child_env(PYSPARK_PYTHON=str(worker)))
    report = out["report"]
    assert out["before"] == "['streamql']", report
    error = out.get("error", "")
    assert "cannot import streamql (ModuleNotFoundError: No module named 'streamql')" in error, report
    assert f"Spark starts {str(worker)!r} (from PYSPARK_PYTHON)" in error, report  # the worker interpreter
    assert f"driver interpreter: {sys.executable}" in error, report
    assert "sq.local_session()" in error and f"PYSPARK_PYTHON={sys.executable}" in error, report  # the fix
    assert "pyarrow" not in error.split("Fix:")[0], report                  # only streamql is missing
    # a local master: nothing is shipped; the query's summary pass found it (no probe but the test's
    # own two ran), and no job of the query ran after it (the input's shuffle, then the summary pass)
    assert out["after"] == "['streamql']", report
    assert out["check_jobs"] == "2", report
    assert 1 <= int(out["query_jobs"]) <= 2, report


def test_local_session_runs_workers_on_the_drivers_interpreter_without_pyspark_python(tmp_path: Path) -> None:
    out = run_job(["session"], tmp_path, child_env())
    expected = {"same": "True", "time_zone": "UTC", "shuffle_partitions": "3", "ui": "false",
                "conf_python": "True", "env_python": "True", "worker_python": "True", "equal": "True"}
    assert {k: out.get(k) for k in expected} == expected, out["report"]
    assert int(out["dropped"]) > 1, out["report"]  # late readings in several scan units


# --- in this process: the session fixture's SparkContext ------------------------------------

@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


READINGS = sq.input("readings", Reading, sq.Shape.POINT)
EVERY_2 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2, delay=sq.TICK * 2))


def _readings_query(spark: SparkSession) -> tuple[sq.Binder, sq.Stream[Reading]]:
    """A query whose scan runs its summary pass in Python workers (CTI generation, one late reading)."""
    items: list[object] = [sq.Insert(5 * k, 5 * k + 1, Reading(k % 3, k)) for k in range(12)]
    items.insert(7, sq.Insert(2, 3, Reading(7, 99)))
    df = frame(spark, Reading, sq.Shape.POINT, items)
    return bind(sq.Binder(spark), READINGS, df, sq.Shape.POINT, EVERY_2), READINGS.where(lambda r: r.value > 1)


def _unchecked(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> str:
    """Forgets the fixture session's check (as if its SparkContext were new); returns its key."""
    monkeypatch.setattr(workers, "_checked", {})
    return workers._key(spark)


def test_a_sessions_first_query_runs_no_job_to_check_the_workers(spark: SparkSession,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    binder, q = _readings_query(spark)
    binder.run(q)  # the session's workers started, its outcome cached
    with recording(spark) as checked:
        expected = binder.run(q)
    key = _unchecked(spark, monkeypatch)
    tracker = spark.sparkContext.statusTracker()
    probes = len(tracker.getJobIdsForGroup(workers.JOB_GROUP))
    with recording(spark) as phases:
        assert binder.run(q) == expected
    assert len(tracker.getJobIdsForGroup(workers.JOB_GROUP)) == probes  # no probe
    assert workers._checked == {key: None}  # checked, by the summary pass
    assert phases.jobs == checked.jobs, (phases.table(), checked.table())  # as a checked session's query
    assert "worker check" not in phases.by_name, phases.table()
    assert phases.by_name["scan summary"].jobs == 1, phases.table()


def test_a_query_whose_summary_runs_no_worker_checks_them_with_the_probe(spark: SparkSession,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    binder = bind(sq.Binder(spark), READINGS, frame(spark, Reading, sq.Shape.POINT, []), sq.Shape.POINT, EVERY_2)
    key = _unchecked(spark, monkeypatch)
    tracker = spark.sparkContext.statusTracker()
    probes = len(tracker.getJobIdsForGroup(workers.JOB_GROUP))
    with recording(spark) as phases:
        assert binder.run(READINGS).events == []
    assert "worker check" in phases.by_name, phases.table()
    assert len(tracker.getJobIdsForGroup(workers.JOB_GROUP)) == probes + 1  # no summary row came: the probe
    assert workers._checked == {key: None}


def test_a_worker_that_cannot_import_gets_the_probes_error_from_the_summary_job(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    # a module the workers need but do not have: one imported, one located (as pandas)
    monkeypatch.setattr(workers, "NEEDED", (*workers.NEEDED, "streamql_absent_module", "streamql_absent_located"))
    monkeypatch.setattr(workers, "LOCATED", (*workers.LOCATED, "streamql_absent_located"))
    binder, q = _readings_query(spark)
    _unchecked(spark, monkeypatch)
    tracker = spark.sparkContext.statusTracker()
    probes = len(tracker.getJobIdsForGroup(workers.JOB_GROUP))
    with pytest.raises(sq.BindingError) as from_summary:
        binder.run(q)
    assert len(tracker.getJobIdsForGroup(workers.JOB_GROUP)) == probes  # the summary job found it
    message = str(from_summary.value)
    assert ("cannot import streamql_absent_module (ModuleNotFoundError: No module named 'streamql_absent_module'); "
            "streamql_absent_located (ModuleNotFoundError: No module named 'streamql_absent_located')") in message
    # cached: the same error again without a job
    with counting_jobs(spark, "again") as again, pytest.raises(sq.BindingError) as cached:
        binder.run(q)
    assert str(cached.value) == message and again.jobs == 0
    # the probe, asked afresh, says exactly the same
    _unchecked(spark, monkeypatch)
    with pytest.raises(sq.BindingError) as from_probe:
        workers.check_workers(spark)
    assert str(from_probe.value) == message


def test_a_failed_summary_job_is_diagnosed_by_the_probe(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    binder, q = _readings_query(spark)
    key = _unchecked(spark, monkeypatch)

    def guarded(function: object, arrow: object) -> object:
        def fails(batches: object) -> object:
            raise RuntimeError("streamql test: a worker that does not run the summary")
        return fails
    monkeypatch.setattr(workers, "_guarded", guarded)
    # the workers are fine (the probe passes): the job's own error
    with pytest.raises(Exception, match="a worker that does not run the summary"):
        binder.run(q)
    assert workers._checked == {key: None}
    # the probe finds the workers at fault: its BindingError
    _unchecked(spark, monkeypatch)
    monkeypatch.setattr(workers, "run_probe", lambda sc: Probe("/usr/bin/python3", (
        Failure("pyarrow", "pyarrow", "ModuleNotFoundError: No module named 'pyarrow'"),)))
    with pytest.raises(sq.BindingError, match=r"cannot import pyarrow \(ModuleNotFoundError"):
        binder.run(q)


def test_the_check_runs_one_job_per_spark_context(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    _unchecked(spark, monkeypatch)
    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(workers.JOB_GROUP))
    workers.check_workers(spark)
    workers.check_workers(spark)
    workers.check_workers(spark.sparkContext)
    assert len(tracker.getJobIdsForGroup(workers.JOB_GROUP)) == jobs + 1


def test_the_probe_reports_the_workers_interpreter(spark: SparkSession) -> None:
    python = spark.sparkContext.pythonExec  # the fixture's PYSPARK_PYTHON
    assert workers.run_probe(spark.sparkContext) == Probe(shutil.which(python) or python, ())
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None  # the caller's group is restored


def test_the_message_names_every_missing_module_and_the_fix(spark: SparkSession,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    failures = (Failure("pyarrow", "pyarrow", "ModuleNotFoundError: No module named 'pyarrow'"),
                Failure("streamql", "attrs", "ModuleNotFoundError: No module named 'attrs'"))
    monkeypatch.setattr(workers, "run_probe", lambda sc: Probe("/usr/bin/python3", failures))
    monkeypatch.setattr(workers, "_checked", {})
    with pytest.raises(sq.BindingError) as caught:
        workers.check_workers(spark)
    message = str(caught.value)
    assert "cannot import pyarrow (ModuleNotFoundError: No module named 'pyarrow'); " \
           "streamql (ModuleNotFoundError: No module named 'attrs')" in message
    assert "worker interpreter: /usr/bin/python3" in message
    assert f"driver interpreter: {sys.executable}" in message
    assert "sq.local_session()" in message and "docs/cluster.md" in message
    # the outcome is cached: the same error again, without another probe
    monkeypatch.setattr(workers, "run_probe", lambda sc: pytest.fail("probed twice"))
    with pytest.raises(sq.BindingError, match="cannot import pyarrow"):
        workers.check_workers(spark)


def test_workers_that_do_not_start_get_a_binding_error_with_sparks_reason(spark: SparkSession,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(sc: object) -> Probe:
        raise RuntimeError("An error occurred while calling o1.collectAndServe.\norg.apache.spark.SparkException: "
                           "Job aborted\n  File \"worker.py\"\nPySparkRuntimeError: [PYTHON_VERSION_MISMATCH] "
                           "Python in worker has different version (3, 10) than that in driver 3.11")
    monkeypatch.setattr(workers, "run_probe", fails)
    monkeypatch.setattr(workers, "_checked", {})
    with pytest.raises(sq.BindingError, match=r"did not run \(PySparkRuntimeError: \[PYTHON_VERSION_MISMATCH\]"):
        workers.check_workers(spark)


def test_the_scans_worker_code_imports_neither_pandas_nor_the_reference_evaluator() -> None:
    # what a worker imports to run the summary pass (its functions live in the scan's module): a
    # process of its own, as this one has imported everything
    heavy = ("pandas", "matplotlib", "streamql.reference", "streamql.plot", "streamql.timeline")
    done = subprocess.run([sys.executable, "-c", "import sys, streamql.spark.ingress.scan\n"
                           f"print(sorted(m for m in {heavy!r} if m in sys.modules))"],
                          capture_output=True, text=True, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_local_master_is_not_a_cluster() -> None:
    assert all(workers.is_local(m) for m in ("local", "local[2]", "local[*]", "local[2, 3]"))
    assert not any(workers.is_local(m) for m in ("local-cluster[2,1,1024]", "spark://host:7077", "yarn"))


def test_streamql_is_packed_as_its_sources() -> None:
    with zipfile.ZipFile(workers.packed_streamql()) as archive:
        names = set(archive.namelist())
    assert {"streamql/__init__.py", "streamql/spark/runtime/workers.py", "streamql/py.typed"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_local_session_returns_the_active_session(spark: SparkSession) -> None:
    assert sq.local_session() is spark  # the fixture's workers run this interpreter: no warning


def test_local_session_warns_when_the_active_sessions_workers_run_another_python(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spark.sparkContext, "pythonExec", "/usr/bin/python3")
    with pytest.warns(RuntimeWarning, match="workers run '/usr/bin/python3'"):
        assert sq.local_session() is spark


def test_local_session_takes_a_local_master_and_string_settings() -> None:
    with pytest.raises(sq.BindingError, match="local_session builds a local session"):
        sq.local_session("yarn")
    with pytest.raises(sq.BindingError, match=r"spark.sql.shuffle.partitions=4 is a int \(write '4'\)"):
        sq.local_session(**{"spark.sql.shuffle.partitions": 4})  # type: ignore[call-overload]
