"""The multi-stream seed examples shared by the reference and the Spark seed tests: SQLstream's
ordered merge of two streams P and Q (seed 004) and StreamInsight's fast-data / slow-reference join
(seed 001)."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import streamql as sq
from streamql.events import InputItem

UTC = timezone.utc
TICK = sq.TICK


def point(start: datetime, payload: Any) -> sq.Insert[Any]:
    return sq.Insert(start, start + TICK, payload)


# --- seed 004: the ordered merge of two streams ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    stream: str


def hm(hh: int, mm: int) -> datetime:
    return datetime(2024, 5, 1, hh, mm, tzinfo=UTC)


P = sq.input("P", Row, shape=sq.Shape.POINT)
Q = sq.input("Q", Row, shape=sq.Shape.POINT)
MERGED = P.union(Q)
# The seed's table did not survive; its text gives the rows: P at 1:00, 1:03 and 1:06, Q at 1:01,
# 1:02 and 1:04 ("It cannot output '1:06 from P' ... there may be an earlier row from Q").
P_ROWS: list[InputItem[Row]] = [point(hm(1, 0), Row("P")), point(hm(1, 3), Row("P")), point(hm(1, 6), Row("P"))]
Q_ROWS: list[InputItem[Row]] = [point(hm(1, 1), Row("Q")), point(hm(1, 2), Row("Q")), point(hm(1, 4), Row("Q"))]
# Each row bounds its stream's later rowtimes. SQLstream's merge outputs a row as soon as no input
# can still bring an earlier one; in the CTI model that is a CTI just after the row (StreamInsight's
# "negative delay of one tick"), so that the row itself lies before the CTI.
ROWTIME_BOUNDS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-TICK))


# --- seed 001: the fast-data / slow-reference join -----------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    watts: int


@dataclasses.dataclass(frozen=True)
class MeterSite:
    meter: str
    site: str


@dataclasses.dataclass(frozen=True)
class SiteReading:
    meter: str
    site: str
    watts: int


def at(second: float) -> datetime:
    """12:00:00 + ``second`` seconds on 2024-05-01 (UTC)."""
    return datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC) + timedelta(seconds=second)


DATA = sq.input("dataStream", Reading, shape=sq.Shape.POINT)
LOOKUP = sq.input("lookupStream", MeterSite, shape=sq.Shape.INTERVAL)
JOINED = DATA.join(LOOKUP, lambda r, m: r.meter == m.meter, lambda r, m: SiteReading(r.meter, m.site, r.watts))
# "the application time handling of the fast stream is considered to happen in the adapter": the
# data stream carries its own CTI rows, one tick after each reading
DATA_ITEMS: list[InputItem[Reading]] = [
    point(at(10), Reading("m1", 100)), sq.Cti(at(10) + TICK),
    point(at(20), Reading("m2", 250)), sq.Cti(at(20) + TICK),
    point(at(30), Reading("m1", 200)), sq.Cti(at(30) + TICK),
]
# the slow reference data: which site each meter is at; m1 moves from north to east at 12:00:25
LOOKUP_ITEMS: list[InputItem[MeterSite]] = [
    sq.Insert(at(0), at(3600), MeterSite("m2", "south")),
    sq.Insert(at(0), at(25), MeterSite("m1", "north")),
    sq.Insert(at(25), at(3600), MeterSite("m1", "east")),
]
#: "the slow input stream is synchronized to the fast stream by importing its CTIs"
IMPORT = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("dataStream"), policy=sq.AdvanceTimePolicy.ADJUST)
