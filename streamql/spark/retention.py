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
- hopping/tumbling windows: ``f - size`` (a window ending at or after ``f`` starts at or after
  ``f - size``, and only events ending after its start touch it); ``time_batch(size)``:
  ``f - 2*size``;
- snapshot windows: the greatest endpoint before ``f`` in each group (the start of the snapshot
  interval that reaches ``f``), least over the groups — read from the data;
- ``anti_join``/``clip``: the left input ``f``; the right input the least start of the left
  events that end at or after ``f`` (those events' outputs depend on every right event during
  their lifetimes) — read from the data;
- ``group_apply``: the sub-query's rule, with the group's stream as its input;
- count windows: per group, the ``n - 1``-th greatest distinct start before ``f - 1`` (a window
  ending at or after ``f`` has its last start there or later, and holds the ``n - 1`` distinct
  starts before it); ``keep_last(n)``: per group, the ``n``-th greatest start before ``f`` (an
  event ends where the ``n``-th event after it starts) — both least over the groups, read from the
  data. An event kept that started before that (a long interval) forms outputs that end before
  ``f``: computed and dropped;
- ``length_batch`` (batches counted from the start of the stream) and ``alter_duration`` by an
  expression (any distance): no floor — these keep their whole input (``None``).

Every floor is also held at or below its input's CTI.
"""
from __future__ import annotations

from functools import singledispatch
from typing import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.expr.nodes import Literal
from streamql.query import esper, joins, nodes, windows
from streamql.spark.columns import END, START
from streamql.spark.expressions import compile_expr
from streamql.spark.operators import GROUP, Flow, by_name, compile_node
from streamql.spark.windows import grouped_flow, key_name
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
    if not isinstance(node.duration, Literal):
        return floors(node.source, None, env)
    return floors(node.source, _back(floor, max(0, duration_micros(node.duration.value))), env)


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


def _window_keys(node: windows.WindowAggregate, source: Flow) -> list[Column]:
    keys = [F.col(k) for k in source.keys]
    if node.key is not None:
        keys.append(compile_expr(node.key, by_name).alias(key_name(len(source.keys))))
    return keys


@floors.register
def _window(node: windows.WindowAggregate, floor: Floor, env: Mapping[str, Flow]) -> dict[str, Floor]:
    spec = node.window
    if floor is None:
        return floors(node.source, None, env)
    if isinstance(spec, windows.HoppingWindow):
        return floors(node.source, _back(floor, spec.size), env)
    source = compile_node(node.source, env)
    keys = _window_keys(node, source)
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


__all__ = ["Floor", "floors", "merge"]
