"""CTI import (``AdvanceTimeImport``, docs/ctis-and-release.md#3-import) on Spark against the reference evaluator.

The query reads only the importing input ("lookup"); the input it imports from ("data") is
bound too. Two clocks:

- without ``arrival`` columns on both inputs, the importer's events are taken to arrive before
  every imported CTI (reference data loaded first): imported CTIs never make its events late,
  they only govern release. In the reference evaluator (one clock: list positions) that is the
  data input's items placed after all of the lookup's, i.e. preceded by as many CTIs at a time
  before every event (which change nothing);
- with ``arrival`` columns on both, they are one clock: an imported CTI applies to the lookup
  events that arrive after it. ``support.frames`` puts the list position in ``arrival``, so the
  reference evaluator's positions are that clock.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from support.frames import bind, frame

UTC = timezone.utc
TICK = sq.TICK
ADJUST, DROP = sq.AdvanceTimePolicy.ADJUST, sq.AdvanceTimePolicy.DROP


@dataclass(frozen=True)
class Trade:
    symbol: str


@dataclass(frozen=True)
class Ref:
    v: int


DATA = sq.input("data", Trade, shape=sq.Shape.POINT)
LOOKUP = sq.input("lookup", Ref, shape=sq.Shape.INTERVAL)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def at(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def ev(start: int, end: int, v: int) -> sq.Event[Ref]:
    return sq.Event(at(start), at(end), Ref(v))


def pt(time: int, symbol: str) -> sq.Insert[Trade]:
    return sq.Insert(time, time + 1, Trade(symbol))


def imports(policy: sq.AdvanceTimePolicy, generation: sq.AdvanceTimeGeneration | None = None) -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(generation=generation, import_=sq.AdvanceTimeImport("data"), policy=policy)


EVERY_POINT = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))
# data: CTIs 10, 20 (after the points at 10 and 20), the point at 5 is late for CTI 20 and dropped
# (counted for data, which the query does not read), then CTI 30
DATA_ITEMS: list[InputItem[Trade]] = [pt(10, "a"), pt(20, "b"), pt(5, "late"), pt(30, "c")]
LOOKUP_ITEMS: list[InputItem[Ref]] = [
    sq.Insert(0, 100, Ref(1)),
    sq.Insert(5, 15, Ref(2)),
    sq.Insert(12, 25, Ref(3)),
    sq.Insert(40, 50, Ref(4)),
    sq.Insert(22, 35, Ref(5)),
]


def run_spark(spark: SparkSession, query: sq.Stream[Any], data: list[InputItem[Trade]], data_at: sq.AdvanceTimeSettings,
              lookup: list[InputItem[Ref]], lookup_at: sq.AdvanceTimeSettings, *, data_arrival: bool,
              lookup_arrival: bool) -> sq.Result[Any]:
    binder = bind(sq.Binder(spark), DATA, frame(spark, Trade, sq.Shape.POINT, data, partitions=2, arrival=data_arrival,
                                                seed=1), sq.Shape.POINT, data_at, arrival=data_arrival)
    binder = bind(binder, LOOKUP, frame(spark, Ref, sq.Shape.INTERVAL, lookup, partitions=2, arrival=lookup_arrival,
                                        seed=2), sq.Shape.INTERVAL, lookup_at, arrival=lookup_arrival)
    return binder.run(query)


def run_reference(query: sq.Stream[Any], data: list[InputItem[Trade]], data_at: sq.AdvanceTimeSettings,
                  lookup: list[InputItem[Ref]], lookup_at: sq.AdvanceTimeSettings, *, one_clock: bool) -> sq.Result[Any]:
    if not one_clock:
        # the lookup's events all arrive before the data's first item: CTIs at the least time
        # (before every event, so they change nothing) fill the data's first positions
        data = [*[sq.Cti(0) for _ in lookup], *data]
    return sq.reference.run(query, {"data": sq.reference.ReferenceInput(data, data_at),
                                    "lookup": sq.reference.ReferenceInput(lookup, lookup_at)})


# --- (a) no arrival columns: the lookup's events come before every imported CTI -----------------------


def test_without_arrival_columns_imported_ctis_only_govern_release(spark: SparkSession) -> None:
    result = run_spark(spark, LOOKUP, DATA_ITEMS, EVERY_POINT, LOOKUP_ITEMS, imports(ADJUST),
                       data_arrival=False, lookup_arrival=False)
    # no event of the lookup is late (they arrived first); its CTI is data's last, 30:
    # released are the events starting before 30
    assert result.events == [ev(0, 100, 1), ev(5, 15, 2), ev(12, 25, 3), ev(22, 35, 5)]
    assert (result.dropped, result.adjusted, result.final_cti) == (0, 0, at(30))
    assert result == run_reference(LOOKUP, DATA_ITEMS, EVERY_POINT, LOOKUP_ITEMS, imports(ADJUST), one_clock=False)
    # on one clock the same items give another result: the clocks really differ
    assert result != run_reference(LOOKUP, DATA_ITEMS, EVERY_POINT, LOOKUP_ITEMS, imports(ADJUST), one_clock=True)


def test_only_one_input_with_an_arrival_column_is_not_one_clock(spark: SparkSession) -> None:
    result = run_spark(spark, LOOKUP.select(lambda e: Ref(e.v * 10)), DATA_ITEMS, EVERY_POINT, LOOKUP_ITEMS,
                       imports(DROP), data_arrival=False, lookup_arrival=True)
    assert [e.payload.v for e in result.events] == [10, 20, 30, 50]
    assert (result.dropped, result.adjusted, result.final_cti) == (0, 0, at(30))


def test_own_generation_applies_before_the_import(spark: SparkSession) -> None:
    own = imports(DROP, sq.AdvanceTimeGeneration(every_events=2))
    lookup: list[InputItem[Ref]] = [sq.Insert(10, 20, Ref(1)), sq.Insert(40, 60, Ref(2)), sq.Insert(30, 35, Ref(3)),
                                    sq.Insert(70, 80, Ref(4)), sq.Insert(75, 90, Ref(5))]
    data: list[InputItem[Trade]] = [pt(95, "x"), sq.Cti(90)]
    result = run_spark(spark, LOOKUP, data, EVERY_POINT, lookup, own, data_arrival=False, lookup_arrival=False)
    # the lookup's own CTIs: 40 after its 2nd event, so [30, 35) is late and dropped; 75 after the
    # 4th accepted one ([70, 80)). Imported: data's CTIs 95 (generated) and the row 90 -> 95.
    # Final CTI max(75, 95) = 95: everything accepted is released
    assert result.events == [ev(10, 20, 1), ev(40, 60, 2), ev(70, 80, 4), ev(75, 90, 5)]
    assert (result.dropped, result.adjusted, result.final_cti) == (1, 0, at(95))
    assert result == run_reference(LOOKUP, data, EVERY_POINT, lookup, own, one_clock=False)


def test_seed_lookup_stream_synchronised_with_the_data_stream(spark: SparkSession) -> None:
    # seed 001: new AdvanceTimeSettings(null, new AdvanceTimeImportSettings("dataStream"), Adjust):
    # the slow lookup stream copies the fast data stream's CTIs (here: one tick after each point)
    def t(hh: int, mm: int, ss: int, ms: int) -> datetime:
        return datetime(2009, 7, 15, hh, mm, ss, ms * 1000, tzinfo=UTC)

    t1, t2, t3 = t(9, 13, 33, 317), t(9, 14, 9, 270), t(9, 14, 22, 255)
    data: list[InputItem[Trade]] = [sq.Insert(x, x + TICK, Trade("m")) for x in (t1, t2, t3)]
    data_at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-TICK))
    lookup: list[InputItem[Ref]] = [sq.Insert(t(9, 0, 0, 0), t(10, 0, 0, 0), Ref(1)),
                                    sq.Insert(t(9, 30, 0, 0), t(11, 0, 0, 0), Ref(2))]
    result = run_spark(spark, LOOKUP, data, data_at, lookup, imports(ADJUST), data_arrival=False, lookup_arrival=False)
    # released once the data stream's CTI (t3 + t at the end) passes their starts: only the first
    assert result.events == [sq.Event(t(9, 0, 0, 0), t(10, 0, 0, 0), Ref(1))]
    assert result.final_cti == t3 + TICK
    assert result == run_reference(LOOKUP, data, data_at, lookup, imports(ADJUST), one_clock=False)


# --- (b) arrival columns on both: one clock ---------------------------------------------------------------


@pytest.mark.parametrize(("policy", "expected", "counts"), [
    # pos 1: [5, 15) arrives after CTI 10 -> [10, 15); pos 2: [12, 25) after CTI 20 -> [20, 25);
    # pos 4: [22, 35) after CTI 30 -> [30, 35), which starts at the final CTI: not released
    (ADJUST, [ev(0, 100, 1), ev(10, 15, 2), ev(20, 25, 3)], (0, 3)),
    (DROP, [ev(0, 100, 1)], (3, 0)),
], ids=["ADJUST", "DROP"])
def test_one_clock_imported_ctis_make_later_events_late(spark: SparkSession, policy: sq.AdvanceTimePolicy,
                                                        expected: list[sq.Event[Ref]], counts: tuple[int, int]) -> None:
    result = run_spark(spark, LOOKUP, DATA_ITEMS, EVERY_POINT, LOOKUP_ITEMS, imports(policy),
                       data_arrival=True, lookup_arrival=True)
    assert result.events == expected
    # only the input the query reads is counted: data's dropped late point is not
    assert (result.dropped, result.adjusted, result.final_cti) == (*counts, at(30))
    assert result == run_reference(LOOKUP, DATA_ITEMS, EVERY_POINT, LOOKUP_ITEMS, imports(policy), one_clock=True)


def test_one_clock_with_the_imported_flush_and_cti_rows(spark: SparkSession) -> None:
    data_at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
    data: list[InputItem[Trade]] = [*DATA_ITEMS, sq.Cti(45)]
    lookup: list[InputItem[Ref]] = [*LOOKUP_ITEMS, sq.Insert(44, 47, Ref(6)), sq.Insert(41, 44, Ref(7)),
                                    sq.Insert(60, 70, Ref(8))]
    query = LOOKUP.where(lambda e: e.v != 4).alter_lifetime(timedelta(0), TICK * 2)
    result = run_spark(spark, query, data, data_at, lookup, imports(ADJUST), data_arrival=True, lookup_arrival=True)
    # as above, then pos 4 also brings data's CTI row 45 (after the lookup's [22, 35) -> [30, 35));
    # pos 5: [44, 47) -> [45, 47); pos 6: [41, 44) lies before 45: dropped; [60, 70) is on time.
    # The flush CTI (INFINITY) is imported too: everything accepted is released, 2 ticks long
    assert [(e.start, e.payload.v) for e in result.events] == [
        (at(0), 1), (at(10), 2), (at(20), 3), (at(30), 5), (at(45), 6), (at(60), 8)]
    assert all(e.end - e.start == TICK * 2 for e in result.events)
    assert (result.dropped, result.adjusted, result.final_cti) == (1, 4, sq.INFINITY)
    assert result == run_reference(query, data, data_at, lookup, imports(ADJUST), one_clock=True)
