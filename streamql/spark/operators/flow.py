"""Compilation of operator nodes to DataFrame plans, one function per node class.

Every stream is a ``Flow``: a DataFrame with ``_sq_start``, ``_sq_end`` (microseconds),
``_sq_closed`` (the whole event is stable), ``_sq_head`` (start and payload are stable),
``_sq_floor`` (an end that is not stable will be at or after it, or at or after the stream's CTI
when that is later; null: the CTI alone bounds it — ``reference.operators.end_floor``), the
group-key columns of enclosing ``group_apply``s, and the payload fields as top-level columns;
together with the stream's final CTI and its greatest finite CTI.

An input's open events carry their input's CTI as floor; ``where``, ``select``, ``union`` and
``group_apply`` keep each event's floor, ``shift``/``alter_lifetime`` move it with the end, and
joins compute theirs (``spark.joins``). Every other operator builds new events with no floor —
an operator that leaves the column out gets a null one, as the reference's ``Ev`` does.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from functools import reduce, singledispatch
from typing import Callable, Iterator, Mapping, Sequence, TypeVar, Union

import attrs
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamql.expr.nodes import Expr, Literal
from streamql.query import as_of, esper, joins, nodes
from streamql.spark.base.columns import FLOOR
from streamql.spark.base.sketches import Sketches
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.time import INFINITY_MICROS, MAX_MICROS, MAX_SPAN_MICROS, MIN_MICROS, duration_micros, shift

LIFETIME = (START, END, CLOSED, HEAD, FLOOR)
#: the key of the group's stream inside a ``group_apply`` sub-query in a compilation environment
GROUP = ""


def no_floor() -> Column:
    """The floor of an event whose unstable end only the stream's CTI bounds."""
    return F.lit(None).cast("long").alias(FLOOR)


def _with_floor(frame: DataFrame) -> DataFrame:
    """``frame`` with a null floor if it has none (the new events of an operator that sets none)."""
    return frame if FLOOR in frame.columns else frame.withColumn(FLOOR, F.lit(None).cast("long"))


#: a row's own group's CTI (``GroupCtis.joined``)
GROUP_CTI = "_sq_group_cti"
#: the CTI a row sees: the stream's (None: none yet), or a column holding each row's group's (``Flow.row_cti``)
Cti = Union[int, None, Column]


@attrs.frozen
class GroupCtis:
    """The CTI of every group of a stream inside ``group_apply`` (per value of ``keys``, the
    enclosing ``group_apply``s' key columns) where a window made it depend on the group's data
    (count and session windows): ``frame`` holds ``keys`` and ``GROUP_CTI`` for the groups whose
    CTI is less than ``default``, every other group's is ``default`` (the reference runs the
    sub-query once per group, each with its own CTIs). The stream's ``Flow.cti`` is the least."""

    frame: DataFrame = attrs.field(eq=False)
    default: int
    keys: tuple[str, ...]

    def joined(self, rows: DataFrame, name: str = GROUP_CTI) -> DataFrame:
        """``rows`` (which carry ``keys``) with their group's CTI as ``name``."""
        renamed = self.frame.select(*[F.col(k).alias(f"_sq_g_{k}") for k in self.keys], F.col(GROUP_CTI).alias(name))
        same = F.lit(True)
        for k in self.keys:
            same = same & F.col(k).eqNullSafe(F.col(f"_sq_g_{k}"))
        out = rows.join(renamed, same, "left").drop(*[f"_sq_g_{k}" for k in self.keys])
        return out.withColumn(name, F.coalesce(F.col(name), F.lit(self.default)).cast("long"))

    def moved(self, rule: Callable[[Column], Column], default: int) -> GroupCtis:
        """Every group's CTI through an operator's CTI rule: ``rule`` as a column, ``default`` the
        rule applied to ``self.default`` (a rule that never decreases keeps the frame's groups at
        or below the default)."""
        return GroupCtis(self.frame.withColumn(GROUP_CTI, rule(F.col(GROUP_CTI))), default, self.keys)


def least_group_ctis(node: nodes.Node, sources: Sequence[Flow],
                     moved: Sequence[GroupCtis | None] | None = None) -> GroupCtis | None:
    """Each group's own CTI after a multi-stream operator whose CTI is the least of its inputs'
    (``join``, ``anti_join``, ``clip``, ``union``, ``as_of_join``, ``followed_by``): per group the
    least of the inputs' CTIs for that group — a source's ``group_ctis`` where it has them, its CTI
    otherwise (the reference runs the sub-query once per group). None when no source has them.
    ``moved``: the sources' group CTIs moved first by the operator's rule for that input, where it
    moves one (``not_followed_by``'s left CTI plus ``within``; ``node.output_cti`` moves the
    defaults): the least of the moved CTIs per group."""
    groups = [s.group_ctis for s in sources] if moved is None else list(moved)
    frames = [g for g in groups if g is not None]
    if not frames:
        return None
    default = node.output_cti(tuple(s.cti if s.group_ctis is None else s.group_ctis.default for s in sources))
    if default is None:
        return None
    keys = frames[0].keys
    if any(g.keys != keys for g in frames):
        # inside a nested group_apply, one input's per outer group and the other's per inner group
        return None
    # a source's frame holds only groups below its default: the least over the frames a group is
    # in and the defaults of the others is the least over the frames and the least default
    rows = reduce(lambda a, b: a.unionByName(b), [g.frame.select(*keys, GROUP_CTI) for g in frames])
    least = rows.groupBy(*keys).agg(F.min(GROUP_CTI).alias(GROUP_CTI)).filter(F.col(GROUP_CTI) < F.lit(default))
    return GroupCtis(least, default, keys)


#: one-input operators whose output CTI is their input's (docs/ctis-and-release.md#cti-propagation-through-operators):
#: a group's CTI passes through
_SAME_CTI = (nodes.Where, nodes.Select, nodes.AlterDuration, nodes.ToPoint, esper.KeepLast, esper.LengthBatch,
             as_of.ToSignal)


def _cti_rule(node: nodes.Node) -> Callable[[Column], Column] | None:
    """The static CTI rule of a one-input operator that moves the CTI (``node.output_cti`` of a
    finite or INFINITY CTI), as a column expression; None for an operator without one."""
    if isinstance(node, nodes.AlterLifetime):
        d = duration_micros(node.start_shift)
        return lambda c: shifted(c, d)
    if isinstance(node, esper.TimeBatch):
        size = node.size
        # the end of the batch holding the CTI (INFINITY stays)
        return lambda c: F.when(c == F.lit(INFINITY_MICROS), c).otherwise(shifted(c - F.pmod(c, F.lit(size)), size))
    return None


def _groups_after(node: nodes.Node, groups: GroupCtis | None) -> GroupCtis | None:
    """Each group's own CTI after ``node``: passed through where its rule is the identity, moved
    by its rule where it has a static one; else None (the least CTI over the groups, which releases
    less, never more)."""
    if groups is None or isinstance(node, _SAME_CTI):
        return groups
    rule = _cti_rule(node)
    default = node.output_cti((groups.default,))
    if rule is None or default is None:
        return None
    return groups.moved(rule, default)


#: one-input operators whose events start where their input's do (or are some of them)
_SAME_STARTS = (nodes.Where, nodes.Select, nodes.AlterDuration, nodes.ToPoint)


def _starts_after(node: nodes.Node, starts: Sketches | None) -> Sketches | None:
    """The sketches of the starts after ``node``: kept where its events start where their inputs'
    do, moved by a constant shift; else None (the borders take a job). A sketch only balances
    ranges, so one of a superset of the starts serves as well."""
    if starts is None or isinstance(node, _SAME_STARTS):
        return starts
    if isinstance(node, nodes.AlterLifetime):
        moved = duration_micros(node.start_shift)
        return tuple((count, tuple(shift(t, moved) for t in points)) for count, points in starts)
    return None


@attrs.frozen
class Flow:
    """A stream at some operator's output: its plan, final CTI, greatest finite CTI and the
    group-key columns it carries (innermost last)."""

    frame: DataFrame = attrs.field(eq=False, converter=_with_floor)
    cti: int | None
    finite_cti: int | None
    keys: tuple[str, ...] = ()
    #: the arrival at which the CTI reached INFINITY (``query.joins.FLUSHED`` by the flush; None
    #: while it is finite): what a multi-stream operator needs of its inputs' CTI histories
    reached: int | None = None
    #: inside ``group_apply``, after a count or session window: each group's own CTI (None: every
    #: group's is ``cti``)
    group_ctis: GroupCtis | None = None
    #: sketches of the events' starts (``base.sketches.Sketches``), where the operators since the
    #: input keep or move starts predictably: the range borders of a window come from them
    #: (``windows.snapshot.range_borders``); None: a window computes its borders with a job
    starts: Sketches | None = attrs.field(default=None, eq=False)
    #: the query inputs whose CTI takes this stream to INFINITY (``query.joins.greatest_finite_cti``;
    #: empty where not known)
    reached_by: frozenset[str] = attrs.field(default=frozenset(), eq=False)

    def derived(self, node: nodes.Node, frame: DataFrame) -> Flow:
        """``frame`` with the CTIs of ``node`` (a one-input operator with a static CTI rule)."""
        return Flow(fenced(frame), node.output_cti((self.cti,)), node.output_cti((self.finite_cti,)), self.keys,
                    self.reached, _groups_after(node, self.group_ctis), _starts_after(node, self.starts),
                    self.reached_by)

    def cti_column(self) -> Column | None:
        """The CTI of each row's group, on a frame ``with_group_ctis`` made: None where every group's
        is ``cti``."""
        return None if self.group_ctis is None else F.col(GROUP_CTI)

    def with_group_ctis(self, rows: DataFrame, name: str = GROUP_CTI) -> DataFrame:
        """``rows`` (carrying the flow's keys) with their group's CTI as ``name`` if the groups' CTIs differ."""
        return rows if self.group_ctis is None else self.group_ctis.joined(rows, name)

    def row_cti(self, name: str = GROUP_CTI) -> Cti:
        """The CTI a row sees: its group's (the column ``name`` that ``with_group_ctis(rows, name)``
        added) where the groups' CTIs differ, else the stream's."""
        return self.cti if self.group_ctis is None else F.col(name)


def fenced(frame: DataFrame) -> DataFrame:
    """``frame`` under a projection Catalyst pushes no filter through: the start plus
    ``spark_partition_id() * 0``, which is the start, but not deterministic to Catalyst
    (``PushPredicateThroughNonJoin`` moves a filter only through deterministic projections). A
    later operator's filter thus stops here instead of being inlined into every operator before it,
    and each operator adds a bounded piece of plan (docs/architecture.md#plans-grow-linearly). The
    value is the start's, on every row of every partition; it costs one addition per row."""
    return frame.withColumn(START, F.col(START) + F.spark_partition_id() * F.lit(0))


def input_flow(events: DataFrame, cti: int | None, finite_cti: int | None, reached: int | None = None,
               starts: Sketches | None = None) -> Flow:
    """An input's events (lifetime, flags and payload; no floor yet) as a stream whose CTI is
    ``cti``: an open event ends at or after that CTI, and keeps that floor downstream (after a
    union whose CTI is less, say: ``reference.operators.input_flow``). ``finite_cti``: its greatest
    finite CTI; ``reached``: the arrival at which its CTI reached INFINITY; ``starts``: sketches of
    its events' starts (the scan's)."""
    floor = F.lit(None).cast("long") if cti is None else F.when(~F.col(CLOSED), F.lit(cti))
    return Flow(events.withColumn(FLOOR, floor.cast("long")), cti, finite_cti, reached=reached, starts=starts)


def union_flow(flows: Sequence[Flow], cti: int | None, finite_cti: int | None, reached: int | None,
               starts: Sketches | None) -> Flow:
    """The events of ``flows`` (input flows, each open event with its own stream's CTI as its
    floor) as one stream with CTI ``cti``: a partitioned input's partitions
    (``streamql.spark.ingress.partitioned``), as a ``union`` of them combines them."""
    frame = flows[0].frame
    for more in flows[1:]:
        frame = frame.unionByName(more.frame)
    return Flow(frame, cti, finite_cti, reached=reached, starts=starts)


def cti_literal(cti: Cti) -> Column:
    """A CTI as a long column (null: no CTI yet)."""
    return cti if isinstance(cti, Column) else F.lit(cti).cast("long")


def end_floor(cti: Cti, closed: Column | None = None, end: Column | None = None,
              floor: Column | None = None) -> Column:
    """The least end an event (with a stable head) can still get in a stream whose CTI is ``cti``
    (``reference.operators.end_floor``): its end if that is stable, else the greater of its floor
    and the CTI, null if neither is known. ``cti`` may be a column (each row's group's CTI, ``Flow.row_cti``;
    null: none yet). The event's columns default to the frame's own.

    >>> frame.filter(end_floor(flow.cti) > F.lit(5))  # doctest: +SKIP
    """
    closed = F.col(CLOSED) if closed is None else closed
    end = F.col(END) if end is None else end
    floor = F.col(FLOOR) if floor is None else floor
    # greatest skips nulls: a null floor gives the CTI
    bound = floor if cti is None else F.greatest(floor, cti_literal(cti))
    return F.when(closed, end).otherwise(bound)


def shifted(t: Column, d: Column | int) -> Column:
    """Saturating ``t + d`` (``streamql.time.shift`` as a Column): INFINITY stays, overflow saturates.

    ``d`` is clamped to the span of representable times first. ``t`` appears once in the
    expression, so that a chain of shifts adds a bounded expression per step: a form referring to
    ``t`` three times tripled the plan per step once Catalyst pushed each shift's filter down through
    the projections before it (docs/architecture.md#plans-grow-linearly). As ``greatest(t + d, MIN)``
    does, a null ``t`` gives MIN."""
    if isinstance(d, int):
        d = max(-MAX_SPAN_MICROS, min(MAX_SPAN_MICROS, d))
        return _moved(t, F.lit(MIN_MICROS - d), F.lit(MAX_MICROS - d))
    delta = F.greatest(F.least(d, F.lit(MAX_SPAN_MICROS)), F.lit(-MAX_SPAN_MICROS))
    return _moved(t, F.lit(MIN_MICROS) - delta, F.lit(MAX_MICROS) - delta)


_LONG_MAX = 2**63 - 1


def _moved(t: Column, low: Column, last: Column) -> Column:
    """``t`` moved by ``d``, given ``low = MIN - d`` and ``last = MAX - d`` (the last time that stays
    finite): ``greatest(t, low) + d`` up to ``last``, INFINITY after it — with ``t`` appearing once.
    ``nullif`` or ``when`` would refer to the clamped time twice (Catalyst inlines ``nullif(x, c)``
    as ``if (x = c) null else x``). Instead: once ``t`` is clamped into ``[low, last + 1]``,
    ``x - last`` is at most 1, and adding ``Long.MaxValue`` to it overflows (``try_add``: null, then
    INFINITY) exactly past ``last``; otherwise taking ``Long.MaxValue - MAX`` back off gives
    ``x - last + MAX = x + d``. No step leaves a long, under ANSI arithmetic or not."""
    clamped = F.least(F.greatest(t, low), last + F.lit(1))
    lifted = F.try_add(clamped - last, F.lit(_LONG_MAX))
    return F.coalesce(lifted - F.lit(_LONG_MAX - MAX_MICROS), F.lit(INFINITY_MICROS))


def _fields(node: nodes.Node) -> list[str]:
    return [f.name for f in node.schema.fields]


def _not_on_spark(node: nodes.Node, env: Mapping[str, Flow]) -> Flow:
    raise NotImplementedError(f"{type(node).__name__} does not run on Spark yet")


_Compile = TypeVar("_Compile", bound=Callable[..., Flow])
#: what ``compiled_once`` has compiled: (node, id of its environment) -> (the environment, the flow)
_COMPILED: ContextVar[dict[tuple[nodes.Node, int], tuple[Mapping[str, Flow], Flow]] | None] = \
    ContextVar("streamql_compiled", default=None)


class _Compiler:
    """``compile_node``: one function per node class (``@compile_node.register``), called as
    ``compile_node(node, env)``."""

    def __init__(self) -> None:
        self._by_class = singledispatch(_not_on_spark)

    def register(self, func: _Compile) -> _Compile:
        self._by_class.register(func)
        return func

    def __call__(self, node: nodes.Node, env: Mapping[str, Flow]) -> Flow:
        """The plan of ``node`` given the flows of the inputs (by name; ``GROUP`` inside a group)."""
        compiled = _COMPILED.get()
        if compiled is None:
            return self._by_class(node, env)
        key = (node, id(env))
        if key not in compiled:
            # the environment is kept with the flow, so that its id cannot be another's later
            compiled[key] = (env, self._by_class(node, env))
        return compiled[key][1]


compile_node = _Compiler()


@contextmanager
def compiled_once() -> Iterator[None]:
    """Within it, ``compile_node`` compiles each node (with its environment) once: queries compiled
    together (``Binder.run_many``) get the very same DataFrame for the sub-queries they share, and
    their plan-time jobs run once.

    >>> with compiled_once():                                  # doctest: +SKIP
    ...     flows = [compile_node(q.node, env) for q in queries]
    """
    token = _COMPILED.set({})
    try:
        yield
    finally:
        _COMPILED.reset(token)


def compiled_as(node: nodes.Node, env: Mapping[str, Flow], flow: Flow) -> None:
    """Inside ``compiled_once``: ``node`` compiles to ``flow`` in ``env`` (a plan made for several
    queries at once: ``spark.sharing``)."""
    compiled = _COMPILED.get()
    assert compiled is not None, "compiled_as is for use inside compiled_once()"
    compiled[(node, id(env))] = (env, flow)


def horizon(sources: Sequence[Flow], ctis: Sequence[int | None] | None = None,
            finite_ctis: Sequence[int | None] | None = None) -> tuple[int | None, int | None, frozenset[str]]:
    """What a multi-stream operator's output keeps of its CTI's history, from its input streams
    ``sources``: its greatest finite CTI and the arrival at which it reached INFINITY
    (``query.joins.greatest_finite_cti``), and the query inputs that took it there
    (``query.joins.reached_by``). ``ctis``, ``finite_ctis``: the sources' as the operator sees
    them, where it moves them (``not_followed_by`` moves the left's by ``within``)."""
    reached = tuple(s.reached for s in sources)
    inputs = tuple(s.reached_by for s in sources)
    finite, last = joins.greatest_finite_cti(tuple(s.cti for s in sources) if ctis is None else tuple(ctis),
                                             tuple(s.finite_cti for s in sources) if finite_ctis is None
                                             else tuple(finite_ctis), reached, inputs)
    return finite, last, joins.reached_by(reached, inputs)


@compile_node.register
def _input(node: nodes.Input, env: Mapping[str, Flow]) -> Flow:
    flow = env[node.name]
    return flow if flow.reached_by else attrs.evolve(flow, reached_by=frozenset({node.name}))


def by_name(index: int, name: str) -> Column:
    """One-input operators keep the payload fields as top-level columns."""
    return F.col(name)


def _column(expr: Expr) -> Column:
    return compile_expr(expr, by_name)


@compile_node.register
def _where(node: nodes.Where, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    return source.derived(node, source.frame.filter(F.coalesce(_column(node.predicate), F.lit(False))))


@compile_node.register
def _select(node: nodes.Select, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    columns = construct_columns(node.projection, by_name)
    return source.derived(node, source.frame.select(*LIFETIME, *source.keys,
                                                    *[c.alias(name) for name, c in columns]))


def duration_column(expr: Expr) -> Column:
    """A TIMEDELTA expression as microseconds (a constant stays a literal)."""
    if isinstance(expr, Literal):
        return F.lit(duration_micros(expr.value))
    interval = _column(expr)
    # a day-time interval added to the epoch gives its length in microseconds, exactly
    return F.unix_micros(F.timestamp_micros(F.lit(0)) + interval)


@compile_node.register
def _alter_duration(node: nodes.AlterDuration, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    end = shifted(F.col(START), duration_column(node.duration))
    # the end follows the start: the event is stable once its start and payload are
    df = source.frame.withColumns({END: end, CLOSED: F.col(HEAD), FLOOR: F.lit(None).cast("long")})
    return source.derived(node, df.filter(F.col(END).isNotNull() & (F.col(END) > F.col(START))))


@compile_node.register
def _alter_lifetime(node: nodes.AlterLifetime, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    moved = duration_micros(node.start_shift)
    start = shifted(F.col(START), moved)
    if node.duration is None:
        # the floor moves with the end (shifted turns a null into MIN: a null floor stays null)
        end, closed = shifted(F.col(END), moved), F.col(CLOSED)
        floor = F.when(F.col(FLOOR).isNotNull(), shifted(F.col(FLOOR), moved)).alias(FLOOR)
    else:
        end, closed, floor = shifted(start, duration_micros(node.duration)), F.col(HEAD), no_floor()
    df = source.frame.select(start.alias(START), end.alias(END), closed.alias(CLOSED), HEAD, floor, *source.keys,
                             *_fields(node))
    # an end is at most INFINITY: an event ending after its start does not start at INFINITY (one
    # condition, not two: Catalyst pushes it down through every operator before, each time inlined)
    return source.derived(node, df.filter(F.col(END) > F.col(START)))


@compile_node.register
def _to_point(node: nodes.ToPoint, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    df = source.frame.filter(F.col(START) < F.lit(INFINITY_MICROS))
    return source.derived(node, df.select(F.col(START), shifted(F.col(START), 1).alias(END),
                                          F.col(HEAD).alias(CLOSED), HEAD, no_floor(), *source.keys,
                                          *_fields(node)))
