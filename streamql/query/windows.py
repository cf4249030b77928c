"""Window and grouping nodes: which events a window holds, what it outputs, and its CTI rule
(docs/windows.md, docs/grouping.md).

Times are microseconds. Hopping and tumbling windows are ``[k*hop, k*hop + size)`` for every
integer ``k`` (aligned to the Unix epoch); a tumbling window is a hopping window with
``hop == size``. Session windows are formed by the data: events whose lifetimes, each extended by
the gap, overlap.
"""
from __future__ import annotations

import attrs

from streamql.expr.nodes import Expr
from streamql.payload import PayloadSchema
from streamql.query.nodes import Node, Projected, Unary, struct_schema
from streamql.time import INFINITY_MICROS


@attrs.frozen(cache_hash=True)
class WindowSpec:
    """Which windows a window operator forms over its input."""

    def output_cti(self, cti: int | None) -> int | None:
        """The output CTI for input CTI ``cti`` when it does not depend on the data."""
        return cti

    @property
    def cti_depends_on_data(self) -> bool:
        return False


@attrs.frozen(cache_hash=True)
class SnapshotWindow(WindowSpec):
    """A window for every interval between consecutive event endpoints in which some event is alive."""

    def __str__(self) -> str:
        return "snapshot"


@attrs.frozen(cache_hash=True)
class HoppingWindow(WindowSpec):
    """Windows ``[k*hop, k*hop + size)``; tumbling windows have ``hop == size``."""

    size: int
    hop: int

    def __attrs_post_init__(self) -> None:
        if self.size <= 0 or self.hop <= 0:
            raise ValueError(f"hopping windows need a positive size and hop, got {self.size} and {self.hop} µs")

    def __str__(self) -> str:
        return f"tumbling({self.size}µs)" if self.size == self.hop else f"hopping({self.size}µs, {self.hop}µs)"

    def first_window_ending_after(self, t: int) -> int:
        """The index ``k`` of the earliest window whose end is after ``t``."""
        return (t - self.size) // self.hop + 1

    def output_cti(self, cti: int | None) -> int | None:
        # the start of the earliest window the CTI has not yet reached the end of, or the CTI if earlier
        if cti is None or cti == INFINITY_MICROS:
            return cti
        return min(cti, self.first_window_ending_after(cti) * self.hop)


@attrs.frozen(cache_hash=True)
class CountWindow(WindowSpec):
    """Windows over ``n`` consecutive distinct start times, sliding by one start time."""

    n: int

    def __attrs_post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError(f"count windows need a positive count, got {self.n}")

    def __str__(self) -> str:
        return f"count({self.n})"

    @property
    def cti_depends_on_data(self) -> bool:
        # the earliest window that is not yet stable starts at a start time of the data
        return True


@attrs.frozen(cache_hash=True)
class SessionWindow(WindowSpec):
    """Sessions: each event's lifetime ``[s, e)`` extended to ``[s, e + gap)``; a session is a maximal
    set of events whose extended lifetimes overlap (touching ones do not merge), with the lifetime
    ``[first start, greatest e + gap)``. With ``max_duration`` a session is cut into consecutive
    pieces of ``max_duration`` from its first start, each a window of the events starting in it,
    with the piece's lifetime (the last piece's end clipped to the session's end)."""

    gap: int
    max_duration: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.gap <= 0:
            raise ValueError(f"session windows need a positive gap, got {self.gap} µs")
        if self.max_duration is not None and self.max_duration <= 0:
            raise ValueError(f"session windows need a positive max_duration, got {self.max_duration} µs")

    def __str__(self) -> str:
        if self.max_duration is None:
            return f"session({self.gap}µs)"
        return f"session({self.gap}µs, max {self.max_duration}µs)"

    @property
    def cti_depends_on_data(self) -> bool:
        # the earliest session that is not yet stable starts at a start time of the data
        return True


@attrs.frozen(cache_hash=True)
class WindowOperator(Unary):
    """What every operator over windows shares: the windows it forms over its input (per group
    of ``key`` when given), their lifetimes and stability, and so its CTI rule. Its subclasses say
    what each window outputs."""

    window: WindowSpec
    key: Expr | None

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        if self.window.cti_depends_on_data:
            raise ValueError(f"the CTI of a {self.window} window depends on its input events")
        return self.window.output_cti(input_ctis[0])

    @property
    def cti_depends_on_data(self) -> bool:
        return self.window.cti_depends_on_data or self.source.cti_depends_on_data

    @property
    def may_be_open(self) -> bool:
        # a snapshot interval ends where an input event ends; a session where an extended one does (and
        # the gap can carry a late finite end to INFINITY); other windows end with the window
        if isinstance(self.window, SessionWindow):
            return True
        return isinstance(self.window, SnapshotWindow) and self.source.may_be_open


@attrs.frozen(cache_hash=True)
class WindowAggregate(Projected, WindowOperator):
    """A window operator with its ``select``: one output event per non-empty window (per group
    when ``key`` is given), its payload ``projection`` built from ``Aggregate`` leaves and,
    for grouped windows, the ``GroupKey``."""

    projection: Expr


@attrs.frozen(cache_hash=True)
class TopK(Projected, WindowOperator):
    """Top-k per window (docs/top-k.md): in every window (per group when ``key`` is given) the
    events are ranked by ``by`` (an expression of the event, ``Param`` 0), largest first unless
    not ``descending``; nulls rank after every value in both directions. An event's rank is one
    more than the number of the window's events that rank strictly before it (SQL ``RANK``), and
    each event of rank at most ``k`` gives an output event with the window's lifetime and the
    payload ``projection`` (of the event, ``Param`` 0, and its ``Rank``)."""

    k: int
    by: Expr
    descending: bool
    projection: Expr

    def __attrs_post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"top_k needs k of at least 1, got {self.k}")


@attrs.frozen(cache_hash=True)
class GroupSource(Node):
    """The stream of one group inside ``group_apply``'s sub-query; ``open_ends`` is whether the
    grouped stream may hold events that never end."""

    payload: PayloadSchema
    open_ends: bool

    @property
    def schema(self) -> PayloadSchema:
        return self.payload

    @property
    def may_be_open(self) -> bool:
        return self.open_ends


@attrs.frozen(cache_hash=True)
class GroupApply(Unary):
    """Runs the sub-query ``apply`` (whose leaf is a ``GroupSource``) on the events of every group of
    ``key`` and maps each output payload through ``result`` (``GroupKey`` and ``Param`` 0)."""

    key: Expr
    apply: Node
    result: Expr

    @property
    def schema(self) -> PayloadSchema:
        return struct_schema(self.result)

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        # every group sees the same CTIs, so the sub-query's rule applies to the input CTI
        return _static_cti(self.apply, input_ctis[0])

    @property
    def cti_depends_on_data(self) -> bool:
        return self.apply.cti_depends_on_data or self.source.cti_depends_on_data

    @property
    def may_be_open(self) -> bool:
        return self.apply.may_be_open


def _static_cti(node: Node, group_cti: int | None) -> int | None:
    if isinstance(node, GroupSource):
        return group_cti
    return node.output_cti(tuple(_static_cti(s, group_cti) for s in node.sources))

