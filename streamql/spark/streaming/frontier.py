"""Live grouped snapshot windows that carry each group's frontier, not the events since the
output floor (docs/design-fewer-jobs.md, "Built: the carried frontier").

A streaming step re-evaluates most queries over the input events it keeps and takes away what
it released before (``streamql.spark.streaming.step``). A grouped snapshot window at the root of
the query (or under ``where`` and ``select`` alone), over POINT or INTERVAL inputs through
operators that map each event on its own (``where``, ``select``, ``alter_duration``,
``alter_lifetime``, ``to_point``) and ``union`` (a partitioned input's partitions are one) needs
neither:

- every event a step accepts is final at once, both its start and its end (``_sq_closed`` and
  ``_sq_head`` hold for it: a late one was dropped or moved by the scan), and every event a later
  step accepts starts at or after this step's CTI ``c`` (the window's input CTI; after a union,
  the least of its sides' CTIs, and each side's later events start at or after its own);
- so every boundary of a group's snapshot intervals is stable, and the release rule releases
  exactly the intervals that end at or before ``c``: a prefix of the group's intervals;
- let ``P`` be the group's greatest endpoint (start or end of one of its events) at or before
  ``c``. The intervals a later step can still output or change are those after ``P``, and the
  events alive in them are exactly the group's events that end after ``c``. Each of those that
  starts before ``P`` is alive in all of ``[P, c]`` (no endpoint lies in between): clipped to
  start at ``P`` it makes the same intervals from ``P`` on, and none before it.

A ``where`` or ``select`` over the window's output (an alert on the averages, say) changes none of
this: it keeps or maps each output event by its payload alone and keeps its lifetime, so what it
outputs from ``P`` on is its image of the window's intervals from ``P`` on, each interval that a
later step computes again with the same start and payload gets the same verdict and the same
payload from it, and what the release rule releases of it is decided by the same lifetimes.

A step therefore carries, per group, the events that end after the CTI with their starts clipped
to the group's ``P`` (the *frontier*), sweeps those and the new events, releases what the release
rule releases and carries on the same way. Every aggregate is unchanged by the clip: an event
alive in an interval covers all of it. Released as intervals, each interval is released once,
when it ends at or before the CTI: nothing to take away. Released as points or as edges, an
interval's start is released once the CTI passes it, while the interval itself is still carried:
but every interval that starts before the run's greatest output CTI so far started there, with
its payload, in the step that passed it (no event accepted since starts before that CTI, so the
events alive then are final), so a step releases only the starts at or after it — and end edges,
of the intervals it releases, as it would anyway.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from streamql.events import EdgeKind, Shape
from streamql.query import joins, nodes, windows
from streamql.spark.base.columns import END, START
from streamql.spark.operators.release import EDGE_KIND

#: the name under which a step carries the frontier's events (``Carried.partials``)
FRONTIER = "frontier"


#: the operators a query may apply to the window's output and still run on the frontier: each
#: keeps or maps an output event by its payload alone, and keeps its lifetime
ON_THE_OUTPUT: tuple[type[nodes.Unary], ...] = (nodes.Where, nodes.Select)


def frontier_window(query: nodes.Node) -> windows.WindowAggregate | None:
    """The grouped snapshot window of ``query`` if the query can run on its carried frontier (see
    the module's text), else None: the window at the root of the query, or under ``where`` and
    ``select`` alone (``ON_THE_OUTPUT``). An EDGE input's events can stay open across steps; an
    ungrouped window sweeps ranges whose borders need the whole input."""
    while isinstance(query, ON_THE_OUTPUT):
        query = query.source
    if not isinstance(query, windows.WindowAggregate) or not isinstance(query.window, windows.SnapshotWindow):
        return None
    if query.key is None:
        return None
    return query if _final_events(query.source) else None


def _final_events(node: nodes.Node) -> bool:
    """Whether ``node``'s events are POINT or INTERVAL inputs' events through operators that map
    each event by itself and unions (a partitioned input's partitions, read live, are a union):
    final once accepted, and every later one starts at or after the CTI, the least over a union's
    sides (each side's later events start at or after its own)."""
    while isinstance(node, nodes.EACH_EVENT):
        node = node.source
    if isinstance(node, joins.Union):
        return all(_final_events(side) for side in node.sources)
    return isinstance(node, nodes.Input) and node.shape in (Shape.POINT, Shape.INTERVAL)


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


def released_from_frontier(releasable: DataFrame, shape: Shape, below: int | None) -> DataFrame:
    """Of what the release rule releases as ``shape`` (``release.release``) from a step's sweep of
    its frontier, what was not released before: every starting point or start edge before
    ``below`` (``RunState.released_below``, the greatest output CTI so far) was (see the module's
    text); intervals and end edges are released once anyway."""
    if below is None or shape is Shape.INTERVAL:
        return releasable
    new = F.col(START) >= F.lit(below)
    if shape is Shape.POINT:
        return releasable.filter(new)
    return releasable.filter((F.col(EDGE_KIND) != F.lit(EdgeKind.START.value)) | new)


__all__ = ["FRONTIER", "ON_THE_OUTPUT", "carried_frontier", "frontier_window", "released_from_frontier"]
