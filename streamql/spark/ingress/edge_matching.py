"""EDGE inputs on Spark: every end edge matched to its start edge, as the reference ingress does
it (``streamql.reference.inputs``), with window functions instead of a loop over arrivals.

The reference keeps, per key (original start, payload), a queue of open start edges (accepted,
in arrival order) and a count of start edges the violation policy dropped. An end edge closes
the earliest open one — unless it is late under DROP: then it is ignored, as if it never
arrived (decision 6), and the start edge stays open; with none open it takes a dropped one and
goes with it silently; with neither it is bad input (and changes nothing). Both are queues with
unit steps, so per key, in arrival order, with ``opened``/``ended``/``dropped`` the running
counts of accepted start edges, end edges that are not late under DROP, and dropped start edges:

- the end edges that found nothing open so far number ``max(0, -min(opened - ended))`` (the
  running minimum: a reflected walk), so an end edge closes a start edge exactly when that
  number does not grow at it, and then it closes the ``ended - unmatched``-th accepted one;
- the open start edges at a row number ``opened - ended + unmatched`` (the reflected walk's
  value): a late DROP end edge that finds one or more is ignored (counted as dropped), one that
  finds none joins the end edges that found nothing open;
- of those, the ones that found no dropped start edge either number
  ``max(0, -min(dropped - unmatched))``: the bad ones are where that grows.

Whether a start edge was dropped or moved, and whether an end edge was late, the arrival-order
scan decided already (``_sq_action``/``_sq_moved_to``): neither depends on the matching, since
end edges never move the CTI. What is left is windows over the key (one shuffle by key, no
single partition; the later ones reuse its partitioning), a window over (key, pair index) that
the first one's partitioning already satisfies, and one aggregate for the counts.
"""
from __future__ import annotations

from typing import Sequence

import attrs
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from streamql.spark.base.deferred import Deferred
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.base.columns import ACTION, CLOSED, END, HEAD, KIND, LATE_ARRIVAL, MOVED_TO, SEQ, START
from streamql.time import INFINITY_MICROS

_OPENS, _DROPPED_START, _ENDS = "_sq_opens", "_sq_dropped_start", "_sq_ends"
_CLOSES, _UNMATCHED, _PAIR = "_sq_closes", "_sq_unmatched", "_sq_pair"
_FINAL_START, _FINAL_END, _CLOSED_BY_EDGE = "_sq_final_start", "_sq_final_end", "_sq_closed_by_edge"
_EMPTIED, _MOVED, _IGNORED_END = "_sq_emptied", "_sq_moved", "_sq_ignored_end"
_FOUND_NONE, _FOUND_NONE_SO_FAR = "_sq_found_none", "_sq_found_none_so_far"


@attrs.frozen
class MatchedEdges:
    """The events of an EDGE input and what the matching counted."""

    events: DataFrame = attrs.field(eq=False)  # _sq_start, _sq_end, _sq_closed, _sq_head, payload fields
    dropped: int  # start edges dropped, end edges ignored, lifetimes emptied by ADJUST
    adjusted: int  # events (kept) whose start or end ADJUST moved
    unmatched: int  # end edges with neither an open nor a dropped start edge: bad input
    first_unmatched: int  # the _sq_seq of the first of them, or -1
    persisted: DataFrame = attrs.field(eq=False)
    #: what a streaming run needs besides (``decided``, ``still_open``, ``pending``), made when
    #: asked for: a batch run asks for none of them, and each is driver work (every DataFrame
    #: operation is analysed over the matching's whole plan)
    _decided: Deferred = attrs.field(eq=False, repr=False)
    _still_open: Deferred = attrs.field(eq=False, repr=False)
    _pending: Deferred = attrs.field(eq=False, repr=False)

    @property
    def decided(self) -> DataFrame:
        """Of ``events``, those whose end edge came."""
        return self._decided.frame

    @property
    def still_open(self) -> DataFrame:
        """Of ``events``, those still open."""
        return self._still_open.frame

    @property
    def pending(self) -> DataFrame:
        """The edge rows a streaming run carries on: open start edges (an ignored end edge leaves
        its start edge open), and the dropped ones that an end edge may still take (as many as are
        left per key)."""
        return self._pending.frame


def _reflected(walk: Column, window: WindowSpec) -> tuple[Column, Column]:
    """``max(0, -min(walk))`` up to and including this row, and up to the row before it."""
    through = F.greatest(F.lit(0), -F.min(walk).over(window.rowsBetween(Window.unboundedPreceding, 0)))
    before = F.greatest(F.lit(0), -F.coalesce(F.min(walk).over(window.rowsBetween(Window.unboundedPreceding, -1)),
                                              F.lit(0)))
    return through, before


def match_end_edges(rows: DataFrame, payload: Sequence[str], cti: int | None,
                    order: Sequence[str] = (SEQ,), new: Column | None = None,
                    count_open: bool = True) -> MatchedEdges:
    """``rows``: the input's good start and end edges (``_sq_kind``, ``_sq_seq``, ``_sq_start``,
    ``_sq_end``, the scan's ``_sq_action``/``_sq_moved_to``, the payload fields) in arrival order
    ``order``. ``cti``: the input's CTI after these rows (a batch run's final CTI). At INFINITY no
    end edge can come, so open events are stable as they are; below it, a start edge that ADJUST
    moved to the CTI c is not stable at all while it is open and the CTI is c (an end edge at c
    would still empty it; docs/ctis-and-release.md#stability-and-the-release-rule).

    A streaming run matches the start edges it carries with a micro-batch's new rows (``new``:
    which rows are new, for the counts of dropped start edges and ignored end edges) and counts
    an open event (moved, emptied) only in its final step (``count_open``); a batch run
    counts every event."""
    forever = cti == INFINITY_MICROS
    d = decide(rows, payload, order).persist(StorageLevel.MEMORY_AND_DISK)
    opened, emptied = F.col(_OPENS), F.col(_EMPTIED)
    has_end = F.col("_sq_end_edge").isNotNull()
    decided, still_open = opened & has_end, opened & ~has_end
    settled = opened if count_open else decided
    moved = F.coalesce(F.col(_MOVED), F.lit(False))
    dropped_start = F.col(_DROPPED_START) if new is None else F.col(_DROPPED_START) & new
    # an ignored end edge counts when it arrives (it decides nothing about its event)
    ignored_end = F.col(_IGNORED_END) if new is None else F.col(_IGNORED_END) & new

    def count(condition: Column) -> Column:
        return F.coalesce(F.sum(condition.cast("long")), F.lit(0))

    # one row of counts per partition comes to the driver (a global aggregate would gather them
    # in a single partition first)
    counts = d.groupBy(F.spark_partition_id()).agg(
        (count(dropped_start) + count(ignored_end) + count(settled & emptied)).alias("dropped"),
        count(settled & ~emptied & moved).alias("adjusted"),
        count(F.col("_sq_bad_end")).alias("unmatched"),
        F.min(F.when(F.col("_sq_bad_end"), F.col(SEQ))).alias("first_unmatched"),
    ).collect()
    unmatched_seqs = [r["first_unmatched"] for r in counts if r["first_unmatched"] is not None]

    closed = F.col(_CLOSED_BY_EDGE) | F.lit(forever)
    # an open start edge that ADJUST moved to the CTI c: an end edge at c would empty it, so neither
    # its start nor its payload is stable until the CTI passes c
    passed = F.col(_FINAL_START) < F.lit(cti) if cti is not None else F.lit(False)
    head = closed | ~F.coalesce(F.col(ACTION) == scan.ADJUST_START, F.lit(False)) | passed

    def events(condition: Column) -> DataFrame:
        return d.filter(condition & ~emptied).select(
            F.col(_FINAL_START).alias(START), F.col(_FINAL_END).alias(END),
            closed.alias(CLOSED), head.alias(HEAD), *payload)

    def pending() -> DataFrame:
        # dropped start edges that no end edge took yet: as many as are left per key (any of them)
        key = Window.partitionBy(START, *payload)
        left = (F.sum(F.col(_DROPPED_START).cast("long")).over(key)
                - (F.max(_FOUND_NONE_SO_FAR).over(key) - F.sum(F.col("_sq_bad_end").cast("long")).over(key)))
        rank = F.row_number().over(Window.partitionBy(START, *payload, _DROPPED_START)
                                   .orderBy(*[F.col(c).desc() for c in order]))
        columns = [*rows.columns]
        return (d.select(*columns, _OPENS, "_sq_end_edge", _DROPPED_START, left.alias("_sq_left"),
                         rank.alias("_sq_rank"))
                .filter(still_open | (F.col(_DROPPED_START) & (F.col("_sq_rank") <= F.col("_sq_left"))))
                .select(*columns))

    return MatchedEdges(events(opened), sum(r["dropped"] for r in counts), sum(r["adjusted"] for r in counts),
                        sum(r["unmatched"] for r in counts), min(unmatched_seqs, default=-1), d,
                        Deferred(lambda: events(decided)), Deferred(lambda: events(still_open)), Deferred(pending))


def decide(rows: DataFrame, payload: Sequence[str], order: Sequence[str]) -> DataFrame:
    """Every edge row with what the matching decided: ``_sq_opens`` (an accepted start edge),
    ``_sq_dropped_start``, ``_sq_ignored_end`` (a late end edge that DROP ignores: it found an
    open start edge and leaves it open), ``_sq_bad_end`` (an end edge with nothing to close or
    take), ``_sq_end_edge`` (the end edge that closed a start edge, null while open),
    ``_sq_final_start``/``_sq_final_end``, ``_sq_closed_by_edge``, ``_sq_moved``, ``_sq_emptied``.
    ``order``: the columns giving arrival order."""
    action = F.col(ACTION)
    is_end = F.col(KIND) == scan.END_EDGE
    late_dropped_end = is_end & F.coalesce(action == scan.DROP, F.lit(False))
    closing_end = is_end & ~late_dropped_end
    dropped_start = ~is_end & F.coalesce(action == scan.DROP, F.lit(False))
    opens = ~is_end & ~dropped_start
    # the null-safe key: window partitions group nulls (and normalise -0.0 and NaN) like GROUP BY
    key = Window.partitionBy(START, *payload).orderBy(*order)
    running = key.rowsBetween(Window.unboundedPreceding, 0)
    counted = rows.select(
        "*", opens.alias(_OPENS), dropped_start.alias(_DROPPED_START), is_end.alias(_ENDS),
        late_dropped_end.alias("_sq_late_dropped_end"),
        F.sum(opens.cast("long")).over(running).alias("_sq_opened"),
        F.sum(dropped_start.cast("long")).over(running).alias("_sq_dropped"),
        # late end edges under DROP close nothing: they are no step of the open queue
        F.sum(closing_end.cast("long")).over(running).alias("_sq_ended"))
    unmatched, unmatched_before = _reflected(F.col("_sq_opened") - F.col("_sq_ended"), key)
    walked = counted.select("*", unmatched.alias(_UNMATCHED), unmatched_before.alias("_sq_unmatched_before"))
    closes = F.col(_ENDS) & ~F.col("_sq_late_dropped_end") & (F.col(_UNMATCHED) == F.col("_sq_unmatched_before"))
    # the reflected walk's value: the start edges open after this row (a late end edge changes nothing)
    open_now = F.col("_sq_opened") - F.col("_sq_ended") + F.col(_UNMATCHED)
    ignored = F.col("_sq_late_dropped_end") & (open_now > 0)
    found_none = walked.select(
        "*", closes.alias(_CLOSES), ignored.alias(_IGNORED_END),
        # an end edge that found no open start edge: it takes a dropped one, else it is bad
        (F.col(_ENDS) & ~closes & ~ignored).alias(_FOUND_NONE))
    taken = found_none.select(
        "*", F.sum(F.col(_FOUND_NONE).cast("long")).over(running).alias(_FOUND_NONE_SO_FAR))
    bad, bad_before = _reflected(F.col("_sq_dropped") - F.col(_FOUND_NONE_SO_FAR), key)
    classified = taken.select(
        "*", (F.col(_FOUND_NONE) & (bad != bad_before)).alias("_sq_bad_end"),
        # the k-th start edge accepted under a key is closed by the k-th end edge that closes one
        F.when(F.col(_OPENS), F.col("_sq_opened"))
         .when(F.col(_CLOSES), F.col("_sq_ended") - F.col(_UNMATCHED)).alias(_PAIR))
    pair = Window.partitionBy(START, *payload, _PAIR)
    # (with the end edge's arrival as its late record shows it, where the rows carry it)
    end_edge = F.max(F.when(F.col(_CLOSES), F.struct(
        F.col(END).alias("end"), F.col(ACTION).alias("action"), F.col(MOVED_TO).alias("moved_to"),
        *[F.col(c).alias(f"order{i}") for i, c in enumerate(order)],
        *([F.col(LATE_ARRIVAL)] if LATE_ARRIVAL in rows.columns else [])))).over(pair)
    paired = classified.withColumn("_sq_end_edge", end_edge)
    start = F.when(action == scan.ADJUST_START, F.col(MOVED_TO)).otherwise(F.col(START))
    end_action = F.col("_sq_end_edge.action")
    closed_by_edge = F.col("_sq_end_edge").isNotNull()
    end = (F.when(~closed_by_edge, F.lit(INFINITY_MICROS))
           .when(end_action == scan.ADJUST_END, F.col("_sq_end_edge.moved_to"))
           .otherwise(F.col("_sq_end_edge.end")))
    decided = paired.select(
        "*", start.alias(_FINAL_START), end.alias(_FINAL_END), closed_by_edge.alias(_CLOSED_BY_EDGE),
        ((action == scan.ADJUST_START) | F.coalesce(end_action == scan.ADJUST_END, F.lit(False))).alias(_MOVED),
    ).withColumn(_EMPTIED, F.col(_FINAL_END) <= F.col(_FINAL_START))
    return decided


__all__ = ["MatchedEdges", "decide", "match_end_edges"]
