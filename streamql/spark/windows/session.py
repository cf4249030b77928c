"""Session windows on Spark: a sweep over each group's events in start order
(docs/session-windows.md#session-windows-on-spark).

The semantics are ``streamql.reference.windows.sessions``. Each event's extended end is
``end + gap``. In start order, an event starts a new session when its start is at or after the
greatest extended end of every event before it (the *reach* so far: touching does not merge);
otherwise it belongs to the session of the event before it. So one window function gives each
event the reach before it, a second one the start of its session (the greatest start of a new
session so far) — one shuffle and one sort per group, no Python — and one aggregation per
(group, session) or, with ``max_duration``, per (group, session, piece) gives the windows.

An ungrouped session window still uses every core: the timeline is cut into ranges at
approximate quantiles of the starts (``snapshot.range_borders``) and each range is swept on its
own. A session may cross any number of borders; two numbers per range, from the events before
it, make each range's sweep exact:

- the *incoming reach*, the greatest extended end of the ranges before it: an event is new when
  its start is at or after both the reach before it in its range and the incoming reach;
- the *carried session*, the start of the last session that began in a range before it: the
  session of the range's first events when none of them is new.

Both come from one small summary per range (its greatest extended end and the start of its last
event that its range alone would call new — a session starting there is new overall exactly
when that start is at or after the incoming reach, and no other event of the range can be new
if it is not), collected to the driver in a plan-time job and combined there in range order.

>>> formed, cti, finite, groups = session_windows(spec, frame, ("_sq_key0",), aggregates, cti, finite)  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from streamql.expr.nodes import Aggregate
from streamql.query.windows import SessionWindow
from streamql.spark.base.aggregates import member_aggregates, result_name
from streamql.spark.windows.hopping import floor_div
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.operators.flow import GROUP_CTI, GroupCtis, shifted
from streamql.spark.runtime.connect import parallelism as session_parallelism
from streamql.spark.windows.stability import stable_once_cti_reaches
from streamql.spark.base.sketches import Sketches
from streamql.spark.windows.snapshot import RANGES_PER_CORE, range_borders, range_of
from streamql.time import INFINITY_MICROS

#: an event's end plus the gap; the start of its session; the piece of the session it starts in
EXTENDED, SESSION, PIECE = "_sq_extended", "_sq_session", "_sq_piece"
#: a window's greatest extended end; its session's end
REACH, SESSION_END = "_sq_reach", "_sq_session_end"
_RANGE, _BEFORE, _NEW = "_sq_range", "_sq_before", "_sq_new"


def session_rows(frame: DataFrame, keys: tuple[str, ...], gap: int, starts: Sketches | None = None) -> DataFrame:
    """The rows of ``frame`` (``_sq_start``, ``_sq_end``, ``keys`` ...) with their extended end
    (``EXTENDED``) and the start of their session in their group of ``keys`` (``SESSION``);
    ``starts``: sketches of the starts, for the borders of the ranges (``range_borders``)."""
    extended = frame.withColumn(EXTENDED, shifted(F.col(END), gap))
    if keys:
        return _swept(extended, keys, None, None)
    parallelism = session_parallelism(frame.sparkSession)
    borders = range_borders(frame, RANGES_PER_CORE * parallelism, starts)
    ranged = extended.withColumn(_RANGE, range_of(F.col(START), borders))
    incoming, carried = _across_ranges(ranged)
    return _swept(ranged, (_RANGE,), incoming, carried).drop(_RANGE)


def _order(partition: Sequence[str]) -> WindowSpec:
    # rows with one start may come in any order: only the first of them can start a session, and
    # whether it does depends on the earlier starts alone (the others see its extended end)
    return Window.partitionBy(*partition).orderBy(START)


def _swept(rows: DataFrame, partition: tuple[str, ...], incoming: Column | None, carried: Column | None
           ) -> DataFrame:
    """``rows`` with ``SESSION``, swept per ``partition``; over ranges, ``incoming`` and ``carried``
    give each range's incoming reach and carried session."""
    order = _order(partition)
    before = F.max(EXTENDED).over(order.rowsBetween(Window.unboundedPreceding, -1))
    if incoming is not None:
        before = F.greatest(before, incoming)  # greatest skips nulls
    new = F.col(_BEFORE).isNull() | (F.col(START) >= F.col(_BEFORE))
    session = F.max(F.when(F.col(_NEW), F.col(START))).over(
        order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    if carried is not None:
        session = F.coalesce(session, carried)
    swept = rows.withColumn(_BEFORE, before).withColumn(_NEW, new)
    return swept.withColumn(SESSION, session).drop(_BEFORE, _NEW)


def _across_ranges(ranged: DataFrame) -> tuple[Column, Column]:
    """Each range's incoming reach and carried session (the module's text) as columns of
    ``_sq_range``: one plan-time job sweeps every range alone and collects one row per range."""
    order = _order((_RANGE,))
    before = F.max(EXTENDED).over(order.rowsBetween(Window.unboundedPreceding, -1))
    alone = ranged.select(_RANGE, START, EXTENDED, before.alias(_BEFORE))
    new_alone = F.col(_BEFORE).isNull() | (F.col(START) >= F.col(_BEFORE))
    summary = alone.groupBy(_RANGE).agg(F.max(EXTENDED).alias("reach"),
                                        F.max(F.when(new_alone, F.col(START))).alias("last_new")).collect()
    incoming: dict[int, int] = {}
    carried: dict[int, int] = {}
    reach: int | None = None
    last_session: int | None = None
    for row in sorted(summary, key=lambda r: int(r[_RANGE])):
        part = int(row[_RANGE])
        if reach is not None:
            incoming[part] = reach
        if last_session is not None:
            carried[part] = last_session
        if row["last_new"] is not None and (reach is None or int(row["last_new"]) >= reach):
            last_session = int(row["last_new"])
        reach = int(row["reach"]) if reach is None else max(reach, int(row["reach"]))
    return _by_range(incoming), _by_range(carried)


def _by_range(values: Mapping[int, int]) -> Column:
    """A literal map from range to value, looked up for the row's range (null where absent)."""
    if not values:
        return F.lit(None).cast("long")
    pairs = [F.lit(v) for part in sorted(values) for v in (part, values[part])]
    return F.element_at(F.create_map(*pairs), F.col(_RANGE)).cast("long")


def session_windows(spec: SessionWindow, frame: DataFrame, keys: tuple[str, ...], aggregates: Sequence[Aggregate],
                    cti: int | None, finite: int | None, group_keys: tuple[str, ...] = (),
                    group_ctis: GroupCtis | None = None, starts: Sketches | None = None
                    ) -> tuple[DataFrame, int | None, int | None, GroupCtis | None]:
    """One row per session (per piece, with ``max_duration``) per group of ``keys``: the lifetime,
    the stability flags, the keys and each aggregate (``result_name``); and the output CTI and
    greatest finite output CTI for the input's ``cti`` and ``finite`` (read from the data when
    finite: the start of the earliest session the CTI has not reached the end of, or the CTI); and,
    inside ``group_apply`` (``group_keys``: its key columns), the output CTI per group of them — from
    each group's own input CTI where ``group_ctis`` gives them (``cti`` is then the least).

    Members see their lifetimes clipped to the window: a session holds its events' lifetimes
    whole, a piece cuts them at its end (before the session's end, which is after every member's
    end)."""
    rows = session_rows(frame, keys, spec.gap, starts)
    group = [*keys, SESSION]
    clipped_end = F.col(END)
    if spec.max_duration is not None:
        rows = rows.withColumn(PIECE, floor_div(F.col(START) - F.col(SESSION), spec.max_duration))
        group.append(PIECE)
        clipped_end = F.least(F.col(END), shifted(_piece_start(spec.max_duration), spec.max_duration))
    members = member_aggregates(list(enumerate(aggregates)), F.col(START), clipped_end)
    windows = rows.groupBy(*group).agg(F.max(EXTENDED).alias(REACH), *members)
    if spec.max_duration is None:
        start, session_end = F.col(SESSION), F.col(REACH)
        end = session_end
    else:
        # a session's end is the greatest reach of its pieces; its last piece ends there
        start = _piece_start(spec.max_duration)
        session_end = F.max(REACH).over(Window.partitionBy(*keys, SESSION))
        end = F.least(shifted(start, spec.max_duration), F.col(SESSION_END))
        windows = windows.withColumn(SESSION_END, session_end)
        session_end = F.col(SESSION_END)
    if group_ctis is not None:
        windows = group_ctis.joined(windows)
    stable = stable_once_cti_reaches(session_end, cti, by_group=group_ctis is not None)
    own = [F.col(GROUP_CTI)] if group_ctis is not None else []
    formed = windows.select(start.alias(START), end.alias(END), stable.alias(CLOSED), stable.alias(HEAD), *keys,
                            F.col(SESSION), session_end.alias(SESSION_END),
                            *[result_name(i) for i in range(len(aggregates))], *own)
    if group_ctis is not None:
        # the least over the groups of the start of their earliest session their own CTI has not
        # reached the end of, or their CTI (the least of which is ``cti``)
        row = formed.agg(F.min(F.when(F.col(SESSION_END) > F.col(GROUP_CTI), F.col(SESSION)))).first()
        found = None if row is None else row[0]
        out_cti = cti if cti is None or found is None else min(cti, int(found))
        if group_ctis.keys != group_keys:
            # inside a nested group_apply, the outer groups' CTIs: the flags read them, the output
            # keeps the least (the inner groups' own would need the outer ones as their default)
            return (formed.drop(SESSION, SESSION_END, GROUP_CTI), out_cti, _output_ctis(formed, finite, None)[0],
                    None)
        unstable = formed.filter(F.col(SESSION_END) > F.col(GROUP_CTI))
        earliest_own = F.min(F.least(F.col(SESSION), F.col(GROUP_CTI))).alias(GROUP_CTI)
        per_group = unstable.groupBy(*group_keys).agg(earliest_own).unionByName(
            group_ctis.frame.select(*group_keys, GROUP_CTI))
        own_groups = GroupCtis(per_group.groupBy(*group_keys).agg(F.min(GROUP_CTI).alias(GROUP_CTI)),
                               group_ctis.default, group_keys)
        # the greatest finite output CTI is taken from the least CTI (releases never depend on it
        # while the CTI is finite)
        return formed.drop(SESSION, SESSION_END, GROUP_CTI), out_cti, _output_ctis(formed, finite, None)[0], own_groups
    out_cti, out_finite = _output_ctis(formed, cti, finite)
    groups: GroupCtis | None = None
    if group_keys and cti is not None and out_cti != cti:
        # a group's CTI: the start of its earliest session the CTI has not reached the end of, or the CTI
        unstable = formed.filter(F.col(SESSION_END) > F.lit(cti))
        earliest = F.least(F.min(SESSION), F.lit(cti)).alias(GROUP_CTI)
        groups = GroupCtis(unstable.groupBy(*group_keys).agg(earliest), cti, group_keys)
    return formed.drop(SESSION, SESSION_END), out_cti, out_finite, groups


def _piece_start(max_duration: int) -> Column:
    return F.col(SESSION) + F.col(PIECE) * F.lit(max_duration)


def _output_ctis(formed: DataFrame, cti: int | None, finite: int | None) -> tuple[int | None, int | None]:
    """The output CTI for the input CTI ``cti``, and for its greatest finite CTI ``finite``: the start
    of the earliest session (over all groups) whose end is after it, or it if that is earlier.
    INFINITY stays INFINITY; the finite ones are read from the data in one job."""
    asked = sorted({c for c in (cti, finite) if c is not None and c != INFINITY_MICROS})
    if not asked:
        return cti, finite
    row = formed.agg(*[F.min(F.when(F.col(SESSION_END) > F.lit(c), F.col(SESSION))).alias(f"c{i}")
                       for i, c in enumerate(asked)]).first()
    earliest = {c: c if row is None or row[i] is None else min(c, int(row[i])) for i, c in enumerate(asked)}

    def out(c: int | None) -> int | None:
        return c if c is None or c == INFINITY_MICROS else earliest[c]

    return out(cti), out(finite)


__all__ = ["EXTENDED", "SESSION", "session_rows", "session_windows"]
