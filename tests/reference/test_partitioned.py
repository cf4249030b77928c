"""Partitioned inputs in the reference evaluator (docs/partitioned-inputs.md): a hand-worked
example — two partitions written at different paces, where the fast one's CTIs do not drop the
slow one's events, the input's CTI is the least of the partitions', a quiet partition holds
release back and the flush releases — and a property test: a partitioned input releases what the
``union`` of one input per partition releases (counts and late records included). The reference
takes each partition's items as a list of its own, so there is no interleaving of partitions to
vary here: tests/spark/test_partitioned.py varies how they are interleaved in storage."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.errors import BindingError
from streamql.reference import PartitionedInput, ReferenceInput
from support.depth import examples
from support.partitions import as_union, partitioned, partitioned_items
from support.streams import P, advance_settings, build, pipelines
from streamql.time import from_micros

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EVERY_EVENT = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))
FLUSHED = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
x = sq.input("x", P, sq.Shape.POINT)


def p(v: int) -> P:
    return P(v, v, "a", None)


def pt(t: int) -> sq.Insert[P]:
    return sq.Insert(t, t + 1, p(t))


def starts(result: sq.Result[P]) -> list[int]:
    return [e.payload.k for e in result.events]


FAST = [pt(10), pt(20), pt(30)]
SLOW = [pt(5), pt(15)]


def test_a_fast_partition_does_not_drop_a_slow_ones_events() -> None:
    # one arrival order: the slow device's 5 and 15 come after the fast one's CTI 30
    together = sq.reference.run(x, {"x": ReferenceInput(FAST + SLOW, EVERY_EVENT)})
    assert together.dropped == 2 and starts(together) == [10, 20]
    # partitioned: each is checked against its own partition's CTI; the input's is the least (15)
    result = sq.reference.run(x, {"x": PartitionedInput({0: FAST, 1: SLOW}, EVERY_EVENT)})
    assert result.dropped == 0
    assert result.final_cti == from_micros(15)
    assert starts(result) == [5, 10]


def test_a_quiet_partition_holds_release_back_until_the_flush() -> None:
    quiet = sq.reference.run(x, {"x": PartitionedInput({0: FAST, 1: SLOW, 2: []}, EVERY_EVENT)})
    assert quiet.final_cti is None and quiet.events == []
    # a CTI row in the quiet partition lets the input's CTI move up to it
    punctuated = sq.reference.run(x, {"x": PartitionedInput({0: FAST, 1: SLOW, 2: [sq.Cti(12)]}, EVERY_EVENT)})
    assert punctuated.final_cti == from_micros(12) and starts(punctuated) == [5, 10]
    flushed = sq.reference.run(x, {"x": PartitionedInput({0: FAST, 1: SLOW, 2: []}, FLUSHED)})
    assert flushed.final_cti == sq.INFINITY and starts(flushed) == [5, 10, 15, 20, 30]


def test_a_late_record_carries_its_partition() -> None:
    result = sq.reference.run(x, {"x": PartitionedInput({0: FAST, 1: [pt(5), pt(3)]}, EVERY_EVENT)}, late=True)
    assert result.dropped == 1
    (record,) = result.late
    assert (record.input, record.partition, record.arrival, record.action) == ("x", 1, 1, "dropped")
    assert record.start == from_micros(3) and record.cti == from_micros(5)
    plain = sq.reference.run(x, {"x": ReferenceInput([pt(5), pt(3)], EVERY_EVENT)}, late=True)
    assert plain.late[0].partition is None


def test_partition_values_are_all_ints_or_all_strings() -> None:
    with pytest.raises(BindingError, match="all ints or all strings"):
        PartitionedInput({0: [], "a": []})
    with pytest.raises(BindingError, match="non-empty mapping"):
        PartitionedInput({})


def comparable(result: sq.Result[Any]) -> tuple[Any, ...]:
    late = sorted(((r.partition, r.arrival, r.action, r.kind, r.start, r.end, r.cti, r.new_start, r.new_end,
                    r.reason) for r in result.late), key=repr)
    return result.events, result.edges, result.dropped, result.adjusted, result.bad_rows, result.final_cti, late


def as_union_records(result: sq.Result[Any]) -> sq.Result[Any]:
    """A union's late records as the partitioned input's: input ``x<p>`` is partition ``p``."""
    import attrs
    return attrs.evolve(result, late=[attrs.evolve(r, input="x", partition=int(r.input[1:])) for r in result.late])


@settings(SETTINGS, max_examples=examples(60))
@given(shape=st.sampled_from(list(sq.Shape)), data=st.data(), settings_=advance_settings(), ops=pipelines(),
       output=st.sampled_from(list(sq.Shape)))
def test_partitioned_releases_what_the_union_of_its_partitions_releases(
        shape: sq.Shape, data: st.DataObject, settings_: sq.AdvanceTimeSettings | None,
        ops: list[tuple[str, Any]], output: sq.Shape) -> None:
    parts = data.draw(partitioned_items(shape, open_ends=True))
    source = sq.input("x", P, shape)
    union, given = as_union(lambda n: sq.input(n, P, shape), parts, settings_, "drop")
    mine = sq.reference.run(build(source, ops), {"x": partitioned(parts, settings_, "drop")}, output, late=True)
    theirs = sq.reference.run(build(union, ops), given, output, late=True)
    assert comparable(mine) == comparable(as_union_records(theirs))
