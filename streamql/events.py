"""Events as users see them: shapes, lifetimes with payloads, edges, results and input items."""
from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Generic, TypeVar, Union

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
class Result(Generic[T]):
    """What a run released, with the counts of what the violation policy and ``bad_rows`` did."""

    events: list[Event[T]]
    edges: list[Edge[T]]
    dropped: int
    adjusted: int
    bad_rows: int
    final_cti: datetime | None


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
