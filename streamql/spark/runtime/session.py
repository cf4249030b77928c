"""``sq.local_session``: a local SparkSession configured for streamql — Python workers that run the
driver's interpreter (so they import streamql), application times shown in UTC, no web UI; with
``connect=True`` a Spark Connect session to a local Spark Connect server configured so."""
from __future__ import annotations

import os
import shutil
import sys
import warnings
from typing import TYPE_CHECKING, Any, Literal, overload

from pyspark.sql import SparkSession

from streamql.errors import BindingError
from streamql.spark.compat import connect_server_settings
from streamql.spark.runtime.workers import is_local

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession


# The first overload has no ``connect``: settings passed as ``**{"spark.x": "4"}`` (a dict of
# strings) could otherwise be taken for it by the type checker.
@overload
def local_session(master: str = ..., **config: str) -> SparkSession: ...
@overload
def local_session(master: str = ..., *, connect: Literal[False], **config: str) -> SparkSession: ...
@overload
def local_session(master: str = ..., *, connect: Literal[True], **config: str) -> ConnectSession: ...


def local_session(master: str = "local[*]", connect: bool = False,  # type: ignore[misc]  # see above
                  **config: str) -> Any:
    """Builds a local SparkSession for streamql, or returns the active one.

    Spark's Python workers run this interpreter (``sys.executable``: ``PYSPARK_PYTHON`` is set
    before the JVM starts, and ``spark.pyspark.python``/``spark.pyspark.driver.python`` say the
    same), so they import streamql, pyarrow and pandas as the driver does; the session time zone
    is UTC; the web UI, the console progress bar and PySpark's per-call DataFrame debugging context
    are off. ``master`` is ``local``, ``local[N]``, ``local[*]`` or
    ``local-cluster[...]``; ``config`` adds or overrides Spark settings, as strings. Their keys
    contain dots, so pass them as a dict: ``**{"spark.sql.shuffle.partitions": "4"}``.

    If a SparkSession is already active, it is returned as it is: ``master`` and ``config`` do
    not apply (a process has one SparkContext), and a ``RuntimeWarning`` says so when its Python
    workers run another interpreter. For a cluster, build the session as usual
    (docs/cluster.md).

    ``connect=True`` starts a local Spark Connect server (``local`` or ``local[N]`` master, the
    same settings, its Python workers running this interpreter) and returns a Spark Connect
    session to it — the kind of session Databricks Connect and serverless compute give
    (docs/spark-connect.md). It needs PySpark's Connect client: ``pip install streamql[connect]``.

    >>> spark = sq.local_session("local[2]", **{"spark.sql.shuffle.partitions": "4"})  # doctest: +SKIP
    >>> spark.conf.get("spark.sql.session.timeZone")                                   # doctest: +SKIP
    'UTC'
    """
    if not (is_local(master) or master.strip().startswith("local-cluster[")):
        raise BindingError(f"local_session builds a local session (master local, local[N], local[*] or "
                           f"local-cluster[...]), got master {master!r}: for a cluster build the session with "
                           "SparkSession.builder (docs/cluster.md)")
    for key, value in config.items():
        if not isinstance(value, str):
            raise BindingError(f"local_session: Spark settings are strings; {key}={value!r} is a "
                               f"{type(value).__name__} (write {str(value)!r})")
    if connect:
        return _local_connect_session(master, config)
    active = SparkSession.getActiveSession()
    if active is not None:
        workers = active.sparkContext.pythonExec
        if not _same_interpreter(shutil.which(workers) or workers, sys.executable):
            warnings.warn(f"local_session returns the active SparkSession, whose Python workers run {workers!r}, "
                          f"not this interpreter ({sys.executable}); stop it first (spark.stop()) to get a "
                          "session whose workers run this interpreter", RuntimeWarning, stacklevel=2)
        return active
    settings = _settings(config)
    # PySpark reads the workers' interpreter from PYSPARK_PYTHON when it starts the SparkContext
    # (spark.pyspark.python is read by spark-submit, not by a plain ``python script.py``)
    os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _settings(config: dict[str, str]) -> dict[str, str]:
    return {
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # PySpark's DataFrame debugging records the call site of every PySpark call in the JVM (four
        # round trips each); a query builds hundreds of Columns, and a small one spends a fifth of its
        # time on this. Spark's own error messages are unchanged; ``config`` can turn it back on.
        # (streamql builds its own plans without it whatever the setting: runtime/origins.py.)
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        **config,
    }


def _local_connect_session(master: str, config: dict[str, str]) -> Any:
    """A Spark Connect session to a local server started in this process (PySpark's
    ``SparkSession.builder.remote("local[N]")``), whose Python workers run this interpreter."""
    if not is_local(master):
        raise BindingError(f"local_session(connect=True) starts a local Spark Connect server (master local or "
                           f"local[N]), got master {master!r}; for a remote server use "
                           "SparkSession.builder.remote('sc://host:port') (docs/spark-connect.md)")
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError as exc:
        raise BindingError(f"local_session(connect=True) needs PySpark's Spark Connect client ({exc}): "
                           "pip install 'streamql[connect]'") from exc
    active = ConnectSession.getActiveSession()
    if active is not None:
        return active
    if SparkSession.getActiveSession() is not None:
        raise BindingError("local_session(connect=True): a classic SparkSession is active in this process; stop it "
                           "first (spark.stop()): the local Spark Connect server starts Spark in this process")
    settings = {**connect_server_settings(config), **_settings(config)}
    os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    builder = SparkSession.builder.remote(master.strip())
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _same_interpreter(a: str, b: str) -> bool:
    """The same program in the same directory (``.venv/bin/python`` and ``.venv/bin/python3``): a
    virtual environment's interpreter is a link to the base one, but imports other packages."""
    return (os.path.dirname(os.path.abspath(a)) == os.path.dirname(os.path.abspath(b))
            and os.path.realpath(a) == os.path.realpath(b))
