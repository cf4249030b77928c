"""The internal column names of the Spark plans: an input row in arrival order (``_sq_seq``,
``_sq_kind``, ``_sq_bad``, ``_sq_arrival``) and an event's lifetime and stability (``_sq_start``,
``_sq_end``, ``_sq_closed``, ``_sq_head``, ``_sq_floor``), shared by the ingress and every operator."""
from __future__ import annotations

SEQ, KIND, START, END, BAD, CLOSED, ARRIVAL = (
    "_sq_seq", "_sq_kind", "_sq_start", "_sq_end", "_sq_bad", "_sq_closed", "_sq_arrival")
#: whether an event's start and payload are stable (always, for accepted input events)
HEAD = "_sq_head"
#: an end that is not stable will be at or after this time (a nullable long; null: the stream's
#: CTI bounds it) — ``streamql.reference.operators.Ev.end_floor``
FLOOR = "_sq_floor"
#: what the arrival-order scan decided for a late row (``arrival_scan.DROP``, ``ADJUST_START``,
#: ``ADJUST_END``; null: accepted unchanged) and the time it moved a start or end to
ACTION, MOVED_TO = "_sq_action", "_sq_moved_to"
#: a row's arrival as its late record shows it (``streamql.spark.ingress.late.arrival_of``), carried by
#: the edge rows of an EDGE input until they are matched
LATE_ARRIVAL = "_sq_l_arrival"
#: a partitioned input's partition value, as its rows and late records carry it
PARTITION = "_sq_partition"

__all__ = ["ACTION", "ARRIVAL", "BAD", "CLOSED", "END", "FLOOR", "HEAD", "KIND", "LATE_ARRIVAL", "MOVED_TO",
           "PARTITION", "SEQ", "START"]
