"""streamql: typed temporal queries over event streams (StreamInsight's model) on Apache Spark.

>>> import streamql as sq
>>> readings = sq.input("readings", Reading)                # doctest: +SKIP
>>> busy = readings.where(lambda e: e.consumption > 100)    # doctest: +SKIP
"""
from typing import TYPE_CHECKING, Any

from streamql.advance_time import AdvanceTimeGeneration, AdvanceTimeImport, AdvanceTimePolicy, AdvanceTimeSettings
from streamql.errors import BadInputError, BindingError, ExpressionError, SchemaError, StreamqlError
from streamql.events import Cti, Edge, EdgeKind, EndEdge, Event, Insert, Late, Result, Shape, StartEdge
from streamql.expr.trace import coalesce, greatest, if_, is_in, is_null, least, length, not_
from streamql.query.aggregates import UserAggregate
from streamql.query.stream import Stream, input
from streamql.query.windowed import Grouped, GroupedWindowed, GroupWindow, Window, Windowed
from streamql.time import INFINITY, TICK

if TYPE_CHECKING:
    from streamql import plot, reference, timeline
    from streamql.binder import Binder
    from streamql.running import Progress, RunningQuery
    from streamql.spark.runtime.session import local_session

#: the Spark entry points, imported when first used: ``import streamql`` and the reference evaluator
#: work without PySpark (``pip install streamql`` brings no Spark: docs/compatibility.md)
_SPARK_NAMES = {"Binder": "streamql.binder", "Progress": "streamql.running", "RunningQuery": "streamql.running",
                "local_session": "streamql.spark.runtime.session"}


#: the modules of the reference evaluator and the plots, imported when first used: Spark's Python
#: workers import this package for the scan's code and need neither (docs/design-fewer-jobs.md, step 2)
_MODULES = ("plot", "reference", "timeline")


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _MODULES:
        return import_module(f"streamql.{name}")  # which sets it on this package
    module = _SPARK_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'streamql' has no attribute {name!r}")

    from streamql.spark.compat import require_pyspark

    require_pyspark(f"streamql.{name}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "INFINITY", "TICK", "AdvanceTimeGeneration", "AdvanceTimeImport", "AdvanceTimePolicy",
    "AdvanceTimeSettings", "BadInputError", "Binder", "BindingError", "Cti", "Edge", "EdgeKind",
    "EndEdge", "Event", "ExpressionError", "GroupWindow", "Grouped", "GroupedWindowed", "Insert",
    "Late", "Progress", "Result", "RunningQuery", "SchemaError", "Shape", "StartEdge", "Stream", "StreamqlError",
    "UserAggregate", "Window", "Windowed", "coalesce", "greatest", "if_", "input", "is_in", "is_null", "least",
    "length", "local_session", "not_", "plot", "reference", "timeline",
]
