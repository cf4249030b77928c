"""The typed fluent API: ``Stream[T]`` wraps an operator tree and every call returns a new one."""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar, Union

from streamql.errors import ExpressionError
from streamql.events import Shape
from streamql.expr.nodes import Expr, Literal
from streamql.expr.trace import trace, trace_condition, trace_typed
from streamql.payload import Kind, ValueType, schema_of
from streamql.query import esper, joins, nodes
from streamql.time import duration_micros

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from streamql.query.windowed import Grouped, Windowed

    import attrs

    #: what mypy accepts as a payload: an instance of a dataclass or an attrs class
    PayloadInstance = Union[DataclassInstance, attrs.AttrsInstance]

T = TypeVar("T")
U = TypeVar("U")
K = TypeVar("K")
#: a payload type: bounding ``select``'s result and ``input``'s payload lets mypy reject
#: ``select(lambda e: e.x)`` and ``sq.input("r", int)``, which fail at query construction
Payload = TypeVar("Payload", bound="PayloadInstance")


class Stream(Generic[T]):
    """A temporal query producing events with payloads of type ``T``.

    Queries are values: building one never touches Spark, nothing mutates, and structurally
    equal queries are equal (``==`` and ``hash``).
    """

    __slots__ = ("_node",)

    def __init__(self, node: nodes.Node) -> None:
        self._node = node

    @property
    def node(self) -> nodes.Node:
        """The operator tree of this query."""
        return self._node

    @property
    def payload_type(self) -> type[T]:
        cls: type[T] = self._node.schema.cls
        return cls

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._node == self._node

    def __hash__(self) -> int:
        return hash(self._node)

    def __repr__(self) -> str:
        return f"Stream[{self._node.schema.name}]({type(self._node).__name__})"

    def explain(self) -> str:
        """The query tree as text: each operator with its arguments, its payload type and the CTI
        rule that applies to it, the output operator first.

        >>> print(readings.where(lambda e: e.consumption > 0).explain())  # doctest: +SKIP
        where((e.consumption > 0)) -> Reading
        │   CTI: the input CTI
        └── input 'readings' (POINT) -> Reading
                CTI: its CTI rows, generation or import
        """
        from streamql.query.explain import explain

        return explain(self._node)

    # --- stateless --------------------------------------------------------------------
    def where(self, pred: Callable[[T], bool]) -> Stream[T]:
        """Keeps the events whose payload satisfies ``pred``.

        >>> readings.where(lambda e: e.consumption > 100)  # doctest: +SKIP
        """
        predicate = trace_typed(pred, [self._node.schema], "where", Kind.BOOL)
        return Stream(nodes.Where(self._node, predicate))

    def select(self, f: Callable[[T], Payload]) -> Stream[Payload]:
        """Maps each payload to a new payload instance built from expressions of the old one.

        >>> readings.select(lambda e: Usage(e.meter, e.consumption * 1000))  # doctest: +SKIP
        """
        projection = trace(f, [self._node.schema], "select")
        if projection.type.kind is not Kind.STRUCT:
            raise ExpressionError(
                f"select must build a payload instance (a dataclass or attrs class), got "
                f"{projection.type} ({projection.show()})"
            )
        return Stream(nodes.Select(self._node, projection))

    # --- lifetimes --------------------------------------------------------------------
    def alter_duration(self, d: timedelta | Callable[[T], timedelta]) -> Stream[T]:
        """Gives every event the lifetime ``[start, start + d)``; ``d`` may be a function of the payload.

        >>> readings.alter_duration(timedelta(minutes=3))  # doctest: +SKIP
        """
        duration: Expr
        if isinstance(d, timedelta):
            if d <= timedelta(0):
                raise ExpressionError(f"alter_duration needs a positive duration, got {d}")
            duration = Literal(ValueType(Kind.TIMEDELTA), d)
        elif callable(d):
            duration = trace_typed(d, [self._node.schema], "alter_duration", Kind.TIMEDELTA)
        else:
            raise ExpressionError(f"alter_duration needs a timedelta or a function of the payload, got {d!r}")
        return Stream(nodes.AlterDuration(self._node, duration))

    def alter_lifetime(self, start_shift: timedelta = timedelta(0), duration: timedelta | None = None) -> Stream[T]:
        """Moves every start by ``start_shift``; the end moves with it, or is ``start + duration``."""
        _check_timedelta("alter_lifetime", "start_shift", start_shift)
        if duration is not None:
            _check_timedelta("alter_lifetime", "duration", duration)
            if duration <= timedelta(0):
                raise ExpressionError(f"alter_lifetime needs a positive duration, got {duration}")
        return Stream(nodes.AlterLifetime(self._node, start_shift, duration))

    def shift(self, d: timedelta) -> Stream[T]:
        """Moves every lifetime (and the CTIs) by ``d``: ``alter_lifetime(start_shift=d)``."""
        _check_timedelta("shift", "d", d)
        return Stream(nodes.AlterLifetime(self._node, d, None))

    def to_point(self) -> Stream[T]:
        """Turns every event into a point event at its start."""
        return Stream(nodes.ToPoint(self._node))

    # --- windows and groups -----------------------------------------------------------
    def snapshot_window(self) -> Windowed[T]:
        """A window for every interval between consecutive event endpoints where some event is alive.

        >>> readings.alter_duration(timedelta(minutes=3)).snapshot_window().select(
        ...     lambda w: Avg(w.avg(lambda e: e.consumption)))  # doctest: +SKIP
        """
        from streamql.query.windowed import Windowed
        from streamql.query.windows import SnapshotWindow

        return Windowed(self, SnapshotWindow())

    def hopping_window(self, size: timedelta, hop: timedelta) -> Windowed[T]:
        """Windows ``[k*hop, k*hop + size)`` aligned to the Unix epoch, one output per non-empty window.

        >>> clicks.hopping_window(timedelta(minutes=10), timedelta(minutes=1)).select(
        ...     lambda w: Count(w.count()))  # doctest: +SKIP
        """
        from streamql.query.windowed import Windowed, hopping_spec

        return Windowed(self, hopping_spec("hopping_window", size, hop))

    def tumbling_window(self, size: timedelta) -> Windowed[T]:
        """Windows ``[k*size, (k+1)*size)`` aligned to the Unix epoch: ``hopping_window(size, size)``."""
        from streamql.query.windowed import Windowed, hopping_spec

        return Windowed(self, hopping_spec("tumbling_window", size, size))

    def count_window(self, n: int) -> Windowed[T]:
        """Windows over ``n`` consecutive distinct start times, sliding by one start time."""
        from streamql.query.windowed import Windowed, count_spec

        return Windowed(self, count_spec(n))

    def session_window(self, gap: timedelta, max_duration: timedelta | None = None) -> Windowed[T]:
        """Sessions: the events whose lifetimes, each extended by ``gap``, overlap (touching ones do
        not) form one window over ``[first start, greatest end + gap)``; with ``max_duration`` each
        session is cut into consecutive pieces of that length from its first start, each a window
        of the events that start in it.

        >>> clicks.session_window(timedelta(minutes=30)).select(lambda w: Visit(w.count()))  # doctest: +SKIP
        """
        from streamql.query.windowed import Windowed, session_spec

        return Windowed(self, session_spec(gap, max_duration))

    def group_by(self, key: Callable[[T], K]) -> Grouped[K, T]:
        """Groups the stream by ``key``; a window after it applies per group and sees ``w.key``.

        >>> readings.group_by(lambda e: e.meter).snapshot_window().select(
        ...     lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption)))  # doctest: +SKIP
        """
        from streamql.query.windowed import Grouped

        return Grouped(self, trace(key, [self._node.schema], "group_by"))

    def group_apply(self, key: Callable[[T], K], apply: Callable[[Stream[T]], Stream[U]],
                    result: Callable[[K, U], Payload]) -> Stream[Payload]:
        """Runs the sub-query ``apply`` on each group of ``key`` and maps its output through ``result``.

        >>> readings.group_apply(lambda e: e.meter,
        ...                      lambda s: s.tumbling_window(timedelta(hours=1)).select(lambda w: N(w.count())),
        ...                      lambda meter, n: MeterCount(meter, n.n))  # doctest: +SKIP
        """
        from streamql.expr.nodes import GroupKey, Param, struct_type
        from streamql.expr.trace import param_names, trace_call, wrap
        from streamql.query.nodes import inputs_of
        from streamql.query.windows import GroupApply, GroupSource

        key_expr = trace(key, [self._node.schema], "group_apply key")
        group = Stream[T](GroupSource(self._node.schema, self._node.may_be_open))
        applied = apply(group)
        if not isinstance(applied, Stream):
            raise ExpressionError(f"group_apply's apply must return a query (sq.Stream), got {applied!r}")
        outside = inputs_of(applied.node)
        if outside:
            raise ExpressionError(
                f"group_apply's apply reads the input(s) {', '.join(sorted(outside))}: a sub-query may "
                "only use the group's stream it is given")
        names = param_names(result, 2, "group_apply result")
        schema = applied.node.schema
        projection = trace_call(result, [wrap(GroupKey(key_expr.type)),
                                         wrap(Param(struct_type(schema), 0, names[1]))], "group_apply result")
        if projection.type.kind is not Kind.STRUCT:
            raise ExpressionError(f"group_apply's result must build a payload instance, got "
                                  f"{projection.type} ({projection.show()})")
        return Stream(GroupApply(self._node, key_expr, applied.node, projection))


    # --- multi-stream -------------------------------------------------------------------
    def join(self, other: Stream[U], on: Callable[[T, U], bool] | None,
             select: Callable[[T, U], Payload]) -> Stream[Payload]:
        """Temporal join: one event per pair of overlapping events for which ``on`` holds
        (``on=None``: every overlapping pair), alive over the intersection of their lifetimes.

        >>> readings.join(meters, lambda r, m: r.meter == m.meter,
        ...               lambda r, m: Located(r.meter, m.site, r.consumption))  # doctest: +SKIP
        """
        _check_stream("join", other)
        schemas = [self._node.schema, other.node.schema]
        predicate = None if on is None else trace_typed(on, schemas, "join on", Kind.BOOL)
        projection = trace(select, schemas, "join select")
        if projection.type.kind is not Kind.STRUCT:
            raise ExpressionError(f"join select must build a payload instance (a dataclass or attrs class), got "
                                  f"{projection.type} ({projection.show()})")
        return Stream(joins.Join(self._node, other.node, predicate, projection))

    def anti_join(self, other: Stream[U], on: Callable[[T, U], bool] | None) -> Stream[T]:
        """Each event restricted to the parts of its lifetime in which no ``other`` event for which
        ``on`` holds is alive (``on=None``: any ``other`` event); one event may become several.

        >>> readings.anti_join(outages, lambda r, o: r.meter == o.meter)  # doctest: +SKIP
        """
        _check_stream("anti_join", other)
        predicate = None if on is None else trace_typed(
            on, [self._node.schema, other.node.schema], "anti_join on", Kind.BOOL)
        return Stream(joins.AntiJoin(self._node, other.node, predicate))

    def clip(self, other: Stream[U], on: Callable[[T, U], bool]) -> Stream[T]:
        """Cuts each event's end at the start of the first ``other`` event for which ``on`` holds
        that starts strictly after the event's start (StreamInsight's ClipEventDuration).

        >>> sessions.clip(logouts, lambda s, l: s.user == l.user)  # doctest: +SKIP
        """
        _check_stream("clip", other)
        if on is None or not callable(on):
            raise ExpressionError(f"clip needs a predicate of both events (e.g. lambda l, r: l.key == r.key), "
                                  f"got {on!r}")
        predicate = trace_typed(on, [self._node.schema, other.node.schema], "clip on", Kind.BOOL)
        return Stream(joins.Clip(self._node, other.node, predicate))

    def union(self, *others: Stream[T]) -> Stream[T]:
        """The events of this stream and ``others`` (duplicates kept); the CTI is the least of theirs.

        >>> north.union(south, east)  # doctest: +SKIP
        """
        for i, other in enumerate(others):
            _check_stream("union", other)
            if other.node.schema != self._node.schema:
                raise ExpressionError(
                    f"union needs streams of one payload type: argument {i + 1} has {other.node.schema.name}, "
                    f"this stream {self._node.schema.name} (select one into the other's type first)")
        if not others:
            return self
        return Stream(joins.Union((self._node, *(o.node for o in others))))

    # --- Esper-style lifetimes ----------------------------------------------------------
    def keep_last(self, n: int) -> Stream[T]:
        """Esper's length window ``#length(n)``: each event lives from its start until the start of
        the ``n``-th event after it (in start-time order).

        >>> withdrawals.keep_last(5)  # doctest: +SKIP
        """
        return Stream(esper.KeepLast(self._node, _check_count("keep_last", n)))

    def time_batch(self, size: timedelta) -> Stream[T]:
        """Esper's ``#time_batch(size)``: events starting in ``[b, b + size)`` (epoch-aligned) live
        ``[b + size, b + 2*size)``: the whole batch appears when it ends, until the next one does.

        >>> withdrawals.time_batch(timedelta(seconds=4))  # doctest: +SKIP
        """
        _check_timedelta("time_batch", "size", size)
        if size <= timedelta(0):
            raise ExpressionError(f"time_batch needs a positive size, got {size}")
        return Stream(esper.TimeBatch(self._node, duration_micros(size)))

    def length_batch(self, n: int) -> Stream[T]:
        """Esper's ``#length_batch(n)``: consecutive batches of ``n`` events (in start-time order);
        each event of a full batch lives from the last start of its batch to the last start of
        the next full batch.

        >>> withdrawals.length_batch(5)  # doctest: +SKIP
        """
        return Stream(esper.LengthBatch(self._node, _check_count("length_batch", n)))

    # --- as-of joins and signals --------------------------------------------------------
    def as_of_join(self, other: Stream[U], on: Callable[[T, U], bool], select: Callable[[T, U], Payload],
                   within: timedelta | None = None) -> Stream[Payload]:
        """Joins each event with the ``other`` events for which ``on`` holds that have the latest
        start at or before its start (all of them when several share that start), at most
        ``within`` before it; the result has this event's lifetime, and an event with no such
        partner gives nothing. ``on`` needs at least one equality of a field of each side.

        >>> trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol,
        ...                   lambda t, q: Priced(t.symbol, t.size, q.bid),
        ...                   within=timedelta(seconds=5))  # doctest: +SKIP
        """
        from streamql.query.as_of import AsOfJoin

        _check_stream("as_of_join", other)
        if on is None or not callable(on):
            raise ExpressionError(f"as_of_join needs a predicate of both events with an equality key "
                                  f"(e.g. lambda l, r: l.key == r.key), got {on!r}")
        limit = None
        if within is not None:
            _check_timedelta("as_of_join", "within", within)
            if within < timedelta(0):
                raise ExpressionError(f"as_of_join needs a within of zero or more, got {within}")
            limit = duration_micros(within)
        schemas = [self._node.schema, other.node.schema]
        predicate = trace_typed(on, schemas, "as_of_join on", Kind.BOOL)
        projection = trace(select, schemas, "as_of_join select")
        if projection.type.kind is not Kind.STRUCT:
            raise ExpressionError(f"as_of_join select must build a payload instance (a dataclass or attrs class), "
                                  f"got {projection.type} ({projection.show()})")
        return Stream(AsOfJoin(self._node, other.node, predicate, projection, limit))

    def to_signal(self, key: Callable[[T], K]) -> Stream[T]:
        """Each event lasts from its start until the next later start of an event with the same
        ``key`` (``INFINITY`` until there is one): a value that holds until it is replaced.

        >>> quotes.to_signal(lambda q: q.symbol)  # doctest: +SKIP
        """
        from streamql.query.as_of import ToSignal

        return Stream(ToSignal(self._node, trace(key, [self._node.schema], "to_signal")))

    # --- patterns -----------------------------------------------------------------------
    def followed_by(self, other: Stream[U], on: Callable[[T, U], bool], select: Callable[[T, U], Payload],
                    within: timedelta | None = None, all_matches: bool = False) -> Stream[Payload]:
        """Esper's ``every a -> b``: each event ``a`` of this stream matched with the ``other``
        events ``b`` for which ``on(a, b)`` holds that start strictly after ``a`` and (with
        ``within``) less than ``within`` after it — those with the earliest such start (all when
        several share it), or every one with ``all_matches=True``. Each match is a point event at
        ``b``'s start with the payload ``select(a, b)``. ``on`` may be any condition of both
        (``lambda a, b: True`` for none).

        >>> withdrawals.followed_by(withdrawals, lambda a, b: a.account == b.account,
        ...                         lambda a, b: Twice(a.account, a.amount, b.amount),
        ...                         within=timedelta(minutes=10))  # doctest: +SKIP
        """
        from streamql.query.patterns import FollowedBy

        _check_stream("followed_by", other)
        _check_condition("followed_by", on)
        if select is None or not callable(select):
            raise ExpressionError(f"followed_by needs a select function of both events (e.g. lambda a, b: "
                                  f"Pair(a.id, b.id)), got {select!r}")
        if not isinstance(all_matches, bool):
            raise ExpressionError(f"followed_by: all_matches must be a bool, got {all_matches!r}")
        limit = None if within is None else _positive_within("followed_by", within)
        schemas = [self._node.schema, other.node.schema]
        predicate = trace_condition(on, schemas, "followed_by on")
        projection = trace(select, schemas, "followed_by select")
        if projection.type.kind is not Kind.STRUCT:
            raise ExpressionError(f"followed_by select must build a payload instance (a dataclass or attrs class), "
                                  f"got {projection.type} ({projection.show()})")
        return Stream(FollowedBy(self._node, other.node, predicate, projection, limit, all_matches))

    def not_followed_by(self, other: Stream[U], on: Callable[[T, U], bool], within: timedelta) -> Stream[T]:
        """Each event ``a`` of this stream for which no ``other`` event ``b`` with ``on(a, b)``
        starts strictly after ``a`` and less than ``within`` after it: a point event at
        ``a.start + within`` with ``a``'s payload (Flink CEP's ``notFollowedBy`` ... ``within``).

        >>> orders.not_followed_by(payments, lambda o, p: o.order_id == p.order_id,
        ...                        within=timedelta(minutes=15))  # doctest: +SKIP
        """
        from streamql.query.patterns import NotFollowedBy

        _check_stream("not_followed_by", other)
        _check_condition("not_followed_by", on)
        limit = _positive_within("not_followed_by", within)
        predicate = trace_condition(on, [self._node.schema, other.node.schema], "not_followed_by on")
        return Stream(NotFollowedBy(self._node, other.node, predicate, limit))



def _check_stream(op: str, other: object) -> None:
    if not isinstance(other, Stream):
        raise ExpressionError(f"{op} takes a query (sq.Stream), got {other!r}")


def _check_condition(op: str, on: object) -> None:
    if on is None or not callable(on):
        raise ExpressionError(f"{op} needs a condition of both events (e.g. lambda a, b: a.key == b.key, "
                              f"or lambda a, b: True for none), got {on!r}")


def _positive_within(op: str, within: object) -> int:
    """``within`` in microseconds: a pattern's window must hold a time after the left start (a
    window of zero or less would hold no partner at all)."""
    _check_timedelta(op, "within", within)
    assert isinstance(within, timedelta)
    micros = duration_micros(within)
    if micros <= 0:
        raise ExpressionError(f"{op} needs a positive within (at least one microsecond), got {within!r}")
    return micros


def _check_count(op: str, n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ExpressionError(f"{op} needs a positive int, got {n!r}")
    return n


def _check_timedelta(op: str, name: str, value: Any) -> None:
    if not isinstance(value, timedelta):
        raise ExpressionError(f"{op}: {name} must be a timedelta, got {value!r}")


def input(name: str, payload: type[Payload], shape: Shape = Shape.POINT) -> Stream[Payload]:  # noqa: A001 - API name
    """Declares an input stream; raises ``SchemaError`` if ``payload`` is not a valid payload type.

    >>> readings = sq.input("readings", Reading, shape=sq.Shape.POINT)  # doctest: +SKIP
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an input needs a non-empty name, got {name!r}")
    if not isinstance(shape, Shape):
        raise ValueError(f"shape must be a sq.Shape, got {shape!r}")
    return Stream(nodes.Input(name, schema_of(payload), shape))
