"""Live grouped snapshot windows that carry each group's frontier, not the events since the
output floor (docs/design-fewer-jobs.md, "Built: the carried frontier").

A streaming step re-evaluates most queries over the input events it keeps and takes away what
it released before (``streamql.spark.streaming.step``). A grouped snapshot window at the root of
the query, over one POINT or INTERVAL input through operators that map each event on its own
(``where``, ``select``, ``alter_duration``, ``alter_lifetime``, ``to_point``), released as
intervals, needs neither:

- every event a step accepts is final at once, both its start and its end (``_sq_closed`` and
  ``_sq_head`` hold for it: a late one was dropped or moved by the scan), and every event a later
  step accepts starts at or after this step's CTI ``c`` (the window's input CTI);
- so every boundary of a group's snapshot intervals is stable, and the release rule releases
  exactly the intervals that end at or before ``c``: a prefix of the group's intervals;
- let ``P`` be the group's greatest endpoint (start or end of one of its events) at or before
  ``c``. The intervals a later step can still output or change are those after ``P``, and the
  events alive in them are exactly the group's events that end after ``c``. Each of those that
  starts before ``P`` is alive in all of ``[P, c]`` (no endpoint lies in between): clipped to
  start at ``P`` it makes the same intervals from ``P`` on, and none before it.

A step therefore carries, per group, the events that end after the CTI with their starts clipped
to the group's ``P`` (the *frontier*), sweeps those and the new events, releases what the release
rule releases (each interval once: nothing to take away) and carries on the same way. Every
aggregate is unchanged by the clip: an event alive in an interval covers all of it.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.events import Shape
from streamql.query import nodes, windows
from streamql.spark.base.columns import END, START

#: the name under which a step carries the frontier's events (``Carried.partials``)
FRONTIER = "frontier"
#: a group's greatest endpoint at or before the CTI
_LAST_BEFORE = "_sq_last_before"
_ONE_EVENT = (nodes.Where, nodes.Select, nodes.AlterDuration, nodes.AlterLifetime, nodes.ToPoint)


def frontier_window(query: nodes.Node, shapes: tuple[Shape, ...]) -> windows.WindowAggregate | None:
    """``query`` if it is a grouped snapshot window that can run on its carried frontier (see the
    module's text) for a run that releases ``shapes``, else None. An EDGE input's events can stay
    open across steps; points and edges released from an interval before it is final would be
    released again; an ungrouped window sweeps ranges whose borders need the whole input."""
    if shapes != (Shape.INTERVAL,):
        return None
    if not isinstance(query, windows.WindowAggregate) or not isinstance(query.window, windows.SnapshotWindow):
        return None
    if query.key is None:
        return None
    node = query.source
    while not isinstance(node, nodes.Input):
        if not isinstance(node, _ONE_EVENT):
            return None
        node = node.source
    return query if node.shape in (Shape.POINT, Shape.INTERVAL) else None


def carried_frontier(frame: DataFrame, keys: tuple[str, ...], cti: int | None) -> DataFrame:
    """What a step carries of a snapshot window's input rows ``frame`` (lifetime, flags, the key
    columns ``keys``, the aggregates' values) after its CTI ``cti``: the rows that end after it,
    each starting no earlier than its group's greatest endpoint at or before it. Without a CTI
    nothing was released: every row, as it is."""
    if cti is None:
        return frame
    at = F.lit(cti)
    # an event ending at or before the CTI starts before it as well: both its endpoints count
    last = F.greatest(F.when(F.col(START) <= at, F.col(START)), F.when(F.col(END) <= at, F.col(END)))
    group = Window.partitionBy(*keys)
    clipped = F.greatest(F.col(START), F.max(last).over(group)).alias(START)
    return frame.select(*[clipped if c == START else F.col(c) for c in frame.columns]).filter(F.col(END) > at)


def _all(conditions: list[Column]) -> Column:
    both = conditions[0]
    for c in conditions[1:]:
        both = both & c
    return both


__all__ = ["FRONTIER", "carried_frontier", "frontier_window"]
