"""What a streaming run must keep of its inputs: the retention floors (docs/streaming.md).

A streaming run re-evaluates the compiled plan over the events it kept plus the micro-batch's
new ones. It keeps, of every input, the events whose end is at or after the input's *floor* and
drops the rest. The floors come from the query's *output floor* ``f``: every output event that
ends before ``f`` was released already, so the next run only has to compute exactly the output
events that end at or after ``f`` (what it computes that ends before ``f`` is discarded).

``floors(node, f, env)`` maps that requirement down the query tree: for an operator whose
output must be exact for events ending at or after ``f``, the floor its input needs. The rule
per operator, with the contract "the events ending at or after the floor are exact, and every
wrong event ends before it":

- ``where``/``select``/``join``/``union``: the same floor (an output lifetime lies within its
  inputs' lifetimes);
- ``shift``/``alter_lifetime``/``alter_duration`` by a constant/``to_point``: the floor moved
  back by the shift plus the new duration (the output's end follows from the input's start);
- windows, with a ``select`` or a ``top_k`` alike (a window's members decide either), by kind:
  hopping/tumbling windows: ``f - size`` (a window ending at or after ``f`` starts at or after
  ``f - size``, and only events ending after its start touch it); ``time_batch(size)``:
  ``f - 2*size``;
- snapshot windows: the greatest endpoint before ``f`` in each group (the start of the snapshot
  interval that reaches ``f``), least over the groups — read from the data;
- session windows: the start of the earliest session (over the groups) that ends at or after ``f``
  (``f`` if none does), moved back by the gap — read from the data. Every session that ends at or
  after ``f`` is kept whole; an event that ends before that start minus the gap reaches no kept
  session, so neither its absence nor a wrong event there can join or split one;
- ``anti_join``/``clip``: the left input ``f``; the right input the least start of the left
  events that end at or after ``f`` (those events' outputs depend on every right event during
  their lifetimes) — read from the data;
- ``as_of_join``: the left input ``f``; the right input, with ``s`` the least of ``f`` and the
  starts of the left events that end at or after ``f`` (every left event that matters starts at or
  after ``s``), per key the latest start at or before ``s`` (the partners of those left events start
  there or later), least over the keys — or ``s - within`` when that is greater — read from the
  data. With a condition of both payloads in ``on`` only ``s - within`` bounds it (the latest
  *matching* event may be older), and without ``within`` the right input is kept whole;
- ``followed_by`` (docs/patterns.md): a match ending at or after ``f`` is a point at its partner's
  start ``s >= f - 1``; its left event starts after ``s - within``. With ``within``: the left input
  ``f - within``; the right input ``f`` with ``all_matches`` (the partners), else ``f - within``
  too (to know a kept left event's earliest partner, every right event after it). Events kept
  from before those floors (long intervals) only make matches before ``f - 1``: computed and
  dropped; an event wrong from partial input ends before its floor, so it starts before every
  event that matters. Without ``within`` the left input is kept whole (a left event waits for its
  partner for good), and so is the right one except with ``all_matches`` (``f``);
- ``not_followed_by``: an absence ending at or after ``f`` is a point at ``a.start + within >= f - 1``:
  both inputs ``f - within - 1`` (its partners would start after ``a``);
- ``to_signal``: per key, the last start before ``f`` (an event ends at the next start of its
  key: the last one before ``f`` and all after are needed), least over the keys — read from the
  data;
- both look back arbitrarily far: an event computed wrongly from partial input (a window over
  dropped events, say) could be taken as a partner or make an end, even long after it ended. So
  their rules apply only to sources whose events are an input's events through ``where``,
  ``select``, ``alter_duration``, ``alter_lifetime`` and ``to_point`` (dropping input events
  only removes their own events, never changes another); any other source is kept whole;
- ``group_apply``: the sub-query's rule, with the group's stream as its input;
- count windows: per group, the ``n - 1``-th greatest distinct start before ``f - 1`` (a window
  ending at or after ``f`` has its last start there or later, and holds the ``n - 1`` distinct
  starts before it); ``keep_last(n)``: per group, the ``n``-th greatest start before ``f`` (an
  event ends where the ``n``-th event after it starts) — both least over the groups, read from the
  data. An event kept that started before that (a long interval) forms outputs that end before
  ``f``: computed and dropped;
- ``alter_duration`` by an expression: the floor moved back by the longest duration among the
  events the run computes — read from the data (an event starting before that ends before ``f``,
  exact or not: the bound holds for every event the run sees, so state is bounded by the longest
  duration in it);
- ``length_batch(n)`` whose source is an input's events through ``where``/``select`` (or a
  ``group_apply``'s group stream over such): per group, with ``c`` the group's events starting
  before ``f`` and ``o`` the group's offset (below), the last batch that fills before ``f`` is
  ``K = (o + c) div n - 1``; an earlier batch ends where the batch after it fills, before ``f``, so
  batch ``K`` and all after are needed: the floor is the start of batch ``K``'s first event (the
  ``n + (o + c) mod n``-th greatest start before ``f``; a group with ``K < 0``: its least start),
  least over the groups — read from the data. Dropping events renumbers the rest of their group,
  so the run counts what it drops: per group, the *offset* (the events dropped so far, mod ``n``,
  ``batch_offsets``) that the numbering starts from, carried in the state. That count is exact
  only when the dropped events precede every kept one in the group's order: ``offsets_after``
  computes the offsets once the input's floor is final, and where some group's last dropped event
  does not start before its first kept one (a long interval), the input keeps everything this
  step. Points always pass. Any other ``length_batch`` source (one that changes lifetimes, a
  window, a join, ...) keeps its whole input (``None``).

Every floor is also held at or below its input's CTI.
"""
from __future__ import annotations

from functools import singledispatch
from typing import Mapping

import attrs
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.events import Shape
from streamql.expr.nodes import Literal
from streamql.query import as_of, esper, joins, nodes, patterns, windows
from streamql.spark.operators.as_of import keyed, split_on
from streamql.spark.base.columns import END, START
from streamql.spark.windows.esper import DROPPED, counts_dropped, offsets_of, with_offset
from streamql.spark.base.expressions import compile_expr
from streamql.spark.operators.flow import GROUP, Flow, by_name, compile_node, duration_column
from streamql.spark.windows.session import EXTENDED, SESSION, session_rows
from streamql.spark.windows.grouping import grouped_flow, key_name
from streamql.time import INFINITY_MICROS, MIN_MICROS, duration_micros

#: a floor: events ending before it can go; ``None``: keep everything
Floor = int | None


def merge(*parts: Mapping[str, Floor]) -> dict[str, Floor]:
    """The floors of several paths to the same inputs: the least (``None`` is least)."""
    out: dict[str, Floor] = {}
    for part in parts:
        for name, floor in part.items():
            if name not in out:
                out[name] = floor
            else:
                old = out[name]
                out[name] = None if old is None or floor is None else min(old, floor)
    return out


def _back(floor: Floor, by: int) -> Floor:
    return None if floor is None else max(MIN_MICROS, floor - by)


def _held(floor: Floor, cti: int | None) -> Floor:
    """A floor never above the stream's CTI (what is past the CTI is still open); a stream
    without a CTI keeps everything."""
    return None if floor is None or cti is None else min(floor, cti)


@singledispatch
def floors(node: nodes.Node, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    """The floor of every input (by name; ``GROUP`` for a group's stream) that keeps ``node``'s
    output exact for events ending at or after ``floor``."""
    # an operator without a rule keeps everything it reads
    return merge(*[floors(s, None, env) for s in node.sources])


@floors.register
def _input(node: nodes.Input, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    return {node.name: _held(floor, env[node.name].cti)}


@floors.register
def _group_source(node: windows.GroupSource, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    return {GROUP: _held(floor, env[GROUP].cti)}


@floors.register(nodes.Where)
@floors.register(nodes.Select)
def _same(node: nodes.Unary, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    return floors(node.source, floor, env)


@floors.register
def _alter_duration(node: nodes.AlterDuration, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if isinstance(node.duration, Literal):
        return floors(node.source, _back(floor, max(0, duration_micros(node.duration.value))), env)
    if floor is None:
        return floors(node.source, None, env)
    # the longest duration among the events this run computes, read from the data: an event that
    # starts before floor - longest ends before the floor, whether its source event is exact or not
    longest = compile_node(node.source, env).frame.agg(F.max(duration_column(node.duration))).first()
    by = 0 if longest is None or longest[0] is None else max(0, int(longest[0]))
    return floors(node.source, _back(floor, by), env)


@floors.register
def _alter_lifetime(node: nodes.AlterLifetime, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    moved = duration_micros(node.start_shift)
    if node.duration is None:
        return floors(node.source, _back(floor, moved), env)
    return floors(node.source, _back(floor, moved + max(0, duration_micros(node.duration))), env)


@floors.register
def _to_point(node: nodes.ToPoint, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    return floors(node.source, _back(floor, 1), env)


def _last_before(frame: DataFrame, keys: list[Column], starts: Column, before: int, n: int) -> Floor:
    """The least over the groups of ``keys`` of the ``n``-th greatest value of ``starts`` below
    ``before`` in the group (the least such value where the group has fewer); None where no group
    has one."""
    earlier = frame.select(*keys, starts.alias("_sq_s")).filter(F.col("_sq_s") < F.lit(before))
    if keys:
        names = earlier.columns[:-1]
        rank = F.row_number().over(Window.partitionBy(*names).orderBy(F.col("_sq_s").desc()))
        least = earlier.withColumn("_sq_rank", rank).filter(F.col("_sq_rank") <= F.lit(n)).agg(F.min("_sq_s")).first()
    else:
        # the n greatest of the whole stream: a top-n per partition, then of those
        last = earlier.orderBy(F.col("_sq_s").desc()).limit(n)
        least = last.agg(F.min("_sq_s")).first()
    return None if least is None or least[0] is None else int(least[0])


def _window_keys(node: windows.WindowOperator, source: Flow) -> list[Column]:
    keys = [F.col(k) for k in source.keys]
    if node.key is not None:
        keys.append(compile_expr(node.key, by_name).alias(key_name(len(source.keys))))
    return keys


@floors.register
def _window(node: windows.WindowOperator, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    spec = node.window
    if floor is None:
        return floors(node.source, None, env)
    if isinstance(spec, windows.HoppingWindow):
        return floors(node.source, _back(floor, spec.size), env)
    source = compile_node(node.source, env)
    keys = _window_keys(node, source)
    if isinstance(spec, windows.SessionWindow):
        return floors(node.source, _session_floor(spec, source, keys, floor), env)
    if isinstance(spec, windows.CountWindow):
        # a count window ending at or after the floor has its last start at or after floor - 1; it
        # holds that start and the n - 1 distinct starts of its group before it
        needed = floor - 1
        if spec.n > 1:
            distinct = source.frame.select(*keys, START).distinct()
            earliest = _last_before(distinct, [F.col(c) for c in distinct.columns[:-1]], F.col(START), needed,
                                    spec.n - 1)
            needed = needed if earliest is None else min(needed, earliest)
        # an event starting there ends after it: kept; one that started before it and is still
        # kept only forms windows that end before the floor (they are computed and dropped)
        return floors(node.source, needed, env)
    # a snapshot interval reaching the floor starts at its group's greatest endpoint before it
    before = F.lit(floor)
    endpoint = F.greatest(F.when(F.col(START) < before, F.col(START)),
                          F.when((F.col(END) < before) & (F.col(END) != F.lit(INFINITY_MICROS)), F.col(END)))
    frame = source.frame.select(*keys, endpoint.alias("_sq_endpoint"))
    per_group = frame.groupBy(*frame.columns[:-1]).agg(F.max("_sq_endpoint").alias("_sq_endpoint"))
    least = per_group.agg(F.min("_sq_endpoint")).first()
    # no group has an endpoint before the floor: nothing before it matters
    return floors(node.source, floor if least is None or least[0] is None else int(least[0]), env)


def _session_floor(spec: windows.SessionWindow, source: Flow, keys: list[Column], floor: int) -> int:
    """The input floor of a session window whose output must be exact from ``floor`` on: the start
    of the earliest session that ends at or after it, over the groups of ``keys`` (``floor`` where
    none does), less the gap."""
    frame = source.frame.select(*keys, START, END)
    groups = tuple(frame.columns[:-2])
    ends = session_rows(frame, groups, spec.gap).groupBy(*groups, SESSION).agg(F.max(EXTENDED).alias("_sq_until"))
    least = ends.filter(F.col("_sq_until") >= F.lit(floor)).agg(F.min(SESSION)).first()
    start = floor if least is None or least[0] is None else min(floor, int(least[0]))
    return max(MIN_MICROS, start - spec.gap)


@floors.register
def _group_apply(node: windows.GroupApply, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    grouped = grouped_flow(node, compile_node(node.source, env))
    inner = dict(floors(node.apply, floor, {**env, GROUP: grouped}))
    group_floor = inner.pop(GROUP, floor)
    return merge(inner, floors(node.source, group_floor, env))


@floors.register(joins.Join)
@floors.register(joins.Union)
def _overlapping(node: nodes.Node, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    return merge(*[floors(s, floor, env) for s in node.sources])


@floors.register(joins.AntiJoin)
@floors.register(joins.Clip)
def _cut_by_right(node: joins.Binary, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if floor is None:
        return merge(floors(node.left, None, env), floors(node.right, None, env))
    left = compile_node(node.left, env)
    least = left.frame.filter(F.col(END) >= F.lit(floor)).agg(F.min(START)).first()
    right_floor = floor if least is None or least[0] is None else min(floor, int(least[0]))
    return merge(floors(node.left, floor, env), floors(node.right, right_floor, env))


def _exact_or_missing(node: nodes.Node) -> bool:
    """Whether ``node``'s events over kept inputs are exact or missing, never wrong: an input's
    events through operators that map each event by itself."""
    return nodes.input_through(node) is not None


@floors.register
def _as_of_join(node: as_of.AsOfJoin, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if floor is None or not _exact_or_missing(node.right):
        return merge(floors(node.left, floor, env), floors(node.right, None, env))
    left = compile_node(node.left, env)
    least = left.frame.filter(F.col(END) >= F.lit(floor)).agg(F.min(START)).first()
    reach = floor if least is None or least[0] is None else min(floor, int(least[0]))
    bounds: list[int] = []
    if node.within is not None:
        bounds.append(max(MIN_MICROS, reach - node.within))
    if not split_on(node.on)[3]:
        # per key, the latest start at or before the reach (right events failing their own
        # conditions are never partners)
        right, keys = keyed(node, compile_node(node.right, env), 1)
        latest = (right.filter(F.col(START) <= F.lit(reach)).groupBy(*keys)
                  .agg(F.max(START).alias("_sq_latest")).agg(F.min("_sq_latest")).first())
        bounds.append(reach if latest is None or latest[0] is None else min(reach, int(latest[0])))
    right_floor = max(bounds) if bounds else None
    return merge(floors(node.left, floor, env), floors(node.right, right_floor, env))


@floors.register
def _to_signal(node: as_of.ToSignal, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if floor is None or not _exact_or_missing(node.source):
        return floors(node.source, None, env)
    source = compile_node(node.source, env)
    keys = [F.col(k) for k in source.keys] + [compile_expr(node.key, by_name).alias("_sq_signal_key")]
    earliest = _last_before(source.frame, keys, F.col(START), floor, 1)
    return floors(node.source, floor if earliest is None else min(floor, earliest), env)


@floors.register
def _followed_by(node: patterns.FollowedBy, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if node.within is None:
        # a left event waits for its partners for good (and, by default, must see every right event
        # after it to know its earliest)
        right_floor = floor if node.all_matches else None
        return merge(floors(node.left, None, env), floors(node.right, right_floor, env))
    # a match ending at or after the floor is a point at a partner's start s >= floor - 1, whose
    # left event starts after s - within: at or after floor - within
    left_floor = _back(floor, node.within)
    # every partner starts at or after floor - 1; by default, every right event after a kept left
    # event's start is needed to know that none comes earlier
    right_floor = floor if node.all_matches else left_floor
    return merge(floors(node.left, left_floor, env), floors(node.right, right_floor, env))


@floors.register
def _not_followed_by(node: patterns.NotFollowedBy, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    # an absence ending at or after the floor is a point at a.start + within >= floor - 1: its left
    # event starts at or after floor - within - 1, and its partners would start after that
    needed = _back(floor, node.within + 1)
    return merge(floors(node.left, needed, env), floors(node.right, needed, env))


@floors.register
def _time_batch(node: esper.TimeBatch, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    return floors(node.source, _back(floor, 2 * node.size), env)


@floors.register
def _keep_last(node: esper.KeepLast, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if floor is None:
        return floors(node.source, None, env)
    # an event ends at the start of the n-th event after it in its group's order (start first): it
    # ends at or after the floor when that event starts at or after it, so the n events of the
    # group before the first one starting at or after the floor, and all after, are needed
    source = compile_node(node.source, env)
    earliest = _last_before(source.frame, [F.col(k) for k in source.keys], F.col(START), floor, node.n)
    # an event that started before it and is still kept ends, by the events kept after it, before
    # the floor: its output is computed and dropped
    return floors(node.source, floor if earliest is None else min(floor, earliest), env)


@floors.register
def _length_batch(node: esper.LengthBatch, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    if floor is None or not counts_dropped(node):
        return floors(node.source, None, env)
    # batch k ends where batch k + 1 fills: the batches before the last one that fills before the
    # floor end before it; that one, from its first event on, and all after are needed. (A batch
    # an earlier step dropped part of ends before an earlier floor: its output, wrong or missing, is
    # discarded)
    source = compile_node(node.source, env)
    earliest = _first_needed(source, node.n, floor, offsets_of(node))
    return floors(node.source, floor if earliest is None else min(floor, earliest), env)


def _first_needed(source: Flow, n: int, floor: int, offsets: DataFrame | None) -> Floor:
    """The least over the groups of the start of the first event of the last batch that fills
    before ``floor``: with ``c`` events starting before it and offset ``o``, the
    ``n + (o + c) mod n``-th greatest start before ``floor`` (the least start before it where the
    group has fewer); None where no group has an event before it."""
    keys = source.keys
    before = source.frame.select(*keys, START).filter(F.col(START) < F.lit(floor))
    if keys:
        group = Window.partitionBy(*keys)
        needed = F.lit(n) + (F.col(DROPPED) + F.count(F.lit(1)).over(group)) % F.lit(n)
        rank = F.row_number().over(group.orderBy(F.col(START).desc()))
        ranked = with_offset(before, keys, offsets).select(START, needed.alias("_sq_needed"), rank.alias("_sq_rank"))
        least = ranked.filter(F.col("_sq_rank") <= F.col("_sq_needed")).agg(F.min(START)).first()
    else:
        # one group: its count and offset in one job, then the top of it (never the whole stream
        # in one partition)
        parts = before.select(F.lit(1).alias("_sq_count"), F.lit(0).cast("long").alias(DROPPED))
        if offsets is not None:
            parts = parts.unionByName(offsets.select(F.lit(0).alias("_sq_count"), DROPPED))
        counted = parts.agg(F.sum("_sq_count"), F.sum(DROPPED)).first()
        if counted is None or not counted[0]:
            return None
        top = n + (int(counted[0]) + int(counted[1])) % n
        least = before.orderBy(F.col(START).desc()).limit(top).agg(F.min(START)).first()
    return None if least is None or least[0] is None else int(least[0])


# --- the offsets of length batches --------------------------------------------------------------

@attrs.frozen
class CountedBatch:
    """A ``length_batch`` whose source is the events of ``input`` through ``where``/``select`` and
    the group streams of ``groups`` (the enclosing ``group_apply``s it reads through, outermost
    first): a streaming run can drop its first events per group and count them. ``name``: its
    offsets' name in the carried state."""

    input: str
    groups: tuple[windows.GroupApply, ...]
    name: str
    #: the input's events are points: the ones ending before a floor start before every other
    points: bool = False


#: where a stream's events come from unchanged: an input, through group streams (None: elsewhere)
_Rows = tuple[nodes.Input, tuple[windows.GroupApply, ...]] | None


def _rows_of(node: nodes.Node, group: _Rows) -> _Rows:
    """Where ``node``'s events come from unchanged (each an input event, with its lifetime), given
    where the enclosing group stream's come from."""
    while isinstance(node, (nodes.Where, nodes.Select)):
        node = node.source
    if isinstance(node, nodes.Input):
        return node, ()
    return group if isinstance(node, windows.GroupSource) else None


def counted_batches(query: nodes.Node) -> dict[esper.LengthBatch, CountedBatch]:
    """The ``length_batch`` nodes of ``query`` whose dropped events a streaming run counts: each
    whose source is an input's events through ``where``, ``select`` and group streams of such (a
    node that occurs over two different group streams is left out: it keeps its whole input).

    >>> counted_batches(readings.length_batch(3).node)  # doctest: +SKIP
    {LengthBatch(...): CountedBatch(input='readings', groups=(), name='length_batch/0', points=True)}
    """
    found: dict[esper.LengthBatch, set[_Rows]] = {}

    def visit(node: nodes.Node, group: _Rows) -> None:
        if isinstance(node, esper.LengthBatch):
            found.setdefault(node, set()).add(_rows_of(node.source, group))
        if isinstance(node, windows.GroupApply):
            rows = _rows_of(node.source, group)
            visit(node.apply, None if rows is None else (rows[0], rows[1] + (node,)))
        for source in node.sources:
            visit(source, group)

    visit(query, None)
    counted: dict[esper.LengthBatch, CountedBatch] = {}
    for node, ways in found.items():
        (rows, *others) = ways
        if rows is not None and not others:
            read, groups = rows
            counted[node] = CountedBatch(read.name, groups, f"length_batch/{len(counted)}",
                                         read.shape is Shape.POINT)
    return counted


def _source_flow(node: esper.LengthBatch, counted: CountedBatch, env: Mapping[str, Flow]) -> Flow:
    """``node``'s source over the inputs ``env``, through its group streams."""
    inner = dict(env)
    for group in counted.groups:
        inner[GROUP] = grouped_flow(group, compile_node(group.source, inner))
    return compile_node(node.source, inner)


def offsets_after(counted: Mapping[esper.LengthBatch, CountedBatch], applied: Mapping[str, Floor],
                  env: Mapping[str, Flow], offsets: Mapping[esper.LengthBatch, DataFrame | None]
                  ) -> tuple[dict[str, Floor], dict[esper.LengthBatch, DataFrame | None]]:
    """The floors to apply and the counted length batches' offsets once their events ending
    before those floors are dropped: ``applied`` (the inputs' final floors), except that an input
    keeps everything where, in some group of a length batch reading it, the events it would drop
    are not the first of the group's order (one does not start before every kept one). One job
    per counted length batch whose input drops events and is not of points (points always come
    first); the offsets are lazy frames."""
    floors_now = dict(applied)
    stats: dict[esper.LengthBatch, tuple[Flow, DataFrame]] = {}
    for node, c in counted.items():
        floor = floors_now.get(c.input)
        if floor is None:
            continue
        source = _source_flow(node, c, env)
        ends_before = F.col(END) < F.lit(floor)
        per_group = source.frame.groupBy(*source.keys).agg(
            F.count(F.when(ends_before, F.lit(1))).alias(DROPPED),
            F.max(F.when(ends_before, F.col(START))).alias("_sq_last_dropped"),
            F.min(F.when(~ends_before, F.col(START))).alias("_sq_first_kept"))
        if not c.points:
            # a long interval kept while one after it in the group's order goes
            late = (F.col("_sq_last_dropped") >= F.col("_sq_first_kept")).cast("int")
            broken = per_group.agg(F.max(late)).first()
            if broken is not None and broken[0] == 1:
                floors_now[c.input] = None
        stats[node] = (source, per_group)
    after = dict(offsets)
    for node, (source, per_group) in stats.items():
        if floors_now.get(counted[node].input) is None:
            continue
        keys = source.keys
        dropped = per_group.select(*keys, DROPPED)
        before = offsets.get(node)
        if before is not None:
            dropped = before.select(*keys, DROPPED).unionByName(dropped)
        total = dropped.groupBy(*keys).agg((F.sum(DROPPED) % F.lit(node.n)).alias(DROPPED))
        # a group that dropped a multiple of n counts from 0, as a group without an offset
        after[node] = total.filter(F.col(DROPPED) != F.lit(0))
    return floors_now, after


__all__ = ["CountedBatch", "Floor", "counted_batches", "floors", "merge", "offsets_after"]
