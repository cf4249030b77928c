"""Bound DataFrames back to plain input items, so that the reference evaluator can replay a Spark
run over small data (``sq.plot.timeline`` from a ``Binder``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from streamql.errors import BindingError
from streamql.events import Cti, EndEdge, InputItem, Insert, Shape, StartEdge
from streamql.query.nodes import inputs_of
from streamql.query.stream import Stream
from streamql.reference.inputs import ReferenceInput
from streamql.spark.ingress.binding import Binding, micros
from streamql.spark.ingress.imports import scan_order
from streamql.spark.base.schema import collectable, column_for_field, payload_from_row

if TYPE_CHECKING:
    from streamql.binder import Binder


#: a time the row lacks: the reference evaluator counts the row as bad, as the scan does
_MISSING: Any = None


def reference_inputs(binder: Binder, q: Stream[Any], max_events: int) -> dict[str, ReferenceInput[Any]]:
    """The rows of every input ``q`` reads (and of the inputs they import CTIs from) as reference
    items in arrival order. Rows are counted first: more than ``max_events`` in all is an error."""
    bindings = binder.bindings
    read = set(inputs_of(q.node))
    missing = sorted(read - set(bindings))
    if missing:
        raise BindingError(f"the query reads inputs that are not bound: {', '.join(missing)}")
    names = scan_order(bindings, read)  # with the inputs they import CTIs from
    for name in names:
        b = bindings[name]
        if b.source.isStreaming:
            raise BindingError(f"input {name!r} is bound to a streaming DataFrame: a timeline replays a batch run")
        if b.partition is not None:
            raise BindingError(f"input {name!r} is a partitioned input (partition={b.partition!r}): a timeline "
                               "draws one arrival order per input")
        settings = b.advance_time
        if settings is not None and settings.import_ is not None and b.arrival is not None \
                and bindings[settings.import_.from_input].arrival is not None:
            raise BindingError(f"input {name!r} imports the CTIs of {settings.import_.from_input!r} on one arrival "
                               "clock (both have arrival columns), which the timeline cannot replay position by "
                               "position: draw it from sq.reference inputs instead")
    counts = {name: bindings[name].source.count() for name in names}
    if sum(counts.values()) > max_events:
        shown = ", ".join(f"{name!r} has {n:,}" for name, n in sorted(counts.items()))
        raise BindingError(f"the timeline collects its inputs to the driver: {shown} rows, more than "
                           f"max_events={max_events:,}; filter the DataFrames to a sample or raise max_events")
    return {name: ReferenceInput(_items(bindings[name]), bindings[name].advance_time, bindings[name].bad_rows)
            for name in sorted(names)}


def _items(b: Binding) -> list[InputItem[Any]]:
    schema = b.node.schema
    types = {f.name: f.dataType for f in b.source.schema.fields}
    payload = [collectable(column_for_field(F.col(f.name), types[f.name], f.type, f.name), f.type)
               for f in schema.fields]
    kind = F.upper(F.col(b.kind)) if b.kind is not None else F.lit("INSERT")
    edge = F.upper(F.col(b.edge)) if b.edge is not None else F.lit(None).cast("string")
    arrival = F.col(b.arrival) if b.arrival is not None else F.lit(0)
    # collect() keeps partition order, the default arrival order; a sort by the arrival column is stable
    end_column = micros(F.col(b.end), types[b.end]) if b.end is not None else F.lit(None).cast("long")
    rows = b.source.select(arrival, kind, edge, micros(F.col(b.start), types[b.start]), end_column, *payload).collect()
    if b.arrival is not None:
        rows.sort(key=lambda r: (r[0] is not None, 0 if r[0] is None else r[0]))
    items: list[InputItem[Any]] = []
    for r in rows:
        start, end = r[3], r[4]
        if r[1] == "CTI" and start is not None:
            items.append(Cti(start))
            continue
        value = payload_from_row(schema, r[5:])
        if r[1] != "INSERT" or (b.arrival is not None and r[0] is None):  # a bad row, as the scan counts it
            start = end = None
        if b.node.shape is Shape.EDGE:
            if r[2] == "START":
                items.append(StartEdge(start, value))
            else:  # an END edge; any other value is a bad row, which the null times make it here
                items.append(EndEdge(start, end, value) if r[2] == "END" else EndEdge(_MISSING, _MISSING, value))
        elif b.node.shape is Shape.POINT:
            items.append(Insert(start, _MISSING if start is None else start + 1, value))
        else:
            items.append(Insert(start, end, value))
    return items
