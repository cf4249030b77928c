"""Late events you can see, on Spark (docs/late-events.md):
``Binder.run(q, late=True)`` gives the reference evaluator's ``Result.late`` for random inputs of
every shape, policy, arrival order and bad rows; the counts equal the records; ``Binder.late``'s
rows are the same records with the payload as a struct; ``write(late_path=...)`` writes them. The
hand-worked cases of ``support/late_cases.py`` on Spark; several inputs with bad rows of every kind,
CTI rows with a null time (Spark's ``"CTI"`` records) among them."""
from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence, cast

import attrs
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T

import streamql as sq
from streamql.errors import BindingError
from support.depth import spark_examples, tiered
from support.frames import NullCti, bind, frame
from support.late_cases import CASES, Case, Reading
from support.must_release import check_release
from support.streams import (P, SPARK_EXAMPLES, advance_settings, build, edge_items, inputs, payloads, pipelines,
                             side_by_side, us)

UTC = timezone.utc
DROP, ADJUST = sq.AdvanceTimePolicy.DROP, sq.AdvanceTimePolicy.ADJUST


def t(micros: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)


def with_bad_rows(items: Sequence[Any], bad: Sequence[int], shape: sq.Shape) -> list[Any]:
    """``items`` with the events at the positions ``bad`` made bad: a null in a non-Optional payload
    field (any shape) or, for an INTERVAL input, an end that is not after the start."""
    out = list(items)
    for i, position in enumerate(bad):
        if position >= len(out) or isinstance(out[position], sq.Cti):
            continue
        item = out[position]
        if shape is sq.Shape.INTERVAL and i % 2 == 1:
            out[position] = sq.Insert(item.start, item.start, item.payload)
        else:
            out[position] = attrs.evolve(item, payload=dataclasses.replace(item.payload, k=cast(Any, None)))
    return out


def without_reason(records: Sequence[sq.Late]) -> list[sq.Late]:
    """The records with their reasons blanked (the texts differ between the evaluators); a reason
    is there exactly for a bad row."""
    for r in records:
        assert (r.reason is not None) == (r.action == "bad_row"), r
    return [attrs.evolve(r, reason=None) for r in records]


def check_counts(result: sq.Result[Any]) -> None:
    actions = Counter(r.action for r in result.late)
    assert (actions["dropped"], actions["adjusted"], actions["bad_row"]) == (
        result.dropped, result.adjusted, result.bad_rows)


@st.composite
def late_in_every_unit(draw: st.DrawFn, shape: sq.Shape) -> list[Any]:
    """30 to 60 items as the benchmark's ``alter-late``: events in rising start order (each moved
    back by up to 3, within most delays), about one in seven starting 15 to 60 ticks back (late
    beyond the CTI), a CTI row now and then: over several partitions every scan unit holds late
    events after the earlier units' drops, and the count that places each unit's generated CTIs
    depends on them (docs/design-fewer-jobs.md, step 5)."""
    items: list[Any] = []
    t = 100
    for _ in range(draw(st.integers(30, 60))):
        if draw(st.integers(0, 19)) == 0:
            items.append(sq.Cti(t - draw(st.integers(0, 20))))
            continue
        t += draw(st.integers(1, 4))
        start = t - draw(st.integers(0, 3))
        if draw(st.integers(0, 6)) == 0:
            start -= draw(st.integers(15, 60))
        length = 1 if shape is sq.Shape.POINT else draw(st.integers(1, 80))
        items.append(sq.Insert(start, start + length, draw(payloads)))
    return items


@settings(SPARK_EXAMPLES, max_examples=spark_examples(12))
@given(data=st.data())
def test_late_records_on_spark_equal_the_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(st.one_of(inputs(shape), late_in_every_unit(shape))), label="items")
    bad = data.draw(st.lists(st.integers(0, 24), max_size=3), label="bad positions")
    items = with_bad_rows(items, bad, shape)
    at = data.draw(advance_settings(), label="settings")
    arrival_order = data.draw(st.sampled_from(["none", "shuffled", "stored"]), label="arrival column")
    arrival = arrival_order != "none"
    partitions = data.draw(st.integers(1, 4), label="partitions")
    source = sq.input("in", P, shape)
    q = build(source, data.draw(pipelines(), label="ops"))
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at, bad_rows="drop")}, late=True)
    check_counts(expected)
    df = frame(spark, P, shape, items, partitions=partitions, arrival=arrival, seed=len(items),
               shuffled=arrival_order == "shuffled")
    actual = bind(sq.Binder(spark), source, df, shape, at, arrival=arrival, bad_rows="drop").run(q, late=True)
    note(f"records: {actual.late}")
    assert without_reason(actual.late) == without_reason(expected.late)
    assert actual == attrs.evolve(expected, late=actual.late)
    check_release(q, {"in": sq.reference.ReferenceInput(items, at, bad_rows="drop")}, sq.Shape.INTERVAL, expected)


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_late_records_of_edges_on_spark_equal_the_reference(spark: SparkSession, data: st.DataObject) -> None:
    items = data.draw(side_by_side(edge_items()), label="items")
    policy = data.draw(st.sampled_from([DROP, ADJUST]), label="policy")
    at = data.draw(advance_settings(), label="settings")
    if at is not None:
        at = attrs.evolve(at, policy=policy)
    arrival = data.draw(st.booleans(), label="arrival column")
    partitions = data.draw(st.integers(1, 4), label="partitions")
    source = sq.input("in", P, sq.Shape.EDGE)
    expected = sq.reference.run(source, {"in": sq.reference.ReferenceInput(items, at, bad_rows="drop")}, late=True)
    check_counts(expected)
    df = frame(spark, P, sq.Shape.EDGE, items, partitions=partitions, arrival=arrival, seed=len(items))
    actual = bind(sq.Binder(spark), source, df, sq.Shape.EDGE, at, arrival=arrival, bad_rows="drop").run(
        source, late=True)
    note(f"records: {actual.late}")
    assert without_reason(actual.late) == without_reason(expected.late)
    check_counts(actual)
    check_release(source, {"in": sq.reference.ReferenceInput(items, at, bad_rows="drop")}, sq.Shape.INTERVAL, expected)


# --- hand-worked -------------------------------------------------------------------------------

EVERY_2 = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=2, delay=us(0)))


def points_binder(spark: SparkSession, items: Sequence[Any], settings: sq.AdvanceTimeSettings | None,
                  arrival: bool = False) -> tuple[sq.Binder, sq.Stream[P]]:
    source = sq.input("in", P, sq.Shape.POINT)
    df = frame(spark, P, sq.Shape.POINT, items, partitions=2, arrival=arrival, seed=3)
    return bind(sq.Binder(spark), source, df, sq.Shape.POINT, settings, arrival=arrival, bad_rows="drop"), source


def test_a_late_point_is_recorded_with_the_cti_it_violated(spark: SparkSession) -> None:
    # every 2 events a CTI at the greatest start: after 10 and 20 it is 20; 15 and 5 are late
    items = [sq.Insert(10, 11, P(1, 1, "a", None)), sq.Insert(20, 21, P(2, 2, "b", None)),
             sq.Insert(15, 16, P(3, 3, "c", 7)), sq.Insert(30, 31, P(4, 4, "d", None)),
             sq.Insert(5, 6, P(5, 5, "e", None))]
    binder, source = points_binder(spark, items, EVERY_2)
    result = binder.run(source, late=True)
    assert result.dropped == 2
    assert result.late == [
        sq.Late("in", 2, "dropped", "INSERT", t(15), t(16), t(20), None, None, P(3, 3, "c", 7), None),
        sq.Late("in", 4, "dropped", "INSERT", t(5), t(6), t(20), None, None, P(5, 5, "e", None), None),
    ]
    assert binder.run(source).late == []


def test_a_run_that_does_not_ask_for_late_records_makes_no_plan_for_them(spark: SparkSession,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the records' plans are deferred (``Deferred``): each DataFrame operation is analysed
    # over the whole plan on the driver, so a run without ``late=True`` does not build them at all
    from streamql.spark.ingress import late

    built: list[str] = []

    def recorded(name: str) -> Any:
        original = getattr(late, name)

        def build(*args: Any) -> Any:
            built.append(name)
            return original(*args)
        return build

    for name in ("bad_rows", "decided_rows"):
        monkeypatch.setattr(late, name, recorded(name))
    items = [sq.Insert(10, 11, P(1, 1, "a", None)), sq.Insert(20, 21, P(2, 2, "b", None)),
             sq.Insert(15, 16, P(3, 3, "c", 7)), sq.Insert(12, 13, P(cast(Any, None), 4, "d", None))]
    binder, source = points_binder(spark, items, EVERY_2)
    result = binder.run(source)
    assert (result.dropped, result.bad_rows, built) == (1, 1, [])
    records = binder.run(source, late=True).late
    assert sorted(built) == ["bad_rows", "decided_rows"]
    assert [(r.action, r.arrival) for r in records] == [("dropped", 2), ("bad_row", 3)]


def test_the_late_frame_holds_the_records_with_the_payload_as_a_struct(spark: SparkSession) -> None:
    items = [sq.Insert(10, 11, P(1, 1, "a", None)), sq.Insert(20, 21, P(2, 2, "b", None)),
             sq.Insert(15, 16, P(3, 3, "c", 7)), sq.Insert(12, 13, P(cast(Any, None), 4, "d", None))]
    settings_ = attrs.evolve(EVERY_2, policy=ADJUST)
    binder, source = points_binder(spark, items, settings_, arrival=True)
    late = binder.late(source)
    assert late.columns == ["input", "arrival", "action", "kind", "start", "end", "cti", "new_start", "new_end",
                            "payload", "reason", "partition"]
    payload = late.schema["payload"].dataType
    assert isinstance(payload, T.StructType)
    assert [f.name for f in payload.fields] == ["k", "v", "s", "o"]
    rows = sorted((r.asDict(recursive=True) for r in late.collect()), key=lambda r: r["arrival"])
    # a point is moved only if it ends after the CTI: 15 ends at 16 < 20, so it is dropped
    assert [(r["arrival"], r["action"], r["kind"], r["payload"]["k"], r["reason"] is not None) for r in rows] == [
        (2, "dropped", "INSERT", 3, False), (3, "bad_row", "INSERT", None, True)]
    assert rows[0]["cti"] == datetime(1970, 1, 1, 0, 0, 0, 20)
    assert "k is null" in rows[1]["reason"]


@pytest.mark.slow  # the deep tier: the default tier's time (the late frame of one input stays)
def test_late_frame_of_two_inputs_merges_their_payload_fields(spark: SparkSession) -> None:
    @dataclasses.dataclass(frozen=True)
    class Q:
        k: str  # a string where P's k is an integer: the struct holds k as a string
        w: float

    left = sq.input("left", P, sq.Shape.POINT)
    right = sq.input("right", Q, sq.Shape.POINT)
    lrows = [(10, 1, 1, "a", None), (20, 2, 2, "b", None), (15, 3, 3, "c", None)]
    rrows = [(10, "x", 1.5), (30, "y", 2.5), (12, "z", 3.5)]
    ldf = spark.createDataFrame(lrows, "start long, k long, v long, s string, o long")
    rdf = spark.createDataFrame(rrows, "start long, k string, w double")
    binder = (sq.Binder(spark).bind(left, ldf, start="start", advance_time=EVERY_2)
              .bind(right, rdf, start="start", advance_time=EVERY_2))
    q = left.join(right, None, lambda a, b: P(a.k, a.v, b.k, a.o))
    late = binder.late(q)
    payload = late.schema["payload"].dataType
    assert isinstance(payload, T.StructType)
    fields = {f.name: f.dataType for f in payload.fields}
    assert list(fields) == ["k", "v", "s", "o", "w"]
    assert isinstance(fields["k"], T.StringType) and isinstance(fields["w"], T.DoubleType)
    rows = {r["input"]: r["payload"].asDict() for r in late.collect()}
    assert rows == {"left": {"k": "3", "v": 3, "s": "c", "o": None, "w": None},
                    "right": {"k": "z", "v": None, "s": None, "o": None, "w": 3.5}}
    result = binder.run(q, late=True)
    assert [(r.input, r.arrival) for r in result.late] == [("left", 2), ("right", 2)]
    assert result.late[1].payload == Q("z", 3.5)


def test_a_cti_row_with_a_null_time_is_a_bad_row_of_kind_cti(spark: SparkSession) -> None:
    # a CTI row carries only its time: without one it is a bad row (Spark only: the reference's
    # sq.Cti needs a time), with no payload; the CTI row at 20 after it still applies
    items = [sq.Insert(10, 11, P(1, 1, "a", None)), NullCti(), sq.Cti(20), sq.Insert(15, 16, P(2, 2, "b", None))]
    binder, source = points_binder(spark, items, None, arrival=True)
    result = binder.run(source, late=True)
    assert (result.dropped, result.bad_rows) == (1, 1)
    assert [(r.arrival, r.action, r.kind, r.start, r.cti, r.payload) for r in result.late] == [
        (1, "bad_row", "CTI", None, None, None), (3, "dropped", "INSERT", t(15), t(20), P(2, 2, "b", None))]
    assert result.late[0].reason is not None
    rows = sorted(binder.late(source).collect(), key=lambda r: r["arrival"])
    assert [(r["kind"], r["payload"]) for r in rows] == [("CTI", None), ("INSERT", T.Row(k=2, v=2, s="b", o=None))]


@pytest.mark.parametrize("format", ["parquet", "csv"])
def test_write_puts_the_late_records_at_late_path(spark: SparkSession, tmp_path: Path, format: str) -> None:
    items = [sq.Insert(10, 11, P(1, 1, "a", None)), sq.Insert(20, 21, P(2, 2, "b", None)),
             sq.Insert(15, 16, P(3, 3, "c", 7)), sq.Insert(30, 31, P(4, 4, "d", None))]
    binder, source = points_binder(spark, items, EVERY_2)
    out, late_path = str(tmp_path / "out"), str(tmp_path / "late")
    result = binder.write(source, out, format=format, late_path=late_path)
    assert result.dropped == 1
    reader = spark.read.format(format)
    if format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    rows = reader.load(late_path).collect()
    assert len(rows) == 1
    row = rows[0].asDict()
    assert row["action"] == "dropped" and row["arrival"] == 2
    assert (row["payload_s"] if format == "csv" else row["payload"]["s"]) == "c"
    if format == "parquet" and tuple(int(p) for p in spark.version.split(".")[:2]) >= (4, 2):
        import pyarrow.parquet as pq  # microseconds, not INT96 (docs/decisions.md, "Parquet timestamps")

        assert str(pq.read_table(late_path).schema.field("cti").type) == "timestamp[us, tz=UTC]"
    with pytest.raises(BindingError, match="late_path .* already exists"):
        binder.write(source, str(tmp_path / "out2"), format=format, late_path=late_path)
    assert not (tmp_path / "out2").exists()


# --- the hand-worked cases of support/late_cases.py --------------------------------------------


#: every case but ``bad_point``: a POINT input on Spark is bound with a start column only, so an end
#: that is not one tick after the start cannot be given
SPARK_CASES = [c for c in CASES if c.name != "bad_point"]


#: the default tier's cases that run in the deep tier only: the other policy or shape of a case the
#: default tier runs (docs/decisions.md, "Continuous integration's time")
DEEP = ("late_intervals_under_adjust", "late_points_under_adjust", "late_edges_under_drop",
        "an_adjustment_that_empties_an_edge_event_is_one_dropped_record")


@pytest.mark.parametrize("case", tiered(SPARK_CASES, deep=DEEP, name=lambda c: c.name, named=True))
def test_hand_worked_late_case_on_spark(spark: SparkSession, case: Case) -> None:
    """Each case's records (without reasons), counts and INTERVAL output on Spark, every input bound
    with an ``arrival`` column (the list position: the reference's one clock, imports included) and
    its rows shuffled over two partitions."""
    streams = {name: sq.input(name, Reading, side.shape) for name, side in case.sides.items()}
    binder = sq.Binder(spark)
    for seed, (name, side) in enumerate(case.sides.items()):
        df = frame(spark, Reading, side.shape, side.items, partitions=2, arrival=True, seed=seed)
        binder = bind(binder, streams[name], df, side.shape, side.settings, arrival=True, bad_rows=side.bad_rows)
    result = binder.run(case.query(streams), late=True)
    assert without_reason(result.late) == without_reason(case.late)
    assert (result.dropped, result.adjusted, result.bad_rows) == case.counts
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (t(s), sq.INFINITY if e is None else t(e), p) for s, e, p in case.interval]


# --- several inputs, every kind of bad row -------------------------------------------------------


@st.composite
def with_every_bad_row(draw: st.DrawFn, items: list[Any], shape: sq.Shape) -> list[Any]:
    """``items`` with up to three items made bad rows, each of a kind drawn: a null in a payload field
    that is not Optional, a null start, a null end, an end at or before the start (an INTERVAL event
    or an end edge), or a CTI row with a null time put in (on Spark only: ``NullCti``). An EDGE input
    has unmatched end edges already (``edge_items``)."""
    out = list(items)
    for _ in range(draw(st.integers(0, 3), label="bad rows")):
        kind = draw(st.sampled_from(["null payload", "null start", "null end", "empty", "null cti"]), label="bad kind")
        position = draw(st.integers(0, len(out)), label="bad position")
        if kind == "null cti":
            out.insert(position, NullCti())
            continue
        if position == len(out) or not isinstance(out[position], (sq.Insert, sq.StartEdge, sq.EndEdge)):
            continue
        item = out[position]
        has_end = isinstance(item, sq.EndEdge) or (isinstance(item, sq.Insert) and shape is sq.Shape.INTERVAL)
        if kind == "null payload":
            out[position] = attrs.evolve(item, payload=dataclasses.replace(item.payload, k=cast(Any, None)))
        elif kind == "null start" and isinstance(item, sq.Insert) and shape is sq.Shape.POINT:
            # a POINT row has one time column: with it null, the event has no end either
            out[position] = attrs.evolve(cast(Any, item), start=None, end=None)
        elif kind == "null start":
            out[position] = attrs.evolve(item, start=None)
        elif kind == "null end" and has_end:
            out[position] = attrs.evolve(item, end=None)
        elif kind == "empty" and has_end and item.start is not None:  # (its start may be a bad row's already)
            out[position] = attrs.evolve(item, end=item.start - draw(st.integers(0, 2), label="before"))
    return out


def as_the_reference_sees(name: str, items: Sequence[Any]) -> tuple[list[Any], list[int], list[sq.Late]]:
    """The items without the CTI rows with a null time (the reference evaluator has no such item),
    where each of those left goes (its position on Spark), and the record Spark gives each."""
    kept = [position for position, item in enumerate(items) if not isinstance(item, NullCti)]
    null_ctis = [sq.Late(name, position, "bad_row", "CTI", None, None, None, None, None, None, "null CTI time")
                 for position, item in enumerate(items) if isinstance(item, NullCti)]
    return [items[position] for position in kept], kept, null_ctis


@settings(SPARK_EXAMPLES, max_examples=spark_examples(10))
@given(data=st.data())
def test_late_records_of_several_inputs_with_every_bad_row_on_spark(spark: SparkSession, data: st.DataObject) -> None:
    """A union of a POINT or INTERVAL input and an EDGE input (each through a pipeline), each with
    its own settings and bad rows of every kind: the records on Spark are the reference's — with the
    records of the CTI rows with a null time (kind ``"CTI"``, Spark only) added and the reference's
    arrivals mapped back to the positions on Spark — and the counts are the records'."""
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    sides = {"events": (shape, data.draw(with_every_bad_row(data.draw(side_by_side(inputs(shape)), label="events"), shape))),
             "edges": (sq.Shape.EDGE, data.draw(with_every_bad_row(data.draw(side_by_side(edge_items()), label="edges"),
                                                                      sq.Shape.EDGE)))}
    streams = {name: sq.input(name, P, side_shape) for name, (side_shape, _) in sides.items()}
    settings_ = {name: data.draw(advance_settings(), label=f"{name} settings") for name in sides}
    q = build(streams["events"], data.draw(pipelines(), label="events ops")).union(
        build(streams["edges"], data.draw(pipelines(), label="edges ops")))
    arrival = data.draw(st.booleans(), label="arrival columns")
    # no imports: the inputs are independent, so leaving an item out of one input's list (which
    # moves its later items on the reference's one clock) changes nothing else
    given_inputs, positions, expected_late = {}, {}, []
    for name, (_, items) in sides.items():
        reference_items, positions[name], null_ctis = as_the_reference_sees(name, items)
        given_inputs[name] = sq.reference.ReferenceInput(reference_items, settings_[name], bad_rows="drop")
        expected_late += null_ctis
    expected = sq.reference.run(q, given_inputs, late=True)
    check_counts(expected)
    expected_late += [attrs.evolve(r, arrival=positions[r.input][cast(int, r.arrival)]) for r in expected.late]
    binder = sq.Binder(spark)
    for seed, (name, (side_shape, items)) in enumerate(sides.items()):
        df = frame(spark, P, side_shape, items, partitions=data.draw(st.integers(1, 3), label="partitions"),
                   arrival=arrival, seed=seed)
        binder = bind(binder, streams[name], df, side_shape, settings_[name], arrival=arrival, bad_rows="drop")
    actual = binder.run(q, late=True)
    note(f"records: {actual.late}")
    check_counts(actual)
    assert sorted(without_reason(actual.late), key=lambda r: (r.input, r.arrival)) == sorted(
        without_reason(expected_late), key=lambda r: (r.input, r.arrival))
    null_cti_rows = sum(1 for _, items in sides.values() for item in items if isinstance(item, NullCti))
    assert actual == attrs.evolve(expected, late=actual.late, bad_rows=expected.bad_rows + null_cti_rows)
