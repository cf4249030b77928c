"""The typed fluent API of windows and groups: ``Windowed[T]``, ``Grouped[K, T]``,
``GroupedWindowed[K, T]`` and the ``Window[T]`` / ``GroupWindow[K, T]`` a window's ``select``
receives.

Inside ``select(lambda w: ...)`` the aggregates ``w.count()``, ``w.sum(f)``, ``w.avg(f)``,
``w.min(f)``, ``w.max(f)`` and ``w.aggregate(user_aggregate, f)`` are expressions: several may be
combined with arithmetic in one payload. Statically they have the types of their results.
``top_k(k, by, select)`` instead keeps every window's top ``k`` events, each with the window's lifetime.
"""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Generic, NoReturn, Optional, TypeVar, cast, overload

from streamql.errors import ExpressionError
from streamql.expr.nodes import Aggregate, Expr, GroupKey, Param, Rank, aggregates_of, reads_key, struct_type
from streamql.expr.trace import param_names, trace, trace_call, wrap
from streamql.expr.typing_rules import ORDERED
from streamql.payload import Kind, PayloadSchema, ValueType
from streamql.query.aggregates import UserAggregate, result_value_type
from streamql.query.stream import Payload, Stream
from streamql.query.windows import CountWindow, HoppingWindow, SessionWindow, SnapshotWindow, TopK, \
    WindowAggregate, WindowSpec
from streamql.time import TICK, duration_micros

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")
N = TypeVar("N", int, float, Decimal)
C = TypeVar("C")
#: avg of a float is a float; of an optional float, an optional float (nulls are skipped)
Fl = TypeVar("Fl", float, Optional[float])

_SUMMABLE = (Kind.INT, Kind.FLOAT, Kind.DECIMAL)


class Window(Generic[T]):
    """The events of one window, inside a window's ``select``: its methods are aggregates.

    >>> stream.tumbling_window(timedelta(hours=1)).select(
    ...     lambda w: Hourly(count=w.count(), total=w.sum(lambda e: e.price * e.qty)))  # doctest: +SKIP
    """

    __slots__ = ("_schema",)

    def __init__(self, schema: PayloadSchema) -> None:
        self._schema = schema

    def _argument(self, fn: str, f: Callable[[T], Any]) -> Expr:
        if not callable(f):
            raise ExpressionError(f"w.{fn} takes a function of the event (e.g. lambda e: e.price), got {f!r}")
        arg = trace(f, [self._schema], f"w.{fn}")
        if aggregates_of(arg) or reads_key(arg):
            raise ExpressionError(f"w.{fn}'s function reads the window itself ({arg.show()}): an aggregate's "
                                  "argument is an expression of one event")
        if arg.type.kind is Kind.STRUCT:
            raise ExpressionError(f"w.{fn} aggregates scalar values, not the payload {arg.type} ({arg.show()})")
        return arg

    def count(self) -> int:
        """The number of events in the window."""
        return cast(int, wrap(Aggregate(ValueType(Kind.INT), "count", None)))

    @overload
    def sum(self, f: Callable[[T], N]) -> N: ...
    @overload
    def sum(self, f: Callable[[T], Optional[N]]) -> Optional[N]: ...

    def sum(self, f: Callable[[T], Any]) -> Any:
        """The sum of ``f`` over the window's events, skipping nulls (null if all are null)."""
        arg = self._argument("sum", f)
        if arg.type.kind not in _SUMMABLE:
            raise ExpressionError(f"w.sum needs numbers (int, float, Decimal), got {arg.type} ({arg.show()})")
        return wrap(Aggregate(arg.type, "sum", arg))

    def avg(self, f: Callable[[T], Fl]) -> Fl:
        """The mean of ``f`` over the window's events, skipping nulls (null if all are null)."""
        arg = self._argument("avg", f)
        if arg.type.kind is Kind.DECIMAL:
            raise ExpressionError(
                f"w.avg of Decimal ({arg.show()}) is not offered: the quotient's scale differs between "
                "engines; average a float, or divide w.sum(...) by w.count() in float")
        if arg.type.kind not in (Kind.INT, Kind.FLOAT):
            raise ExpressionError(f"w.avg needs numbers (int, float), got {arg.type} ({arg.show()})")
        return cast(Fl, wrap(Aggregate(ValueType(Kind.FLOAT, arg.type.nullable), "avg", arg)))

    def _extreme(self, fn: str, f: Callable[[T], Any]) -> Any:
        arg = self._argument(fn, f)
        if arg.type.kind not in ORDERED:
            raise ExpressionError(f"w.{fn} needs ordered values, got {arg.type} ({arg.show()})")
        return wrap(Aggregate(arg.type, fn, arg))

    def min(self, f: Callable[[T], C]) -> C:
        """The least value of ``f`` over the window's events, skipping nulls."""
        return cast(C, self._extreme("min", f))

    def max(self, f: Callable[[T], C]) -> C:
        """The greatest value of ``f`` over the window's events, skipping nulls."""
        return cast(C, self._extreme("max", f))

    def aggregate(self, aggregate: UserAggregate[V, Any, R], f: Callable[[T], V]) -> R:
        """A user-defined aggregate (``sq.UserAggregate``) of ``f`` over the window's events."""
        if not isinstance(aggregate, UserAggregate):
            raise ExpressionError(f"w.aggregate needs a sq.UserAggregate instance, got {aggregate!r}")
        arg = self._argument("aggregate", f)
        return cast(R, wrap(Aggregate(result_value_type(aggregate), "user", arg, aggregate)))

    if not TYPE_CHECKING:
        # a clear message at run time; hidden from type checkers, for which a ``__getattr__`` would
        # make every misspelled aggregate (``w.nosuch()``) well-typed
        def __getattr__(self, name: str) -> NoReturn:
            if name == "key":
                raise ExpressionError("w.key exists on grouped windows only: group_by(...) before the window")
            raise ExpressionError(f"a window has no attribute {name!r}; its aggregates are count, sum, avg, "
                                  "min, max and aggregate")


class GroupWindow(Window[T], Generic[K, T]):
    """The events of one window of one group; ``key`` is the group's key."""

    __slots__ = ("_key",)

    def __init__(self, schema: PayloadSchema, key: ValueType) -> None:
        super().__init__(schema)
        self._key = key

    @property
    def key(self) -> K:
        return cast(K, wrap(GroupKey(self._key)))


def _projection(f: Callable[..., Any], window: Window[Any], what: str) -> Expr:
    projection = trace_call(f, [window], what)
    if projection.type.kind is not Kind.STRUCT:
        raise ExpressionError(f"{what} must build a payload instance (a dataclass or attrs class), got "
                              f"{projection.type} ({projection.show()})")
    return projection


def _top_k(source: Stream[Any], window: WindowSpec, key: Expr | None, k: object, by: object, select: object,
           descending: object) -> TopK:
    """The ``TopK`` node of ``top_k``'s arguments, checked: ``k`` a positive int, ``by`` a function of
    the event giving ordered values, ``select`` a function of the event and its rank building a
    payload, ``descending`` a bool."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ExpressionError(f"top_k: k must be an int of at least 1 (the events of rank <= k are kept), got {k!r}")
    if not isinstance(descending, bool):
        raise ExpressionError(f"top_k: descending must be a bool, got {descending!r}")
    if not callable(by):
        raise ExpressionError(f"top_k: by must be a function of the event (e.g. lambda e: e.price), got {by!r}")
    if not callable(select):
        raise ExpressionError("top_k: select must be a function of the event and its rank "
                              f"(e.g. lambda e, rank: Top(e.meter, rank)), got {select!r}")
    schema = source.node.schema
    order = trace(by, [schema], "top_k's by")
    if order.type.kind not in ORDERED:
        raise ExpressionError(f"top_k: by must give ordered values (numbers, str, bytes, datetime, timedelta, bool, "
                              f"UUID), got {order.type} ({order.show()})")
    names = param_names(select, 2, "top_k's select")
    event = wrap(Param(struct_type(schema), 0, names[0]))
    projection = trace_call(select, [event, wrap(Rank(ValueType(Kind.INT)))], "top_k's select")
    if projection.type.kind is not Kind.STRUCT:
        raise ExpressionError(f"top_k's select must build a payload instance (a dataclass or attrs class), got "
                              f"{projection.type} ({projection.show()})")
    return TopK(source.node, window, key, k, order, descending, projection)


class Windowed(Generic[T]):
    """A stream cut into windows; ``select`` aggregates each window into one output event, ``top_k``
    keeps each window's top events."""

    __slots__ = ("_source", "_window")

    def __init__(self, source: Stream[T], window: WindowSpec) -> None:
        self._source, self._window = source, window

    def select(self, f: Callable[[Window[T]], Payload]) -> Stream[Payload]:
        """One event per non-empty window with the payload ``f`` builds from the window's aggregates."""
        schema = self._source.node.schema
        projection = _projection(f, Window(schema), f"{self._window} window select")
        return Stream(WindowAggregate(self._source.node, self._window, None, projection))

    def top_k(self, k: int, by: Callable[[T], Any], select: Callable[[T, int], Payload],
              descending: bool = True) -> Stream[Payload]:
        """In every window, the events of rank at most ``k`` by ``by`` (largest first unless
        ``descending=False``; SQL ``RANK``: ties share a rank and all ties at ``k`` are kept; nulls
        rank after every value), each as an event with the window's lifetime and the payload
        ``select(event, rank)`` (docs/top-k.md).

        >>> readings.snapshot_window().top_k(3, lambda e: e.consumption,
        ...                                  lambda e, rank: Top(e.meter, e.consumption, rank))  # doctest: +SKIP
        """
        return Stream(_top_k(self._source, self._window, None, k, by, select, descending))


class Grouped(Generic[K, T]):
    """A stream grouped by a key: each window kind applies per group."""

    __slots__ = ("_source", "_key")

    def __init__(self, source: Stream[T], key: Expr) -> None:
        self._source, self._key = source, key

    def _windowed(self, window: WindowSpec) -> GroupedWindowed[K, T]:
        return GroupedWindowed(self._source, self._key, window)

    def snapshot_window(self) -> GroupedWindowed[K, T]:
        """Snapshot windows per group."""
        return self._windowed(SnapshotWindow())

    def hopping_window(self, size: timedelta, hop: timedelta) -> GroupedWindowed[K, T]:
        """Hopping windows ``[k*hop, k*hop + size)`` per group."""
        return self._windowed(hopping_spec("hopping_window", size, hop))

    def tumbling_window(self, size: timedelta) -> GroupedWindowed[K, T]:
        """Tumbling windows ``[k*size, (k+1)*size)`` per group."""
        return self._windowed(hopping_spec("tumbling_window", size, size))

    def count_window(self, n: int) -> GroupedWindowed[K, T]:
        """Windows of ``n`` consecutive distinct start times per group."""
        return self._windowed(count_spec(n))

    def session_window(self, gap: timedelta, max_duration: timedelta | None = None) -> GroupedWindowed[K, T]:
        """Sessions per group: the group's events whose lifetimes, each extended by ``gap``, overlap;
        with ``max_duration``, each session cut into pieces of that length from its first start.

        >>> clicks.group_by(lambda e: e.user).session_window(timedelta(minutes=30)).select(
        ...     lambda w: Visit(w.key, w.count()))  # doctest: +SKIP
        """
        return self._windowed(session_spec(gap, max_duration))


class GroupedWindowed(Generic[K, T]):
    """Windows per group; ``select`` sees the group's key as ``w.key``."""

    __slots__ = ("_source", "_key", "_window")

    def __init__(self, source: Stream[T], key: Expr, window: WindowSpec) -> None:
        self._source, self._key, self._window = source, key, window

    def select(self, f: Callable[[GroupWindow[K, T]], Payload]) -> Stream[Payload]:
        """One event per non-empty window of each group with the payload ``f`` builds."""
        schema = self._source.node.schema
        window: GroupWindow[K, T] = GroupWindow(schema, self._key.type)
        projection = _projection(f, window, f"grouped {self._window} window select")
        return Stream(WindowAggregate(self._source.node, self._window, self._key, projection))

    def top_k(self, k: int, by: Callable[[T], Any], select: Callable[[T, int], Payload],
              descending: bool = True) -> Stream[Payload]:
        """In every window of each group, the group's events of rank at most ``k`` by ``by``
        (``Windowed.top_k`` per group), each as an event with the window's lifetime and the payload
        ``select(event, rank)`` (docs/top-k.md).

        >>> readings.group_by(lambda e: e.region).tumbling_window(timedelta(hours=1)).top_k(
        ...     3, lambda e: e.consumption, lambda e, rank: Top(e.meter, e.consumption, rank))  # doctest: +SKIP
        """
        return Stream(_top_k(self._source, self._window, self._key, k, by, select, descending))


def hopping_spec(op: str, size: object, hop: object) -> HoppingWindow:
    """Validated hopping window parameters (positive ``timedelta``s of whole microseconds)."""
    for name, value in (("size", size), ("hop", hop)):
        if not isinstance(value, timedelta):
            raise ExpressionError(f"{op}: {name} must be a timedelta, got {value!r}")
        if value <= timedelta(0):
            raise ExpressionError(f"{op}: {name} must be positive, got {value}")
    assert isinstance(size, timedelta) and isinstance(hop, timedelta)
    return HoppingWindow(duration_micros(size), duration_micros(hop))


def count_spec(n: object) -> CountWindow:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ExpressionError(f"count_window needs a positive int, got {n!r}")
    return CountWindow(n)


def session_spec(gap: object, max_duration: object = None) -> SessionWindow:
    """Validated session window parameters: a positive ``timedelta`` gap and an optional positive
    ``timedelta`` maximum duration (in whole microseconds)."""
    return SessionWindow(_positive_duration("gap", gap),
                         None if max_duration is None else _positive_duration("max_duration", max_duration))


def _positive_duration(name: str, value: object) -> int:
    if not isinstance(value, timedelta):
        raise ExpressionError(f"session_window: {name} must be a timedelta, got {value!r}")
    if value < TICK:
        raise ExpressionError(f"session_window: {name} must be positive (at least one tick, {TICK}), got {value}")
    return duration_micros(value)
