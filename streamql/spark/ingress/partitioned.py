"""A partitioned input (``bind(..., partition=, partitions=)``, docs/partitioned-inputs.md) as the
union of one input per declared partition, each bound with the input's settings: the binding is
expanded into internal bindings — one per declared partition (the rows with its value; arrival
order within it from ``arrival``, else storage order) and one of the rows whose value is not
declared (all bad rows) — each scanned as an input of its own, and their scans combined: the
events of all, the least of the declared partitions' CTIs, the counts and late records of all.

No work crosses partitions before the input's CTI does: each partition's CTI generation, violation
check and edge matching see only its own rows; only the union of their accepted events, with the
least CTI, meets the operators. The first summary passes of all the partitions (and the query's
other inputs) run in one Spark job (``scan.first_passes``).
"""
from __future__ import annotations

from functools import reduce
from typing import Mapping, Sequence

import attrs
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from streamql.query.joins import Union, greatest_finite_cti, least_cti
from streamql.query.nodes import Input, Node
from streamql.spark.ingress.binding import UNDECLARED, Binding
from streamql.spark.base.deferred import Deferred
from streamql.spark.ingress.late import with_partition
from streamql.spark.ingress.scan import Ingress

#: between an input's name and a partition's number in the keys of internal bindings (a NUL: no
#: input name of a user's has one in practice)
_SEPARATOR = "\x00"


def part_key(name: str, part: int) -> str:
    """The key of one internal binding of partitioned input ``name``."""
    return f"{name}{_SEPARATOR}{part}"


def part_rows(part: Binding, rows: DataFrame) -> DataFrame:
    """The rows of ``rows`` (the partitioned input's) that belong to internal binding ``part``."""
    assert part.partition is not None and part.partitions is not None
    column = F.col(part.partition)
    if part.part == UNDECLARED:
        declared = column.isin(list(part.partitions))
        return rows.filter(column.isNull() | ~F.coalesce(declared, F.lit(False)))
    return rows.filter(column == F.lit(part.part_value))


def parts_of(b: Binding) -> dict[str, Binding]:
    """The internal bindings of a partitioned binding ``b`` by key: one per declared partition, in
    declaration order, then the one of the undeclared rows."""
    assert b.partitions is not None
    parts = {}
    for i in [*range(len(b.partitions)), UNDECLARED]:
        part = attrs.evolve(b, part=i)
        parts[part_key(b.name, i)] = attrs.evolve(part, source=part_rows(part, b.source))
    return parts


def declared_keys(b: Binding) -> list[str]:
    """The keys of the internal bindings of ``b``'s declared partitions."""
    assert b.partitions is not None
    return [part_key(b.name, i) for i in range(len(b.partitions))]


def with_parts(node: Node, bindings: Mapping[str, Binding]) -> Node:
    """``node`` with every input bound as a partitioned input read as the ``union`` of its declared
    partitions' internal inputs (a live run's plan: each partition is an input of its own there)."""
    if isinstance(node, Input):
        b = bindings.get(node.name)
        if b is None or not b.partitioned:
            return node
        parts = tuple(Input(key, node.payload, node.shape) for key in declared_keys(b))
        return parts[0] if len(parts) == 1 else Union(parts)
    changes: dict[str, Node | tuple[Node, ...]] = {}
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name)
        if isinstance(value, Node):
            changes[field.name] = with_parts(value, bindings)
        elif isinstance(value, tuple) and value and all(isinstance(v, Node) for v in value):
            changes[field.name] = tuple(with_parts(v, bindings) for v in value)
    changed = {k: v for k, v in changes.items() if v is not getattr(node, k)}
    return attrs.evolve(node, **changed) if changed else node


def user_name(key: str) -> str:
    """The user's input name of an internal binding's key (a name without partitions as it is)."""
    return key.split(_SEPARATOR, 1)[0]


def expanded(bindings: Mapping[str, Binding], order: Sequence[str]) -> dict[str, Binding]:
    """The inputs ``order`` as their scans read them: an input without partitions under its name,
    a partitioned one as its internal bindings (``parts_of``), in that order."""
    out: dict[str, Binding] = {}
    for name in order:
        b = bindings[name]
        out.update(parts_of(b) if b.partitioned else {name: b})
    return out


def combined(b: Binding, parts: Mapping[str, Ingress], bindings: Mapping[str, Binding]) -> Ingress:
    """The scan of partitioned input ``b`` from its partitions' (``parts``, by key; ``bindings``
    holds their internal bindings): the events of all, the least of the declared partitions'
    CTIs (the union's greatest finite CTI and arrival at INFINITY), the counts of all, the late
    records of each with its partition."""
    declared = [(bindings[k], i) for k, i in parts.items() if bindings[k].part != UNDECLARED]
    ctis = tuple(i.final_cti for _, i in declared)
    finite, reached = greatest_finite_cti(ctis, tuple(i.finite_cti for _, i in declared),
                                          tuple(i.reached for _, i in declared))
    dtype = b.source.schema[b.partition or ""].dataType
    lates = [(bindings[key].part_value, i.late) for key, i in parts.items() if i.late is not None]

    def late_records() -> DataFrame:
        frames = [with_partition(records.frame, F.lit(value).cast(dtype)) for value, records in lates]
        return reduce(lambda left, right: left.unionByName(right, allowMissingColumns=True), frames)

    late = Deferred(late_records) if len(lates) == len(parts) else None
    events = declared[0][1].events
    for _, i in declared[1:]:
        events = events.unionByName(i.events)
    sketched = [i.starts for _, i in declared if i.starts is not None]
    ranges = [i.arrival_range for i in parts.values() if i.arrival_range is not None]
    return Ingress(
        events=events, final_cti=least_cti(ctis), finite_cti=finite,
        dropped=sum(i.dropped for i in parts.values()), adjusted=sum(i.adjusted for i in parts.values()),
        bad_rows=sum(i.bad_rows for i in parts.values()), cti_steps=None,
        persisted=[df for i in parts.values() for df in i.persisted], rows=sum(i.rows for i in parts.values()),
        late=late, reached=reached,
        starts=tuple(u for s in sketched for u in s) if len(sketched) == len(declared) else None,
        arrival_range=(min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None)


__all__ = ["combined", "declared_keys", "expanded", "part_key", "part_rows", "parts_of", "user_name", "with_parts"]
