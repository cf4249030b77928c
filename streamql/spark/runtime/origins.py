"""Plans built without PySpark's call-site recording.

PySpark 4 records, for every column function and DataFrame method called, the Python line that
called it (its DataFrame debugging, ``spark.python.sql.dataFrameDebugging.enabled``, on by
default), so that an error raised while a job runs can name the user's line. On a classic session
that is four to five py4j round trips a call (the active session, a configuration value, setting
and clearing the JVM's current origin) and an attempted import of IPython. A live step of the
sliding average makes 256 such calls: 2,560 of its 3,799 round trips, 0.3-0.4 s of the step's
1.3-1.7 s of planning.

In a plan streamql builds, every such line is streamql's own: an error names the operator and the
field itself (``streamql.errors``), and the recorded line would point into this package, not at
anything the user wrote. So ``building()`` turns the recording off while streamql builds plans
and puts the setting back after: PySpark reads the configuration once a process and keeps it in
``pyspark.errors.utils._enable_debugging_cache``, which ``building`` sets to False and restores
(blocks in several threads nest: the last to leave restores it). PySpark 3.5 has no such
recording, and a PySpark without that name is left as it is.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

_errors: Any
try:
    from pyspark.errors import utils as _errors
except ImportError:  # pragma: no cover - every supported PySpark has pyspark.errors
    _errors = None

_CACHE = "_enable_debugging_cache"
_lock = threading.Lock()
_inside = 0
_saved: Any = None


def recording_known() -> bool:
    """Whether this PySpark records call sites in the way ``building`` turns off."""
    return _errors is not None and hasattr(_errors, _CACHE)


@contextmanager
def building() -> Iterator[None]:
    """A block that builds streamql's plans: PySpark records no call sites inside it."""
    global _inside, _saved
    if not recording_known():
        yield
        return
    with _lock:
        if _inside == 0:
            _saved = getattr(_errors, _CACHE)
            setattr(_errors, _CACHE, False)
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                setattr(_errors, _CACHE, _saved)
                _saved = None
