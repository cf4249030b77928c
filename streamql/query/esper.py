"""Esper-style lifetimes: length windows, time batches and length batches (docs/esper-windows.md;
Esper's "Processing Model").

Each node replaces its input events' lifetimes; with EDGE output their START edges are Esper's
insert stream and their END edges its remove stream. Wherever an order among events with equal
start times is needed, it is payload fields in order (nulls first), then end — never arrival.
"""
from __future__ import annotations

import attrs

from streamql.query.nodes import Unary
from streamql.time import INFINITY_MICROS, shift


@attrs.frozen(cache_hash=True)
class KeepLast(Unary):
    """Esper's ``#length(n)``: event ``i`` (in start-time order) lives ``[s_i, s_j)``, ``s_j`` the
    start of the ``n``-th event after it (``INFINITY`` until that event exists); an empty lifetime
    removes the event. The output CTI is the input CTI."""

    n: int

    def __attrs_post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError(f"keep_last needs a positive count, got {self.n}")

    @property
    def may_be_open(self) -> bool:
        return True


@attrs.frozen(cache_hash=True)
class TimeBatch(Unary):
    """Esper's ``#time_batch(size)``: an event starting in the batch ``[b, b + size)`` (epoch-aligned)
    lives ``[b + size, b + 2*size)``. The output CTI is the end of the batch holding the input CTI."""

    size: int

    def __attrs_post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError(f"time_batch needs a positive size, got {self.size} µs")

    def batch_start(self, t: int) -> int:
        return (t // self.size) * self.size

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        cti = input_ctis[0]
        if cti is None or cti == INFINITY_MICROS:
            return cti
        # the batch holding the CTI may still gain events: its output starts at its end
        return shift(self.batch_start(cti), self.size)

    @property
    def may_be_open(self) -> bool:
        return False


@attrs.frozen(cache_hash=True)
class LengthBatch(Unary):
    """Esper's ``#length_batch(n)``: events in start-time order form consecutive batches of ``n``;
    each event of a full batch lives from the last start of its batch to the last start of the next
    full batch (``INFINITY`` until that batch fills). Events of a batch that never fills are not
    output. The output CTI is the input CTI."""

    n: int

    def __attrs_post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError(f"length_batch needs a positive count, got {self.n}")

    @property
    def may_be_open(self) -> bool:
        return True
