"""Events as users see them: shapes, lifetimes with payloads, edges, results and input items."""
from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Generic, TypeVar, Union

import attrs

from streamql.time import TimeLike

T = TypeVar("T")


class Shape(Enum):
    """The temporal shape of an input or of a query's output."""

    POINT = "POINT"
    INTERVAL = "INTERVAL"
    EDGE = "EDGE"


class EdgeKind(Enum):
    START = "START"
    END = "END"


@attrs.frozen
class Event(Generic[T]):
    """A payload valid over ``[start, end)``; ``end`` is ``sq.INFINITY`` while the event is open."""

    start: datetime
    end: datetime
    payload: T


@attrs.frozen
class Edge(Generic[T]):
    """One edge of an event in EDGE output: a START edge at ``start``, an END edge at ``end``."""

    kind: EdgeKind
    time: datetime
    start: datetime
    payload: T


@attrs.frozen
class Late:
    """An input item the violation policy dropped or moved, or a bad row ``bad_rows="drop"`` dropped.

    One record per counted item: ``Result.dropped``, ``adjusted`` and ``bad_rows`` equal the
    numbers of records with those actions. An edge event has at most one record, for the last of
    its edges the policy acted on (an end edge's record shows an adjusted start in ``new_start``);
    an adjustment that leaves nothing of an event is one ``"dropped"`` record. See
    docs/late-events.md.
    """

    input: str  #: the input's name
    arrival: int | None  #: its arrival value (reference: list position; Spark: the arrival column, else the row's position)
    action: str  #: ``"dropped"``, ``"adjusted"`` or ``"bad_row"``
    kind: str  #: the input item: ``"INSERT"``, ``"START"`` or ``"END"``
    start: datetime | None  #: as it arrived
    end: datetime | None  #: as it arrived (None for a start edge)
    cti: datetime | None  #: the CTI it violated (None for a bad row)
    new_start: datetime | None  #: after ADJUST (None otherwise)
    new_end: datetime | None  #: after ADJUST (None otherwise, and for a start edge: its end is not known)
    payload: Any  #: the input's payload instance (None for a bad row without one)
    reason: str | None  #: why a bad row is bad
    #: the partition of a partitioned input the item came from (``bind(..., partition=)``; for a row
    #: whose partition value is not declared, that value); None for an input without partitions
    partition: int | str | None = None


def late_order(record: Late) -> tuple[str, tuple[int, int, str], int]:
    """``Result.late``'s order: by input, then partition (ints before strings), then arrival."""
    p = record.partition
    partition = (0, 0, "") if p is None else (1, p, "") if isinstance(p, int) else (2, 0, str(p))
    return record.input, partition, -1 if record.arrival is None else record.arrival


@attrs.frozen
class Result(Generic[T]):
    """What a run released, with the counts of what the violation policy and ``bad_rows`` did,
    and (``run(..., late=True)``) the records of those items."""

    events: list[Event[T]]
    edges: list[Edge[T]]
    dropped: int
    adjusted: int
    bad_rows: int
    final_cti: datetime | None
    late: list[Late] = attrs.field(factory=list)


# --- input items for the reference evaluator (arrival order = list order) ---------------


@attrs.frozen
class Insert(Generic[T]):
    """A point or interval event ``[start, end)``."""

    start: TimeLike
    end: TimeLike
    payload: T


@attrs.frozen
class StartEdge(Generic[T]):
    """The start edge of an edge event: the event is open until its end edge arrives."""

    start: TimeLike
    payload: T


@attrs.frozen
class EndEdge(Generic[T]):
    """The end edge closing the start edge with the same ``start`` and ``payload``."""

    start: TimeLike
    end: TimeLike
    payload: T


@attrs.frozen
class Cti:
    """A CTI at ``time``: no later event of this input starts before ``time``."""

    time: TimeLike


InputItem = Union[Insert[T], StartEdge[T], EndEdge[T], Cti]
