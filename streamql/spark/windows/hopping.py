"""Hopping and tumbling windows on Spark: each event is assigned to the windows its lifetime
overlaps, then every (group, window) is aggregated — a generate plus one shuffle, as Spark's own
``window()`` grouping does, and parallel whether or not the stream is grouped.

Window ``k`` is ``[k*hop, k*hop + size)``. An event ``[s, e)`` overlaps windows
``floor((s - size) / hop) + 1`` to ``floor((e - 1) / hop)``; an event with end INFINITY reaches
the windows starting before the CTI while the CTI is finite, and once it is INFINITY (the event
never ends) those starting at or before the horizon of its group (docs/windows.md#events-that-never-end).
"""
from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamql.expr.nodes import Aggregate
from streamql.query.windows import HoppingWindow
from streamql.spark.base.aggregates import member_aggregates
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.operators.flow import GROUP_CTI, GroupCtis, shifted
from streamql.spark.windows.stability import stable_once_cti_reaches
from streamql.time import INFINITY_MICROS

WINDOW, FIRST, LAST, CAP = "_sq_window", "_sq_first", "_sq_last", "_sq_cap"
CLIPPED_START, CLIPPED_END = "_sq_clipped_start", "_sq_clipped_end"


def floor_div(a: Column, b: int) -> Column:
    """``floor(a / b)`` for a long ``a`` and a positive ``b``, in exact integer arithmetic (a double
    quotient loses precision past 2**53 microseconds)."""
    # a - pmod(a, b) is a multiple of b, which SQL's truncating integral ``div`` divides exactly
    return F.call_function("div", a - F.pmod(a, F.lit(b)), F.lit(b))


def hopping_windows(spec: HoppingWindow, frame: DataFrame, keys: tuple[str, ...], horizon_keys: tuple[str, ...],
                    aggregates: Sequence[Aggregate], cti: int | None, may_be_open: bool,
                    latest: DataFrame | None, group_ctis: GroupCtis | None = None) -> DataFrame:
    """One row per non-empty window per group of ``keys``: the window's lifetime, its stability,
    the keys and the aggregates. An event with end INFINITY (``may_be_open``) reaches every window
    after its start: while the CTI is finite, those starting before the CTI are formed (no later
    one can be stable yet); once it is INFINITY the event never ends, and its windows stop at the
    greatest ``_sq_latest`` of its group in ``latest`` (``horizon_keys`` + ``_sq_latest`` per event).
    ``group_ctis``: inside ``group_apply``, each group's own (finite) CTI, ``cti`` the least."""
    by_group = group_ctis is not None
    if group_ctis is not None:
        frame = group_ctis.joined(frame)
    windowed = window_members(spec, frame, horizon_keys, cti, may_be_open, latest, by_group)
    # members see their lifetimes clipped to the window (time-sensitive user aggregates)
    members = member_aggregates(list(enumerate(aggregates)), F.col(CLIPPED_START), F.col(CLIPPED_END))
    # a select that reads no aggregate (only the key, or constants) still has one event per
    # non-empty window: the distinct (group, window) pairs, the same one shuffle (Spark's groupBy
    # refuses an aggregation without aggregates)
    formed = windowed.groupBy(*keys, WINDOW).agg(*members) if members else windowed.select(*keys, WINDOW).distinct()
    if group_ctis is not None:
        formed = group_ctis.joined(formed)
    return formed_windows(spec, formed, keys, cti, by_group)


def group_output_ctis(spec: HoppingWindow, group_ctis: GroupCtis | None) -> GroupCtis | None:
    """Each group's output CTI from its input CTI (``HoppingWindow.output_cti`` as a column)."""
    if group_ctis is None:
        return None
    c = F.col(GROUP_CTI)
    first = floor_div(c - F.lit(spec.size), spec.hop) + F.lit(1)
    out = group_ctis.frame.withColumn(GROUP_CTI, F.least(c, first * F.lit(spec.hop)))
    default = spec.output_cti(group_ctis.default)
    assert default is not None
    return GroupCtis(out, default, group_ctis.keys)


def formed_windows(spec: HoppingWindow, formed: DataFrame, keys: tuple[str, ...], cti: int | None,
                   by_group: bool = False) -> DataFrame:
    """The rows of ``formed`` (one per group of ``keys`` and window number ``_sq_window``, with the
    window's values) with the window's lifetime and stability: the form ``hopping_windows`` returns.
    ``by_group``: ``formed`` holds each row's group's CTI (``GROUP_CTI``), finite."""
    start = F.col(WINDOW) * F.lit(spec.hop)
    end = shifted(start, spec.size)
    stable = stable_once_cti_reaches(end, cti, by_group)
    names = [n for n in formed.columns if n not in (*keys, WINDOW, GROUP_CTI)]
    return formed.select(start.alias(START), end.alias(END), stable.alias(CLOSED), stable.alias(HEAD),
                         *keys, *names)


def window_members(spec: HoppingWindow, frame: DataFrame, horizon_keys: tuple[str, ...], cti: int | None,
                   may_be_open: bool, latest: DataFrame | None, by_group: bool = False) -> DataFrame:
    """Each event of ``frame`` once per window it is in (``hopping_windows``), with the window's
    number (``_sq_window``) and the event's lifetime clipped to the window (``_sq_clipped_start``,
    ``_sq_clipped_end``)."""
    first = floor_div(F.col(START) - F.lit(spec.size), spec.hop) + F.lit(1)
    finite_last = floor_div(F.col(END) - F.lit(1), spec.hop)
    events = frame.withColumn(LAST, finite_last)
    never_ends = F.col(END) == F.lit(INFINITY_MICROS)
    if may_be_open and cti != INFINITY_MICROS:
        before_cti = F.lit(None).cast("long") if cti is None else F.lit((cti - 1) // spec.hop)
        if by_group:  # each event's group's CTI (``frame`` holds it)
            before_cti = floor_div(F.col(GROUP_CTI) - F.lit(1), spec.hop)
        events = frame.withColumn(LAST, F.when(never_ends, before_cti).otherwise(finite_last))
    elif may_be_open:
        assert latest is not None, "windows over events that never end need their horizon"
        open_events = frame.filter(never_ends)
        if horizon_keys:
            caps = latest.groupBy(*horizon_keys).agg(F.max("_sq_latest").alias(CAP))
            open_events = _join_caps(open_events, caps, horizon_keys)
            open_events = open_events.withColumn(LAST, floor_div(F.col(CAP), spec.hop)).drop(CAP)
        else:
            # one horizon for the whole stream: read now (one small aggregate), so that the plan
            # needs neither a single-partition aggregate nor a join with its one row
            cap = latest.agg(F.max("_sq_latest")).first()
            horizon = None if cap is None or cap[0] is None else int(cap[0])
            open_events = open_events.withColumn(
                LAST, F.lit(None).cast("long") if horizon is None else floor_div(F.lit(horizon), spec.hop))
        events = events.filter(~never_ends).unionByName(open_events)
    # with hop > size an event can fall between windows: then first > last, and F.sequence would
    # count down instead of giving nothing
    events = events.withColumn(FIRST, first).filter(F.col(FIRST) <= F.col(LAST))
    windowed = events.select("*", F.explode(F.sequence(F.col(FIRST), F.col(LAST))).alias(WINDOW))
    window_start = F.col(WINDOW) * F.lit(spec.hop)
    window_end = shifted(window_start, spec.size)
    return windowed.select("*", F.greatest(F.col(START), window_start).alias(CLIPPED_START),
                           F.least(F.col(END), window_end).alias(CLIPPED_END))


def _join_caps(open_events: DataFrame, caps: DataFrame, horizon_keys: tuple[str, ...]) -> DataFrame:
    """Each open event with its group's horizon (keys compared null-safely: null is a group)."""
    renamed = caps.select(*[F.col(k).alias(f"_sq_cap_{k}") for k in horizon_keys], CAP)
    condition = None
    for k in horizon_keys:
        equal = open_events[k].eqNullSafe(renamed[f"_sq_cap_{k}"])
        condition = equal if condition is None else condition & equal
    joined = open_events.join(renamed, condition)
    return joined.drop(*[f"_sq_cap_{k}" for k in horizon_keys])
