"""User-defined aggregates: a fold over a window's events, usable like the built-ins.

>>> class Spread(sq.UserAggregate[float, tuple[float, float] | None, float]):
...     result_type = float
...     def zero(self): return None
...     def add(self, acc, value, start, end):
...         return (value, value) if acc is None else (min(acc[0], value), max(acc[1], value))
...     def result(self, acc): return acc[1] - acc[0]
>>> # windowed.select(lambda w: Out(w.aggregate(Spread(), lambda e: e.price)))   # doctest: +SKIP
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

from streamql.errors import ExpressionError
from streamql.payload import Kind, ValueType, value_type

V = TypeVar("V")
A = TypeVar("A")
R = TypeVar("R")


class UserAggregate(Generic[V, A, R]):
    """Base class of user-defined aggregates over values of type ``V`` with accumulator ``A``
    and result ``R``.

    A window's result starts from ``zero()``; ``add`` folds in each event's value together with
    its lifetime clipped to the window (tz-aware UTC datetimes, so time-weighted aggregates can
    weigh by ``end - start``), in the order of (start, end, value, nulls first); ``result`` gives
    the window's value. Declare ``result_type`` (``float``, ``int``, ``str``, ``Optional[...]``, ...):
    it is the aggregate's static type in queries and its column type on Spark.

    On Spark the values of each window are gathered on the executors and folded by a vectorised
    (Arrow) Python function there; nothing is collected to the driver. The methods must be pure.
    """

    result_type: ClassVar[Any]

    def zero(self) -> A:
        raise NotImplementedError(f"{type(self).__name__} must define zero()")

    def add(self, acc: A, value: V, start: datetime, end: datetime) -> A:
        raise NotImplementedError(f"{type(self).__name__} must define add(acc, value, start, end)")

    def result(self, acc: A) -> R:
        raise NotImplementedError(f"{type(self).__name__} must define result(acc)")

    def fold(self, items: list[tuple[V, datetime, datetime]]) -> R:
        """The aggregate of ``(value, start, end)`` items, already in order."""
        acc = self.zero()
        for value, start, end in items:
            acc = self.add(acc, value, start, end)
        return self.result(acc)


def result_value_type(aggregate: UserAggregate[Any, Any, Any]) -> ValueType:
    """The static type of a user aggregate's result, from its ``result_type``."""
    name = type(aggregate).__name__
    declared = getattr(aggregate, "result_type", None)
    if declared is None:
        raise ExpressionError(f"{name} must declare result_type (e.g. `result_type = float`)")
    vtype = value_type(declared, f"{name}.result_type")
    if vtype.kind is Kind.STRUCT:
        raise ExpressionError(f"{name}.result_type must be a scalar type, not the payload {vtype}")
    return vtype
