"""Windows, grouped windows and ``group_apply`` on Spark.

A window operator computes its key column (grouped windows), each aggregate's argument per event,
then forms its windows with one of ``snapshot``, ``hopping``, ``count_window`` or
``session_window`` — each returns one row per non-empty window with the lifetime, stability flags,
keys and one column per aggregate — and finally builds the payload from those columns
(``formed_windows`` forms them; ``top_k`` forms them the same way, with its members as the one
aggregate).

``group_apply`` adds its key as a column that every operator of the sub-query carries and that
every window partitions by: the sub-query runs once over all groups, not once per group.
"""
from __future__ import annotations

from typing import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamql.expr.nodes import Aggregate, Expr, GroupKey, aggregates_of
from streamql.query import windows
from streamql.spark.base.aggregates import result_name, value_columns
from streamql.spark.windows.count import count_windows
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.windows.hopping import group_output_ctis, hopping_windows
from streamql.spark.base.columns import FLOOR
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.operators.flow import GROUP, GROUP_CTI, LIFETIME, Flow, GroupCtis, by_name, compile_node, no_floor
from streamql.spark.windows.session import session_windows
from streamql.spark.windows.snapshot import snapshot_windows
from streamql.time import INFINITY_MICROS


def key_name(depth: int) -> str:
    """The column of the ``depth``-th group key (outermost ``group_apply`` first)."""
    return f"_sq_key{depth}"


def horizon(source: Flow) -> Column:
    """Per group of the source's keys: the greatest finite time seen at a window's input (starts,
    finite ends and the greatest finite CTI) — where windows over events that never end stop."""
    finite_end = F.when(F.col(END) != F.lit(INFINITY_MICROS), F.col(END))
    latest = F.greatest(F.col(START), F.coalesce(finite_end, F.col(START)))
    if source.finite_cti is not None:
        latest = F.greatest(latest, F.lit(source.finite_cti))
    return latest


def window_rows(node: windows.WindowOperator, source: Flow) -> tuple[DataFrame, tuple[str, ...]]:
    """The source's rows with the window's own key column (grouped windows), and the key columns
    the windows are formed per: the source's, then the window's own."""
    frame, keys = source.frame, source.keys
    if node.key is not None:
        keys = keys + (key_name(len(keys)),)
        frame = frame.withColumn(keys[-1], compile_expr(node.key, by_name))
    return frame, keys


def window_input(node: windows.WindowAggregate, source: Flow) -> tuple[DataFrame, tuple[str, ...], list[Aggregate]]:
    """A window's input rows (lifetime, the key columns, one value column per aggregate), its key
    columns (the source's, then the window's own key) and its aggregates."""
    frame, keys = window_rows(node, source)
    aggregates = aggregates_of(node.projection)
    return frame.select(*LIFETIME, *keys, *value_columns(aggregates, by_name)), keys, aggregates


def window_output(node: windows.WindowAggregate, formed: DataFrame, keys: tuple[str, ...], source: Flow,
                  cti: int | None, finite: int | None, group_ctis: GroupCtis | None = None) -> Flow:
    """The window operator's output from its formed windows (one row per window per group: the
    lifetime, the flags, ``keys`` and ``result_name(i)`` per aggregate)."""
    aggregates = aggregates_of(node.projection)
    leaves: dict[Expr, Column] = {a: F.col(result_name(i)) for i, a in enumerate(aggregates)}
    if node.key is not None:
        leaves[GroupKey(node.key.type)] = F.col(keys[-1])
    payload = construct_columns(node.projection, by_name, leaves)
    # a window's events have no floor of their own: the stream's CTI bounds their unstable ends
    out = formed.select(START, END, CLOSED, HEAD, no_floor(), *source.keys, *[c.alias(name) for name, c in payload])
    return Flow(out, cti, finite, source.keys, source.reached, group_ctis, reached_by=source.reached_by)


def formed_windows(node: windows.WindowOperator, source: Flow, frame: DataFrame, keys: tuple[str, ...],
                   aggregates: list[Aggregate]) -> tuple[DataFrame, int | None, int | None, GroupCtis | None]:
    """The windows of ``node`` over ``frame`` (``source``'s rows with the key columns ``keys`` and a
    value column per aggregate): one row per non-empty window per group (lifetime, stability flags,
    keys, one column per aggregate), and the output CTI, the greatest finite output CTI and, inside
    ``group_apply``, each group's output CTI."""
    spec = node.window
    cti, finite = source.cti, source.finite_cti
    groups = None
    if isinstance(spec, windows.SnapshotWindow):
        # the output CTI is the input's: so is each group's
        groups = source.group_ctis
        formed = snapshot_windows(frame, keys, aggregates, cti, groups, source.starts)
    elif isinstance(spec, windows.HoppingWindow):
        # only events that never end need the horizon — only with the CTI INFINITY, and only
        # inputs that may hold them pay for it
        may_be_open = node.source.may_be_open
        latest = (frame.select(*source.keys, horizon(source).alias("_sq_latest"))
                  if may_be_open and cti == INFINITY_MICROS else None)
        formed = hopping_windows(spec, frame, keys, source.keys, aggregates, cti, may_be_open, latest,
                                 source.group_ctis)
        cti, finite = spec.output_cti(cti), spec.output_cti(finite)
        groups = group_output_ctis(spec, source.group_ctis)
    elif isinstance(spec, windows.SessionWindow):
        # inside group_apply the output CTI depends on each group's data: each group's own, from
        # the group's own input CTI where an earlier window made those differ
        formed, cti, finite, groups = session_windows(spec, frame, keys, aggregates, cti, finite, source.keys,
                                                      source.group_ctis, source.starts)
    else:
        assert isinstance(spec, windows.CountWindow)
        formed, cti, groups = count_windows(spec, frame, keys, aggregates, cti, source.keys, source.group_ctis,
                                            source.starts)
    return formed, cti, finite, groups


@compile_node.register
def _window_aggregate(node: windows.WindowAggregate, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    frame, keys, aggregates = window_input(node, source)
    formed, cti, finite, groups = formed_windows(node, source, frame, keys, aggregates)
    return window_output(node, formed, keys, source, cti, finite, groups)


@compile_node.register
def _group_source(node: windows.GroupSource, env: Mapping[str, Flow]) -> Flow:
    return env[GROUP]


def grouped_flow(node: windows.GroupApply, source: Flow) -> Flow:
    """The stream a ``group_apply`` sub-query reads: ``source`` with the group key as one more key column
    (and, nested in another ``group_apply``, the outer groups' own CTIs: every inner group sees its outer group's)."""
    key = key_name(len(source.keys))
    return Flow(source.frame.withColumn(key, compile_expr(node.key, by_name)), source.cti, source.finite_cti,
                source.keys + (key,), source.reached, source.group_ctis, reached_by=source.reached_by)


def outer_group_ctis(source: Flow, inner: Flow) -> GroupCtis | None:
    """Each group's own CTI after a ``group_apply`` nested in another one's sub-query (``source``: its
    input, ``inner``: its sub-query's output), per group of the outer keys: the least over its
    inner groups and its empty group (the sub-query's static rule applied to the outer group's CTI).
    Inner CTIs given per outer group are the same in all its inner groups, the empty one included;
    given per inner group (a count or session window in the nested sub-query, the outer groups'
    CTIs all alike), the groups not in the frame and the empty one have the default."""
    groups = inner.group_ctis
    if groups is None or not source.keys:
        return None
    if groups.keys == source.keys:
        return groups
    if source.group_ctis is None and groups.keys[:len(source.keys)] == source.keys:
        least = groups.frame.groupBy(*source.keys).agg(F.min(GROUP_CTI).alias(GROUP_CTI))
        return GroupCtis(least, groups.default, source.keys)
    return None


@compile_node.register
def _group_apply(node: windows.GroupApply, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    grouped = grouped_flow(node, source)
    key = grouped.keys[-1]
    inner = compile_node(node.apply, {**env, GROUP: grouped})
    payload = construct_columns(node.result, by_name, {GroupKey(node.key.type): F.col(key)})
    frame = inner.frame
    if inner.group_ctis is not None:
        # an unstable end keeps its group's bound, not the least CTI over the groups
        # (reference.operators.bounded): a union or join after group_apply reads it
        frame = inner.with_group_ctis(frame)
        frame = frame.withColumn(FLOOR, F.when(~F.col(CLOSED), F.greatest(F.col(FLOOR), F.col(GROUP_CTI))))
    out = frame.select(*LIFETIME, *source.keys, *[c.alias(name) for name, c in payload])
    # windows compute data-dependent CTIs over all groups at once; the minimum over the groups
    # includes the CTI of a group with no events, which is the input CTI through the static rules
    return Flow(out, inner.cti, inner.finite_cti, source.keys, inner.reached, outer_group_ctis(source, inner),
                reached_by=inner.reached_by)
