"""The records of late events in the reference evaluator (docs/late-events.md): the hand-worked
cases of ``support/late_cases.py`` (points, intervals and
edges under DROP and ADJUST, bad rows, an edge event moved at both ends, one emptied by an
adjustment, CTI import), a few more examples, and property tests over random inputs of every
shape, with random settings and bad rows:

- the counts of a result are the numbers of records with each action;
- a record describes its item as it arrived, and what the policy did to it (the CTI it violated,
  the new lifetime);
- the records are sorted by input and arrival, and only the inputs the query reads have any;
- the records account for every item: replaying the items with the records' decisions gives
  exactly the events the input accepted.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Hashable, Mapping, Optional, Sequence

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput
from streamql.time import from_micros, to_micros
from support.late_cases import CASES, Case, Reading, ins, null, policy_only
from support.streams import P, advance_settings, build, crowded_inputs, edge_items, inputs, payloads, pipelines
from support.depth import examples

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
INF = sq.INFINITY
DROP = sq.AdvanceTimePolicy.DROP
ADJUST = sq.AdvanceTimePolicy.ADJUST
KINDS = {sq.Insert: "INSERT", sq.StartEdge: "START", sq.EndEdge: "END"}


def streams(case: Case) -> dict[str, sq.Stream[Reading]]:
    return {name: sq.input(name, Reading, side.shape) for name, side in case.sides.items()}


def run(case: Case, output: sq.Shape = sq.Shape.INTERVAL, late: bool = True) -> sq.Result[Reading]:
    return sq.reference.run(case.query(streams(case)), {
        name: ReferenceInput(side.items, side.settings, side.bad_rows) for name, side in case.sides.items()},
        output, late=late)


def lifetime(start: int, end: Optional[int]) -> tuple[datetime, datetime]:
    return from_micros(start), INF if end is None else from_micros(end)


# --- hand-worked cases ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hand_worked_case(case: Case) -> None:
    result = run(case)
    assert result.late == case.late
    assert (result.dropped, result.adjusted, result.bad_rows) == case.counts
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (*lifetime(s, e), p) for s, e, p in case.interval]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_records_need_late_true(case: Case) -> None:
    # the default, late=False, gives no records; nothing else changes
    without = run(case, late=False)
    assert without.late == []
    assert sq.reference.run(case.query(streams(case)), {
        name: ReferenceInput(side.items, side.settings, side.bad_rows)
        for name, side in case.sides.items()}).late == []
    assert (without.dropped, without.adjusted, without.bad_rows) == case.counts
    assert without.events == run(case).events


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_records_do_not_depend_on_the_output_shape(case: Case) -> None:
    for output in sq.Shape:
        assert run(case, output).late == case.late


def test_the_hand_worked_cases_cover_every_action_and_kind() -> None:
    seen = {(record.action, record.kind) for case in CASES for record in case.late}
    assert seen == {("dropped", "INSERT"), ("adjusted", "INSERT"), ("bad_row", "INSERT"),
                    ("dropped", "START"), ("adjusted", "START"),
                    ("dropped", "END"), ("adjusted", "END"), ("bad_row", "END")}
    for case in CASES:
        assert case.counts == tuple(sum(1 for r in case.late if r.action == action)
                                    for action in ("dropped", "adjusted", "bad_row")), case.name


def test_a_naive_datetime_is_a_time_that_cannot_be_read() -> None:
    intervals = sq.input("intervals", Reading, sq.Shape.INTERVAL)
    naive = ins(datetime(2024, 5, 1, 12), datetime(2024, 5, 1, 13), 1)
    result = sq.reference.run(intervals, {"intervals": ReferenceInput([naive], policy_only(DROP), "drop")}, late=True)
    # the record keeps the payload; the times it could not read are None
    (record,) = result.late
    assert (record.action, record.kind, record.start, record.end, record.cti, record.payload) == (
        "bad_row", "INSERT", None, None, None, Reading("m", 1))
    assert record.reason is not None and "naive datetime" in record.reason


def test_with_bad_rows_error_a_bad_row_still_stops_the_run() -> None:
    # late=True records the bad rows bad_rows="drop" drops; it does not turn "error" into "drop"
    intervals = sq.input("intervals", Reading, sq.Shape.INTERVAL)
    items: list[InputItem[Reading]] = [ins(1, 2, 1), ins(5, 5, 2), sq.Cti(INF)]
    with pytest.raises(sq.BadInputError, match=r"input 'intervals', item 1: end 5 is not after start 5"):
        sq.reference.run(intervals, {"intervals": ReferenceInput(items, policy_only(DROP))}, late=True)


def test_the_records_are_the_inputs_not_the_query() -> None:
    case = next(c for c in CASES if c.name == "late_intervals_under_adjust")
    intervals = sq.input("intervals", Reading, sq.Shape.INTERVAL)
    given_inputs = {"intervals": ReferenceInput(case.sides["intervals"].items, policy_only(ADJUST))}
    # a query that releases nothing of the adjusted event (a filter, then a window) has the same
    # records: they describe what the input accepted, whatever the query does with it
    counts = (intervals.where(lambda e: e.watts > 2)
              .tumbling_window(sq.TICK * 100).select(lambda w: Reading("all", w.count())))
    result = sq.reference.run(counts, given_inputs, late=True)
    assert result.late == case.late
    assert (result.dropped, result.adjusted) == (2, 1)


# --- properties ------------------------------------------------------------------------------------


def readable(value: Any) -> Optional[datetime]:
    """A time as a record shows it: ``None`` when it cannot be read."""
    try:
        return from_micros(to_micros(value, "time"))
    except (TypeError, ValueError):
        return None


def policy_of(given_input: ReferenceInput[Any]) -> sq.AdvanceTimePolicy:
    return DROP if given_input.advance_time is None else given_input.advance_time.policy


def check_record(record: sq.Late, item: Any, policy: sq.AdvanceTimePolicy) -> None:
    """The record describes its item as it arrived, and what the policy did to it."""
    assert not isinstance(item, sq.Cti), f"a CTI has a record: {record}"
    assert record.kind == KINDS[type(item)]
    ends = not isinstance(item, sq.StartEdge)
    assert (record.start, record.end, record.payload) == (
        readable(item.start), readable(item.end) if ends else None, item.payload)
    if record.action == "bad_row":
        assert (record.cti, record.new_start, record.new_end) == (None, None, None)
        assert record.reason
        return
    assert record.action in ("dropped", "adjusted")
    assert record.reason is None and record.cti is not None and record.start is not None
    assert policy is ADJUST or record.action == "dropped", "DROP adjusts nothing"
    if record.kind != "END":
        # a start is late when it is before the CTI
        assert record.start < record.cti
        if record.action == "adjusted":
            # moved to the CTI; an interval keeps its end, a start edge's end is not known yet
            assert record.new_start == record.cti
            assert record.new_end == (record.end if record.kind == "INSERT" else None)
            assert record.end is None or record.end > record.cti
        else:
            assert (record.new_start, record.new_end) == (None, None)
            if policy is ADJUST:
                # ADJUST drops only what has nothing after the CTI: an event ending at or before it,
                # a start edge once the CTI is INFINITY
                assert record.cti == INF if record.kind == "START" else record.end is not None and record.end <= record.cti
        return
    # an end edge: late when its end is before the CTI ...
    assert record.end is not None
    if record.action == "adjusted":
        assert record.end < record.cti and record.new_end == record.cti
        assert record.new_start is not None and record.start <= record.new_start < record.new_end
    else:
        assert (record.new_start, record.new_end) == (None, None)
        # ... or, under ADJUST, at the CTI when it empties an event whose start was moved there
        assert record.end < record.cti or (policy is ADJUST and record.end == record.cti)


def replayed(items: Sequence[Any], records: Mapping[int, sq.Late], policy: sq.AdvanceTimePolicy) -> Counter[Hashable]:
    """The events an input accepted, from its items and the records of its late ones and bad rows
    alone: an item without a record is accepted as it arrived (an end edge closes the earliest open
    event of its start and payload, or goes with its dropped start edge), one with a record as the
    record says. (start, end, payload); an event that never ended ends at INFINITY."""
    accepted: Counter[Hashable] = Counter()
    open_: list[list[Any]] = []  # [start as given, payload, start now], in the order they opened
    dropped_starts: list[tuple[Optional[datetime], Any]] = []
    for position, item in enumerate(items):
        record = records.get(position)
        if isinstance(item, sq.Cti):
            continue
        if isinstance(item, sq.Insert):
            if record is None:
                accepted[(readable(item.start), readable(item.end), item.payload)] += 1
            elif record.action == "adjusted":
                accepted[(record.new_start, record.new_end, item.payload)] += 1
            continue
        key = (readable(item.start), item.payload)
        if isinstance(item, sq.StartEdge):
            if record is None:
                open_.append([*key, key[0]])
            elif record.action == "adjusted":
                open_.append([*key, record.new_start])
            elif record.action == "dropped":
                dropped_starts.append(key)
            continue
        match = next((e for e in open_ if (e[0], e[1]) == key), None)
        if record is not None and record.action == "bad_row":
            # bad: it does not end after its start, a time is missing, or it finds no start edge
            assert (record.start is None or record.end is None or record.end <= record.start
                    or (match is None and key not in dropped_starts)), record
            continue
        if match is None:
            # the end edge of a dropped start edge goes with it: no record
            assert record is None and key in dropped_starts, (position, item, record)
            dropped_starts.remove(key)
            continue
        if record is None:
            open_.remove(match)
            accepted[(match[2], readable(item.end), item.payload)] += 1
        elif record.action == "adjusted":
            # the record shows the event's start: as it opened, or moved to an earlier CTI
            assert record.new_start is not None and match[2] <= record.new_start
            open_.remove(match)
            accepted[(record.new_start, record.new_end, item.payload)] += 1
        elif policy is ADJUST:
            open_.remove(match)  # an adjustment left nothing of the event
        # else DROP ignored the late end edge: the event stays open
    for start, payload, now in open_:
        accepted[(now, INF, payload)] += 1
    return accepted


def with_sources(name: str, given_inputs: Mapping[str, ReferenceInput[Any]]) -> dict[str, ReferenceInput[Any]]:
    """``name``'s input and the inputs whose CTIs it imports (transitively)."""
    needed = {name: given_inputs[name]}
    settings_ = given_inputs[name].advance_time
    while settings_ is not None and settings_.import_ is not None and settings_.import_.from_input not in needed:
        source = settings_.import_.from_input
        needed[source] = given_inputs[source]
        settings_ = given_inputs[source].advance_time
    return needed


def check_records(q: sq.Stream[Any], given_inputs: Mapping[str, ReferenceInput[Any]],
                  shapes: Mapping[str, sq.Shape], read: set[str], output: sq.Shape) -> None:
    note(f"query tree: {q.node!r}")
    result = sq.reference.run(q, given_inputs, output, late=True)
    records = result.late
    note(f"records: {records}")
    # one record per counted item
    for action, count in (("dropped", result.dropped), ("adjusted", result.adjusted), ("bad_row", result.bad_rows)):
        assert count == sum(1 for r in records if r.action == action), action
    # sorted by (input, arrival), at most one per item, only of the inputs the query reads
    keys = [(r.input, r.arrival) for r in records]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert {r.input for r in records} <= read
    assert sq.reference.run(q, given_inputs, output).late == []
    for record in records:
        assert record.arrival is not None
        check_record(record, given_inputs[record.input].events[record.arrival], policy_of(given_inputs[record.input]))
    for name in read:
        # the input's accepted events: the input alone, with a final CTI at INFINITY after its items
        # (it changes no decision), releases them all
        ended = with_sources(name, given_inputs)
        original = ended[name]
        ended[name] = ReferenceInput([*original.events, sq.Cti(INF)], original.advance_time, original.bad_rows)
        accepted = sq.reference.run(sq.input(name, P, shapes[name]), ended, late=True)
        own = [r for r in records if r.input == name]
        # the input's records do not depend on the query, nor on the final CTI
        assert [r for r in accepted.late if r.input == name] == own
        assert Counter((e.start, e.end, e.payload) for e in accepted.events) == replayed(
            original.events, {r.arrival: r for r in own if r.arrival is not None}, policy_of(original))


@st.composite
def with_bad_rows(draw: st.DrawFn, items: list[Any], shape: sq.Shape, point_length: bool = True) -> list[Any]:
    """``items`` with up to three bad rows among them: a missing time, an end not after the start,
    with ``point_length`` a point that does not last one tick (the unmatched end edges come from
    ``edge_items``)."""
    items = list(items)
    for _ in range(draw(st.integers(0, 3))):
        start, payload = draw(st.integers(0, 100)), draw(payloads)
        choice = draw(st.integers(0, 2))
        bad: Any
        if shape is sq.Shape.EDGE:
            bad = [sq.EndEdge(start, start - draw(st.integers(0, 3)), payload), sq.StartEdge(null(), payload),
                   sq.EndEdge(start, null(), payload)][choice]
        else:
            wrong_end = start + 2 if shape is sq.Shape.POINT and point_length else start - draw(st.integers(0, 3))
            bad = [sq.Insert(start, wrong_end, payload), sq.Insert(null(), start + 1, payload),
                   sq.Insert(start, null(), payload)][choice]
        items.insert(draw(st.integers(0, len(items))), bad)
    return items


@st.composite
def any_items(draw: st.DrawFn, shape: sq.Shape, point_length: bool = True) -> list[Any]:
    if shape is sq.Shape.EDGE:
        items = draw(edge_items())
    elif draw(st.booleans()):
        items = draw(inputs(shape, open_ends=True))
    else:
        items = draw(crowded_inputs(shape, payloads))
    return draw(with_bad_rows(items, shape, point_length))


@settings(SETTINGS, max_examples=examples(400))
@given(data=st.data())
def test_the_records_of_one_input_account_for_every_item(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from(list(sq.Shape)), label="shape")
    items = data.draw(any_items(shape), label="items")
    given_inputs = {"in": ReferenceInput(items, data.draw(advance_settings(), label="settings"), "drop")}
    q = build(sq.input("in", P, shape), data.draw(pipelines(), label="pipeline"))
    check_records(q, given_inputs, {"in": shape}, {"in"}, data.draw(st.sampled_from(list(sq.Shape)), label="output"))


@settings(SETTINGS, max_examples=examples(200))
@given(data=st.data())
def test_the_records_of_two_inputs_with_an_import(data: st.DataObject) -> None:
    shapes = {name: data.draw(st.sampled_from(list(sq.Shape)), label=f"{name} shape") for name in ("a", "b")}
    # an input the query does not read but imports from is not declared: the reference reads its
    # items unchecked, as INTERVAL (or EDGE) events, where a point of two ticks is no bad row. So
    # that the records of an input are those of the input alone (check_records), no such points
    items = {name: data.draw(any_items(shape, point_length=False), label=f"{name} items")
             for name, shape in shapes.items()}
    own = {name: data.draw(advance_settings(), label=f"{name} settings") for name in shapes}
    if data.draw(st.booleans(), label="import"):
        importer, source = data.draw(st.permutations(["a", "b"]), label="import pair")
        settings_ = own[importer]
        own[importer] = sq.AdvanceTimeSettings(None if settings_ is None else settings_.generation,
                                               sq.AdvanceTimeImport(source),
                                               data.draw(st.sampled_from(list(sq.AdvanceTimePolicy)), label="policy"))
    read = set(data.draw(st.sampled_from([["a"], ["b"], ["a", "b"]]), label="read"))
    sources = {name: sq.input(name, P, shape) for name, shape in shapes.items()}
    q = sources["a"].union(sources["b"]) if read == {"a", "b"} else sources[min(read)]
    q = build(q, data.draw(pipelines(), label="pipeline"))
    everything = {name: ReferenceInput(items[name], own[name], "drop") for name in shapes}
    given_inputs: dict[str, ReferenceInput[Any]] = {}
    for name in read:
        given_inputs.update(with_sources(name, everything))
    check_records(q, given_inputs, shapes, read, data.draw(st.sampled_from(list(sq.Shape)), label="output"))
