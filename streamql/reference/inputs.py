"""Ingress of the reference evaluator: one input's items in arrival order, through the CTI
machinery of docs/ctis-and-release.md — CTI rows, generation, import, DROP/ADJUST — to accepted events.

Written to be read against that page, one item at a time.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, Mapping, Sequence, TypeVar, Union

import attrs

from streamql.advance_time import AdvanceTimePolicy, AdvanceTimeSettings
from streamql.errors import BadInputError, BindingError
from streamql.events import Cti, EndEdge, Insert, InputItem, Late, Shape, StartEdge
from streamql.payload import PayloadSchema, check_instance
from streamql.query.joins import least_cti
from streamql.time import INFINITY_MICROS, TICK, duration_micros, from_micros, shift, to_micros

T = TypeVar("T")


@attrs.frozen
class ReferenceInput(Generic[T]):
    """Plain Python input for ``sq.reference.run``: items in arrival order, with the same
    advance-time settings and ``bad_rows`` option as ``Binder.bind``."""

    events: Sequence[InputItem[T]]
    advance_time: AdvanceTimeSettings | None = None
    bad_rows: Literal["error", "drop"] = "error"


def _check_partitions(instance: Any, attribute: Any, value: Mapping[Any, Any]) -> None:
    if not isinstance(value, Mapping) or not value:
        raise BindingError(f"PartitionedInput takes a non-empty mapping of partition values to items, got {value!r}")
    kinds = {type(k) for k in value}
    if not (kinds <= {int} or kinds <= {str}) or any(isinstance(k, bool) for k in value):
        raise BindingError("PartitionedInput's partition values must be all ints or all strings, got "
                           + ", ".join(map(repr, value)))


@attrs.frozen
class PartitionedInput(Generic[T]):
    """Plain Python input for ``sq.reference.run`` with partitions (docs/partitioned-inputs.md): the
    items of each declared partition in that partition's arrival order, no order across partitions.
    Each partition has its own CTI rows, CTI generation (``advance_time``) and violation check; the
    input's CTI is the least of its partitions' CTIs. It releases what the ``union`` of one
    ``ReferenceInput`` per partition, each with these settings, releases.

    >>> sq.reference.PartitionedInput({0: [sq.Insert(1, 2, r)], 1: [sq.Cti(5)]}, settings)  # doctest: +SKIP
    """

    partitions: Mapping[int | str, Sequence[InputItem[T]]] = attrs.field(validator=_check_partitions)
    advance_time: AdvanceTimeSettings | None = None
    bad_rows: Literal["error", "drop"] = "error"

    @property
    def events(self) -> list[InputItem[T]]:
        """Every partition's items (in partition order, then arrival order): what the input holds."""
        return [item for items in self.partitions.values() for item in items]

    def part(self, partition: int | str) -> ReferenceInput[T]:
        """One partition as an input of its own, with this input's settings."""
        return ReferenceInput(self.partitions[partition], self.advance_time, self.bad_rows)


#: what ``sq.reference.run`` takes for an input
AnyReferenceInput = Union[ReferenceInput[Any], PartitionedInput[Any]]


@attrs.define
class Lifetime:
    """An accepted event as the ingress holds it."""

    start: int
    end: int
    payload: Any
    original_start: int
    closed: bool  # INSERTs, and edge events whose end edge was accepted
    adjusted: bool = False
    record: Late | None = None  # the Late record of its adjustment


@attrs.define
class IngressState:
    """What one input knows after the items that arrived so far."""

    name: str
    schema: PayloadSchema | None  # None for an input only imported from: payloads unchecked
    shape: Shape
    settings: AdvanceTimeSettings | None
    bad_rows_policy: str
    cti: int | None = None
    #: the CTI after every step so far: two per position (its finite CTIs applied, then all of
    #: them; decision 7 of docs/decisions.md) and one for the flush
    history: list[int | None] = attrs.Factory(list)
    accepted_count: int = 0
    max_start: int | None = None
    baseline: int | None = None
    events: list[Lifetime] = attrs.Factory(list)
    open_edges: list[Lifetime] = attrs.Factory(list)
    dropped_start_edges: list[tuple[int, Any]] = attrs.Factory(list)
    dropped: int = 0
    bad_rows: int = 0
    pending_ctis: list[int] = attrs.Factory(list)
    #: one record per item counted in dropped, adjusted (per event) and bad_rows
    late: list[Late] = attrs.Factory(list)
    position: int = 0  # the arrival of the item being read
    #: the partition of a partitioned input this state is (None: the input has no partitions)
    partition: int | str | None = None

    @property
    def policy(self) -> AdvanceTimePolicy:
        return self.settings.policy if self.settings is not None else AdvanceTimePolicy.DROP

    @property
    def finite_cti(self) -> int | None:
        """The greatest finite CTI this input has had (windows over open events stop there)."""
        return max((c for c in self.history if c is not None and c != INFINITY_MICROS), default=None)

    @property
    def adjusted(self) -> int:
        return sum(1 for e in self.events if e.adjusted)

    # --- one item ------------------------------------------------------------------------
    def arrive(self, position: int, item: InputItem[Any]) -> None:
        """Phase 1 of a position: an event is checked against the CTI current before it."""
        self.position = position
        try:
            if isinstance(item, Cti):
                self.pending_ctis.append(to_micros(item.time, "CTI time"))
            elif isinstance(item, Insert):
                self._insert(item)
            elif isinstance(item, StartEdge):
                self._start_edge(item)
            elif isinstance(item, EndEdge):
                self._end_edge(item)
            else:
                raise TypeError(f"input {self.name!r}: {item!r} is not an Insert, StartEdge, EndEdge or Cti")
        except BadInputError as exc:
            if self.bad_rows_policy == "error":
                raise BadInputError(f"input {self.name!r}, item {position}: {exc}") from None
            self.bad_rows += 1
            self.late.append(self._record(item, "bad_row", None, reason=str(exc)))

    def _record(self, item: Any, action: str, cti: int | None, new_start: int | None = None,
                new_end: int | None = None, reason: str | None = None) -> Late:
        """The Late record of ``item`` as it arrived (times that cannot be read are None)."""
        kind = {StartEdge: "START", EndEdge: "END"}.get(type(item), "INSERT")

        def time(name: str) -> datetime | None:
            try:
                return from_micros(to_micros(getattr(item, name), name))
            except (AttributeError, TypeError, ValueError):
                return None

        return Late(self.name, self.position, action, kind, time("start"), None if kind == "START" else time("end"),
                    None if cti is None else from_micros(cti),
                    None if new_start is None else from_micros(new_start),
                    None if new_end is None else from_micros(new_end),
                    getattr(item, "payload", None), reason, self.partition)

    def _times(self, item: Any, *names: str) -> list[int]:
        values = []
        for name in names:
            value = getattr(item, name)
            if value is None:
                raise BadInputError(f"{name} is null")
            try:
                values.append(to_micros(value, name))
            except ValueError as exc:
                raise BadInputError(str(exc)) from None
        return values

    def _check_payload(self, payload: Any) -> None:
        if self.schema is not None:
            check_instance(self.schema, payload, f"input {self.name!r}")
            _check_nulls(self.schema, payload, "")

    def _insert(self, item: Insert[Any]) -> None:
        if self.shape is Shape.EDGE:
            raise TypeError(f"input {self.name!r} is an EDGE input: give StartEdge/EndEdge items, not Insert")
        self._check_payload(item.payload)
        start, end = self._times(item, "start", "end")
        if end <= start:
            raise BadInputError(f"end {end} is not after start {start}")
        if self.shape is Shape.POINT and end != shift(start, 1):
            raise BadInputError(f"a POINT input's event must end one tick ({TICK}) after its start")
        self._accept_start(item, Lifetime(start, end, item.payload, start, closed=True))

    def _start_edge(self, item: StartEdge[Any]) -> None:
        if self.shape is not Shape.EDGE:
            raise TypeError(f"input {self.name!r} is a {self.shape.name} input: StartEdge needs Shape.EDGE")
        self._check_payload(item.payload)
        (start,) = self._times(item, "start")
        event = Lifetime(start, INFINITY_MICROS, item.payload, start, closed=False)
        if self._accept_start(item, event):
            self.open_edges.append(event)
        else:
            self.dropped_start_edges.append((start, item.payload))

    def _accept_start(self, item: Insert[Any] | StartEdge[Any], event: Lifetime) -> bool:
        """The violation check for a start; counts the event for CTI generation if accepted."""
        cti = self.cti
        if cti is not None and event.start < cti:
            if self.policy is AdvanceTimePolicy.ADJUST and event.end > cti:
                event.start = cti
                event.adjusted = True
                open_edge = isinstance(item, StartEdge)
                event.record = self._record(item, "adjusted", cti, cti, None if open_edge else event.end)
                self.late.append(event.record)
            else:
                self.dropped += 1
                self.late.append(self._record(item, "dropped", cti))
                return False
        self.events.append(event)
        self.max_start = event.start if self.max_start is None else max(self.max_start, event.start)
        self._generate(event.start)
        return True

    def _end_edge(self, item: EndEdge[Any]) -> None:
        if self.shape is not Shape.EDGE:
            raise TypeError(f"input {self.name!r} is a {self.shape.name} input: EndEdge needs Shape.EDGE")
        self._check_payload(item.payload)
        original_start, end = self._times(item, "start", "end")
        if end <= original_start:
            raise BadInputError(f"end edge's end {end} is not after its start {original_start}")
        match = next((e for e in self.open_edges
                      if e.original_start == original_start and e.payload == item.payload), None)
        if match is None:
            dropped = (original_start, item.payload)
            if dropped in self.dropped_start_edges:  # its start edge was dropped: so is the end
                self.dropped_start_edges.remove(dropped)
                return
            raise BadInputError(f"end edge at {end} has no open start edge at {original_start} with its payload")
        cti = self.cti
        if cti is not None and end < cti:
            if self.policy is AdvanceTimePolicy.DROP:
                # ignored: as if it never arrived, so a later end edge may still close the event
                self.dropped += 1
                self.late.append(self._record(item, "dropped", cti))
                return
            end = cti
            match.adjusted = True
            # one record per event: the end edge's replaces its start edge's
            if match.record is not None:
                self.late.remove(match.record)
            match.record = self._record(item, "adjusted", cti, match.start, end)
            self.late.append(match.record)
        self.open_edges.remove(match)
        if end <= match.start:  # an adjustment left nothing of it: removed, counted as dropped only
            self.events.remove(match)
            self.dropped += 1
            assert match.record is not None and cti is not None
            self.late.remove(match.record)
            self.late.append(self._record(item, "dropped", cti))
            return
        match.end = end
        match.closed = True

    def _generate(self, start: int) -> None:
        generation = self.settings.generation if self.settings is not None else None
        if generation is None:
            return
        self.accepted_count += 1
        if generation.every_events is not None:
            trigger = self.accepted_count % generation.every_events == 0
        else:
            assert generation.every is not None
            if self.baseline is None:
                self.baseline, trigger = start, False
            else:
                trigger = start >= shift(self.baseline, duration_micros(generation.every))
                if trigger:
                    self.baseline = start
        if trigger:
            assert self.max_start is not None
            generated = shift(self.max_start, -duration_micros(generation.delay))
            self.pending_ctis.append(generated if self.cti is None else max(self.cti, generated))

    def commit_ctis(self, finite_only: bool) -> None:
        """A sub-step of a position: this position's CTIs take effect — its finite ones first
        (``finite_only``), then all of them (docs/ctis-and-release.md#3-import: the CTI becomes their maximum)."""
        for cti in self.pending_ctis:
            if not (finite_only and cti == INFINITY_MICROS):
                self.take_cti(cti)
        if not finite_only:
            self.pending_ctis.clear()

    def take_cti(self, cti: int | None) -> None:
        if cti is not None and (self.cti is None or cti > self.cti):
            self.cti = cti


def _check_nulls(schema: PayloadSchema, payload: Any, prefix: str) -> None:
    """A null in a field that is not Optional is bad input (docs/payloads.md), as a null in such a column
    is on Spark; nested payloads are checked where they are not null."""
    for field in schema.fields:
        value = getattr(payload, field.name)
        path = f"{prefix}{field.name}"
        if value is None and not field.type.nullable:
            raise BadInputError(f"{path} is null but {schema.name}.{field.name} is not Optional")
        if value is not None and field.type.schema is not None:
            _check_nulls(field.type.schema, value, f"{path}.")


@attrs.define
class PartitionedState:
    """What a partitioned input knows: one ``IngressState`` per declared partition, each with its
    own CTIs, generation and violation check; the input's CTI is the least of theirs."""

    name: str
    parts: dict[int | str, IngressState]

    @property
    def cti(self) -> int | None:
        return least_cti(tuple(p.cti for p in self.parts.values()))

    @property
    def history(self) -> list[int | None]:
        """The input's CTI after every step: the least of its partitions' at that step."""
        return [least_cti(step) for step in zip(*(p.history for p in self.parts.values()))]

    @property
    def dropped(self) -> int:
        return sum(p.dropped for p in self.parts.values())

    @property
    def adjusted(self) -> int:
        return sum(p.adjusted for p in self.parts.values())

    @property
    def bad_rows(self) -> int:
        return sum(p.bad_rows for p in self.parts.values())

    @property
    def late(self) -> list[Late]:
        return [r for p in self.parts.values() for r in p.late]

    def take_cti(self, cti: int | None) -> None:
        """An imported CTI: every partition takes it."""
        for p in self.parts.values():
            p.take_cti(cti)


AnyState = Union[IngressState, PartitionedState]


def _lanes(name: str, given: AnyReferenceInput, state: AnyState) -> list[tuple[IngressState, Sequence[InputItem[Any]]]]:
    """Each arrival order of an input with the state reading it: one, or one per partition."""
    if isinstance(state, PartitionedState):
        assert isinstance(given, PartitionedInput)
        return [(state.parts[p], given.partitions[p]) for p in state.parts]
    assert isinstance(given, ReferenceInput)
    return [(state, given.events)]


def ingest(inputs: Mapping[str, AnyReferenceInput], declared: Mapping[str, tuple[PayloadSchema | None, Shape]]
           ) -> dict[str, AnyState]:
    """Runs every input through its CTI machinery on one arrival clock: at each list position,
    events first (checked against the CTIs before them), then that position's CTIs and imports.
    A partitioned input runs each partition's list as an arrival order of its own, at the same
    positions (no order across partitions is assumed: any alignment releases the same)."""
    states: dict[str, AnyState] = {}
    for name, given in inputs.items():
        if not isinstance(given, (ReferenceInput, PartitionedInput)):
            raise BindingError(f"input {name!r}: expected a sq.reference.ReferenceInput or PartitionedInput, "
                               f"got {given!r}")
        if name not in declared:
            raise BindingError(f"input {name!r} is not read by the query and no input imports its CTIs")
        schema, shape = declared[name]
        if isinstance(given, PartitionedInput):
            states[name] = PartitionedState(name, {
                p: IngressState(name, schema, shape, given.advance_time, given.bad_rows, partition=p)
                for p in given.partitions})
        else:
            states[name] = IngressState(name, schema, shape, given.advance_time, given.bad_rows)
    lanes = [lane for name, state in states.items() for lane in _lanes(name, inputs[name], state)]
    imports = _import_order(states)
    length = max((len(items) for _, items in lanes), default=0)
    for position in range(length):
        for lane, items in lanes:
            if position < len(items):
                lane.arrive(position, items[position])
        for finite_only in (True, False):
            before = [lane.cti for lane, _ in lanes]
            for lane, _ in lanes:
                lane.commit_ctis(finite_only)
            _propagate_imports(states, imports, finite_only)
            _record_step([lane for lane, _ in lanes], before)
    before = [lane.cti for lane, _ in lanes]
    for lane, _ in lanes:
        generation = lane.settings.generation if lane.settings is not None else None
        if generation is not None and generation.flush:
            lane.take_cti(INFINITY_MICROS)
    _propagate_imports(states, imports, finite_only=False)
    _record_step([lane for lane, _ in lanes], before)
    return states


def _record_step(lanes: Sequence[IngressState], before: Sequence[int | None]) -> None:
    """Every lane's CTI after a step, into its history. Where several lanes reach INFINITY in
    the same step, no order among them is assumed (as among partitions): first one step for each
    of them in which it is still at its CTI before and the others are at INFINITY — the last to
    get there in some order — so that a stream's finite CTIs (the horizon) are those some order
    shows (docs/decisions.md, the finite CTIs seen)."""
    reached = [i for i, lane in enumerate(lanes) if lane.cti == INFINITY_MICROS and before[i] != INFINITY_MICROS]
    if len(reached) > 1:
        for last in reached:
            for i, lane in enumerate(lanes):
                lane.history.append(before[i] if i == last else lane.cti)
    for lane in lanes:
        lane.history.append(lane.cti)


def _import_order(states: Mapping[str, AnyState]) -> list[tuple[str, str]]:
    """(importer, source) pairs in an order where sources come first; cycles are an error."""
    edges = {}
    for name, state in states.items():
        settings = _settings(state)
        imported = settings.import_ if settings is not None else None
        if imported is not None:
            if imported.from_input not in states:
                raise BindingError(f"input {name!r} imports the CTIs of {imported.from_input!r}, which is not bound")
            if imported.from_input == name:
                raise BindingError(f"input {name!r} cannot import its own CTIs")
            edges[name] = imported.from_input
    order: list[tuple[str, str]] = []
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise BindingError("CTI imports form a cycle: " + " -> ".join(path + (name,)))
        if name in done or name not in edges:
            done.add(name)
            return
        visit(edges[name], path + (name,))
        order.append((name, edges[name]))
        done.add(name)

    for name in edges:
        visit(name, ())
    return order


def _settings(state: AnyState) -> AdvanceTimeSettings | None:
    return next(iter(state.parts.values())).settings if isinstance(state, PartitionedState) else state.settings


def _propagate_imports(states: Mapping[str, AnyState], order: Sequence[tuple[str, str]],
                       finite_only: bool) -> None:
    for importer, source in order:
        imported = states[source].cti
        if not (finite_only and imported == INFINITY_MICROS):
            states[importer].take_cti(imported)
