"""Spark's Python workers: the first Python job a session runs for streamql checks that the
workers can import what streamql runs in them (streamql and pyarrow; pandas is located, not
imported, as only some queries need it). A batch run's first Python job is the scan's summary pass,
whose function runs guarded (``collected``): a worker that cannot import streamql returns that as
its one row instead of summaries, and the driver raises the ``BindingError`` naming the fix — no
job of its own. ``check_workers`` does the same with one tiny job (a ``mapInArrow`` probe, which
classic and Spark Connect sessions both run), for the paths whose first job is not a summary
(``Binder.start``) and to diagnose a guarded job that failed. On a cluster either ships streamql
to the executors itself when only streamql is missing (``addPyFile`` on a classic session,
``addArtifacts(..., pyfile=True)`` on a Spark Connect one).

>>> check_workers(spark)  # doctest: +SKIP   (raises BindingError naming the fix when they cannot)
>>> rows = collected(frame, summarize, schema, arrow_schema)  # doctest: +SKIP   (frame.mapInArrow(...).collect())
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any, Callable

import attrs
import pyarrow as pa
from streamql.spark.compat import SparkContext  # pyspark-client has none
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from streamql.errors import BindingError
from streamql.spark.runtime.connect import context_of, is_connect
from streamql.spark.runtime.jobs import in_job_group

#: what the Python workers import when they run streamql's code (the arrival scan's mapInArrow,
#: edge matching, user-defined aggregates)
NEEDED = ("pyarrow", "pandas", "streamql")

#: of ``NEEDED``, what the probe and a guarded job only locate (``importlib.util.find_spec``) rather than import:
#: the summary pass does not run pandas (only user-defined aggregates' Arrow UDFs do), and importing
#: it costs a worker process 0.8 s
LOCATED = ("pandas",)

#: the job group the check's job runs in, so that job counts per group leave it out
JOB_GROUP = "streamql-worker-check"

#: the column a guarded job's rows carry besides the function's own: null, except on the one row
#: of a worker that could not import what ``NEEDED`` names (``collected``)
WORKER = "_streamql_worker"
_FAILURE = T.StructType([T.StructField("module", T.StringType()), T.StructField("missing", T.StringType()),
                         T.StructField("error", T.StringType())])
_WORKER_TYPE = T.StructType([T.StructField("executable", T.StringType()),
                             T.StructField("failures", T.ArrayType(_FAILURE))])
_WORKER_ARROW = pa.struct([("executable", pa.string()),
                           ("failures", pa.list_(pa.struct([("module", pa.string()), ("missing", pa.string()),
                                                             ("error", pa.string())])))])


@attrs.frozen
class Failure:
    """A module the workers could not import: ``missing`` is the module Python did not find (it
    may be a dependency of ``module``), ``error`` the exception as text."""

    module: str
    missing: str | None
    error: str


@attrs.frozen
class Probe:
    """What one Python worker reported: its ``sys.executable`` and the imports that failed."""

    executable: str
    failures: tuple[Failure, ...]


Prober = Callable[[Any], Any]

#: the probe's one output row
PROBE_SCHEMA = "executable string, failures array<struct<module: string, missing: string, error: string>>"


def _import_check() -> Callable[[], list[dict[str, Any]]]:
    """A function for the workers that imports what ``NEEDED`` names (only locating what
    ``LOCATED`` names) and returns each failure as ``{"module", "missing", "error"}``. Nested, so
    that it goes to the workers by value inside the probe and the guarded job that call it, never
    importing this module."""
    needed, located = NEEDED, LOCATED

    def failures() -> list[dict[str, Any]]:
        import importlib
        import importlib.util

        failed = []
        for module in needed:
            try:
                if module not in located:
                    importlib.import_module(module)
                elif importlib.util.find_spec(module) is None:
                    raise ModuleNotFoundError(f"No module named {module!r}", name=module)
            except Exception as exc:  # noqa: BLE001 - any failure to import is reported
                failed.append({"module": module, "missing": getattr(exc, "name", None),
                               "error": f"{type(exc).__name__}: {exc}"})
        return failed

    return failures


def _prober() -> Prober:
    # A function nested in another is sent to the workers by value (cloudpickle cannot find it by
    # name), and it refers to nothing but builtins and modules it imports itself: the worker runs
    # it without importing this module, which is what it checks. ``mapInArrow`` imports pyarrow in
    # the worker before it calls the function: a worker without pyarrow fails the job, which the
    # check reports with the worker's error.
    # The report is built by Arrow's JSON reader: pyarrow's own conversions from Python values
    # (``from_pylist``) import pandas in the worker, 0.4-0.8 s (streamql.spark.base.arrow_numpy).
    failures = _import_check()
    report_schema = pa.schema([_WORKER_ARROW.field(i) for i in range(_WORKER_ARROW.num_fields)])

    def probe(batches: Any) -> Any:
        import io
        import json
        import sys as worker_sys

        import pyarrow.json

        for _ in batches:
            pass
        text = json.dumps({"executable": worker_sys.executable, "failures": failures()})
        report = pyarrow.json.read_json(io.BytesIO(text.encode()),
                                        read_options=pyarrow.json.ReadOptions(use_threads=False),
                                        parse_options=pyarrow.json.ParseOptions(explicit_schema=report_schema))
        yield from report.to_batches()

    return probe


def _guarded(function: Prober, arrow: pa.Schema) -> Prober:
    """``function`` (a ``mapInArrow`` function returning batches of schema ``arrow``) wrapped so that
    a worker that cannot import streamql yields one row saying so (``WORKER``; the other columns
    null) instead of failing the job. The wrapper is sent by value, as the probe (``_prober``), and
    ``function`` inside it as bytes: unpickling ``function`` imports streamql's modules, which the
    wrapper does only after it has checked that it can."""
    from pyspark import cloudpickle  # PySpark's own pickler of functions, on the workers as well

    payload = cloudpickle.dumps(function)  # type: ignore[no-untyped-call]  # PySpark leaves it unannotated
    failures, column, worker_type = _import_check(), WORKER, _WORKER_ARROW
    guarded_schema = pa.schema([*arrow, pa.field(WORKER, _WORKER_ARROW)])

    def run(batches: Any) -> Any:
        import pickle
        import sys as worker_sys

        import pyarrow

        failed = failures()
        if failed:
            for _ in batches:
                pass
            report = {column: {"executable": worker_sys.executable, "failures": failed}}
            yield pyarrow.RecordBatch.from_pylist([report], schema=guarded_schema)
            return
        for batch in pickle.loads(payload)(batches):
            yield pyarrow.RecordBatch.from_arrays(
                [*batch.columns, pyarrow.nulls(batch.num_rows, worker_type)],
                schema=guarded_schema)

    return run


_checked: dict[str, str | None] = {}  # by SparkContext or Connect session: the check's message, None if it passed
_lock = threading.Lock()


def check_workers(spark: Any) -> None:
    """Raises ``BindingError`` unless Spark's Python workers can import streamql, pyarrow and
    pandas. Runs one tiny job the first time it is called for a SparkContext (a Spark Connect
    session: for the session) and caches the outcome (``spark``: a SparkSession of either kind or
    a SparkContext). On a cluster (a master other than ``local``/``local[N]``) whose workers lack
    only streamql, it ships streamql to them and checks again."""
    session = _session(spark)
    key = _key(session)
    with _lock:
        if key not in _checked:
            _checked[key] = _check(session)
        outcome = _checked[key]
    if outcome is not None:
        raise BindingError(outcome)


def collected(frame: DataFrame, function: Prober, schema: T.StructType, arrow: pa.Schema) -> list[dict[str, Any]]:
    """``frame.mapInArrow(function, schema).collect()`` as dicts, with the worker check folded in:
    on a session whose workers were not checked yet, ``function`` (whose batches have the Arrow
    schema ``arrow``) runs guarded (``_guarded``), and a worker that cannot import streamql raises
    the ``BindingError`` of ``check_workers`` — or, on a cluster lacking only streamql, has streamql
    shipped to it, and the job runs again. A guarded job that fails is diagnosed by
    ``check_workers``' probe (a worker that does not start, or has no pyarrow, fails any job): its
    ``BindingError``, else the job's own error. A job that returns no rows checked nothing."""
    spark = frame.sparkSession
    key = _key(spark)
    with _lock:
        known = key in _checked
        outcome = _checked.get(key)
    if outcome is not None:
        raise BindingError(outcome)
    if known:
        return [row.asDict() for row in frame.mapInArrow(function, schema).collect()]
    try:
        rows = frame.mapInArrow(_guarded(function, arrow),
                                T.StructType([*schema.fields, T.StructField(WORKER, _WORKER_TYPE)])).collect()
    except Exception:
        check_workers(spark)  # the BindingError naming the fix, where the workers are at fault
        raise
    reports = [row[WORKER] for row in rows if row[WORKER] is not None]
    if not reports:
        if rows:
            with _lock:
                _checked.setdefault(key, None)
        return [{name: value for name, value in row.asDict().items() if name != WORKER} for row in rows]
    probe = Probe(reports[0]["executable"],
                  tuple(Failure(f["module"], f["missing"], f["error"]) for f in reports[0]["failures"]))
    with _lock:
        if key not in _checked:
            _checked[key] = _judged(spark, probe)
        outcome = _checked[key]
    if outcome is not None:
        raise BindingError(outcome)
    return [row.asDict() for row in frame.mapInArrow(function, schema).collect()]  # streamql shipped: again


def passed(spark: Any) -> bool:
    """Whether the workers of ``spark``'s SparkContext (a Spark Connect session: of the session)
    were checked and import what streamql runs in them."""
    session = _session(spark)
    with _lock:
        return _checked.get(_key(session), "unchecked") is None


def _key(session: Any) -> str:
    """What the check's outcome is cached by: the SparkContext, or the Spark Connect session."""
    sc = context_of(session)
    return f"{sc.applicationId}/{id(sc)}" if sc is not None else f"connect/{session.session_id}"


def _session(spark: Any) -> Any:
    if isinstance(spark, SparkContext):
        return SparkSession.getActiveSession() or SparkSession(spark)
    return spark


def _check(spark: Any) -> str | None:
    """None if the workers import everything (after shipping streamql, where that is done), else
    the error message."""
    try:
        probe = run_probe(spark)
    except Exception as exc:  # noqa: BLE001 - the workers did not run: say so, with Spark's reason
        return _message(spark, None, f"Spark's Python workers did not run ({_reason(exc)})")
    return _judged(spark, probe)


def _judged(spark: Any, probe: Probe) -> str | None:
    """What a worker's report (``probe``) means: None if it imports everything, else the error
    message — on a cluster whose workers lack only streamql, after shipping streamql to them and
    probing again."""
    if not probe.failures:
        return None
    if not (_only_streamql_missing(probe) and not is_local(_master(spark))):
        return _message(spark, probe, f"Spark's Python workers cannot import {_failed(probe)}")
    sc = context_of(spark)
    if sc is not None:
        sc.addPyFile(str(packed_streamql()))
        how = "addPyFile"
    else:
        spark.addArtifacts(str(packed_streamql()), pyfile=True)
        how = "addArtifacts"
    try:
        shipped = run_probe(spark)
    except Exception as exc:  # noqa: BLE001
        return _message(spark, None, f"Spark's Python workers did not run after streamql was shipped to them "
                                     f"({_reason(exc)})")
    if not shipped.failures:
        return None
    return _message(spark, shipped, f"Spark's Python workers cannot import {_failed(shipped)}, even with "
                                    f"streamql shipped to them ({how})")


def run_probe(spark: Any) -> Probe:
    """Runs the probe in one task (on a classic session in a job group of its own, restoring the
    caller's) and returns what the worker reported."""
    spark = _session(spark)
    frame = spark.range(0, 1, 1, 1).mapInArrow(_prober(), PROBE_SCHEMA)
    sc = context_of(spark)
    if sc is None:
        row = frame.collect()[0]
    else:
        with in_job_group(sc, JOB_GROUP, "streamql: can the Python workers import streamql, pyarrow and pandas?"):
            row = frame.collect()[0]
    return Probe(row["executable"], tuple(Failure(f["module"], f["missing"], f["error"]) for f in row["failures"]))


def _master(spark: Any) -> str:
    sc = context_of(spark)
    if sc is not None:
        return sc.master or ""
    return str(spark.conf.get("spark.master", None) or "")


def is_local(master: str) -> bool:
    """``local``, ``local[4]``, ``local[*]``, ``local[2, 3]``: one JVM whose Python workers run on
    this machine (``local-cluster[...]`` has executors of its own, as a cluster)."""
    return re.fullmatch(r"local(\[[^\]]*\])?", master.strip()) is not None


def _only_streamql_missing(probe: Probe) -> bool:
    return [(f.module, f.missing) for f in probe.failures] == [("streamql", "streamql")]


def packed_streamql() -> Path:
    """A zip of the streamql package this driver runs (its ``.py`` files and ``py.typed``), built
    in a temporary directory removed when the process exits (Spark serves the file from there)."""
    package = Path(__file__).resolve().parents[2]  # streamql/spark/runtime/workers.py -> streamql/
    scratch = Path(tempfile.mkdtemp(prefix="streamql-ship-"))
    atexit.register(shutil.rmtree, scratch, True)
    target = scratch / "streamql.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
                archive.write(path, str(Path("streamql") / path.relative_to(package)))
    return target


def _failed(probe: Probe) -> str:
    return "; ".join(f"{f.module} ({f.error})" for f in probe.failures)


def _reason(exc: Exception) -> str:
    """The last Python error line of a failed job (Spark wraps it in a Java stack trace), else the
    first line of the error."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"(\w+\.)*\w*(Error|Exception): ", line)
              and not line.startswith(("org.", "java.", "scala.", "py4j."))]
    if python:
        return python[-1]
    return lines[0] if lines else type(exc).__name__


def _message(spark: Any, probe: Probe | None, problem: str) -> str:
    sc = context_of(spark)
    if sc is None:
        worker = "the Spark Connect server's (its PYSPARK_PYTHON or spark.pyspark.python)"
        if probe is not None:
            worker = f"{probe.executable} (a worker's sys.executable), {worker}"
        return (
            f"{problem}: queries run streamql's Python code in them.\n"
            f"  worker interpreter: {worker}\n"
            f"  driver interpreter: {sys.executable} (this client)\n"
            "Fix: install streamql with pyarrow and pandas into the Python of the Spark Connect server's "
            "workers, or start the server with PYSPARK_PYTHON naming a Python that has them; locally, "
            "sq.local_session(connect=True) starts a server whose workers run this interpreter "
            "(docs/spark-connect.md).")
    started = sc.pythonExec  # PySpark reads PYSPARK_PYTHON once, when the SparkContext starts
    origin = ("PYSPARK_PYTHON is not set" if "PYSPARK_PYTHON" not in os.environ and started == "python3"
              else "from PYSPARK_PYTHON")
    worker = f"Spark starts {started!r} ({origin})"
    if probe is not None:
        worker = f"{probe.executable} (a worker's sys.executable); {worker}"
    conf = sc.getConf().get("spark.pyspark.python")
    if conf is not None and conf != started:
        worker += f"; spark.pyspark.python={conf} is read by spark-submit only"
    return (
        f"{problem}: queries run streamql's Python code in them.\n"
        f"  worker interpreter: {worker}\n"
        f"  driver interpreter: {sys.executable}\n"
        "Fix: build the session with sq.local_session(), whose workers run the driver's interpreter; "
        f"or set PYSPARK_PYTHON={sys.executable} (spark.pyspark.python with spark-submit) before the "
        "session is built; or install streamql with pyarrow and pandas into the workers' Python. "
        "On a cluster see docs/cluster.md.")
