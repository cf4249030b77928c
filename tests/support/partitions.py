"""Partitioned inputs for the property tests (docs/partitioned-inputs.md): the items of each
declared partition in its own arrival order, the same as one input per partition, and how the
partitions' rows can be interleaved in storage."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from hypothesis import strategies as st

import streamql as sq
from streamql.reference import PartitionedInput, ReferenceInput
from support.streams import P, edge_items, inputs


@st.composite
def partitioned_items(draw: st.DrawFn, shape: sq.Shape, open_ends: bool = False) -> dict[int, list[Any]]:
    """One to three declared partitions (0, 1, 2), each with its own items in arrival order (any
    of them may be empty: a quiet partition)."""
    count = draw(st.integers(1, 3))
    if shape is sq.Shape.EDGE:
        return {p: draw(edge_items()) for p in range(count)}
    return {p: draw(inputs(shape, open_ends)) for p in range(count)}


@st.composite
def interleavings(draw: st.DrawFn, parts: Mapping[int, Sequence[Any]]) -> list[tuple[int, int, Any]]:
    """Every partition's items as (partition, position in it, item), interleaved at random: each
    partition's items stay in their order."""
    left = {p: list(enumerate(items)) for p, items in parts.items() if items}
    out: list[tuple[int, int, Any]] = []
    while left:
        p = draw(st.sampled_from(sorted(left)))
        position, item = left[p].pop(0)
        out.append((p, position, item))
        if not left[p]:
            del left[p]
    return out


def as_union(source: Callable[[str], sq.Stream[P]], parts: Mapping[int, Sequence[Any]],
             settings: sq.AdvanceTimeSettings | None, bad_rows: str = "error"
             ) -> tuple[sq.Stream[P], dict[str, ReferenceInput[Any]]]:
    """The union of one input per partition (``x<p>``), each with ``settings``, and their inputs."""
    names = [f"x{p}" for p in parts]
    streams = [source(n) for n in names]
    union = streams[0].union(*streams[1:])
    return union, {f"x{p}": ReferenceInput(items, settings, bad_rows)  # type: ignore[arg-type]
                   for p, items in parts.items()}


def partitioned(parts: Mapping[int, Sequence[Any]], settings: sq.AdvanceTimeSettings | None,
                bad_rows: str = "error") -> PartitionedInput[Any]:
    return PartitionedInput(dict(parts), settings, bad_rows)  # type: ignore[arg-type]
