"""Well-typed window queries: windowed and grouped selects, ``w.key``, aggregates as typed
expressions, user-defined aggregates, composed aggregates and ``group_apply``.

Must pass ``mypy --strict`` with no error (and runs: the queries are also valid at runtime).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Callable, Optional, TypeVar, cast

import attrs

import streamql as sq
from streamql.reference import ReferenceInput

T = TypeVar("T")
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


@dataclasses.dataclass(frozen=True)
class Trade:
    symbol: str
    price: float
    qty: int
    fee: Decimal
    at: datetime
    venue: Optional[str] = None
    rebate: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class Summary:
    trades: int
    volume: int
    turnover: float
    vwap: float
    mean_price: float
    fees: Decimal
    first: datetime
    spread: float
    busy: bool


@attrs.frozen
class SymbolSummary:
    symbol: str
    trades: int
    high: float


@dataclasses.dataclass(frozen=True)
class VenueCount:
    venue: Optional[str]
    trades: int


@dataclasses.dataclass(frozen=True)
class Rebates:
    total: Optional[float]
    lowest: Optional[float]


@dataclasses.dataclass(frozen=True)
class Weighted:
    symbol: str
    price: Optional[float]


@dataclasses.dataclass(frozen=True)
class Count:
    n: int


@dataclasses.dataclass(frozen=True)
class SymbolCount:
    symbol: str
    n: int


class TimeWeightedAverage(sq.UserAggregate[float, tuple[float, float], Optional[float]]):
    """Each value weighs by how long it holds within the window."""

    result_type = Optional[float]

    def zero(self) -> tuple[float, float]:
        return (0.0, 0.0)

    def add(self, acc: tuple[float, float], value: float, start: datetime, end: datetime) -> tuple[float, float]:
        seconds = (end - start).total_seconds()
        return (acc[0] + value * seconds, acc[1] + seconds)

    def result(self, acc: tuple[float, float]) -> Optional[float]:
        return acc[0] / acc[1] if acc[1] else None


def spread(w: sq.Window[T], f: Callable[[T], float]) -> float:
    """A composition of built-ins: a plain function of the window."""
    return w.max(f) - w.min(f)


trades: sq.Stream[Trade] = sq.input("trades", Trade)

# every window kind, with several typed aggregates and arithmetic on them
windowed: sq.Windowed[Trade] = trades.tumbling_window(HOUR)
hourly: sq.Stream[Summary] = windowed.select(lambda w: Summary(
    trades=w.count(),
    volume=w.sum(lambda e: e.qty),
    turnover=w.sum(lambda e: e.price * e.qty),
    vwap=w.sum(lambda e: e.price * e.qty) / w.sum(lambda e: e.qty),
    mean_price=w.avg(lambda e: e.price),
    fees=w.sum(lambda e: e.fee),
    first=w.min(lambda e: e.at),
    spread=spread(w, lambda e: e.price),
    busy=w.count() > 100,
))
snapshot = trades.alter_duration(timedelta(minutes=3)).snapshot_window().select(
    lambda w: Count(w.count()))
hopping = trades.hopping_window(HOUR, timedelta(minutes=15)).select(lambda w: Count(w.count() * 2 + 1))
counted: sq.Stream[Count] = trades.count_window(10).select(lambda w: Count(w.sum(lambda e: e.qty) // w.count()))

# grouped windows: w.key has the key's type
grouped: sq.Grouped[str, Trade] = trades.group_by(lambda e: e.symbol)
per_symbol: sq.GroupedWindowed[str, Trade] = grouped.snapshot_window()
symbols: sq.Stream[SymbolSummary] = per_symbol.select(
    lambda w: SymbolSummary(symbol=w.key, trades=w.count(), high=w.max(lambda e: e.price)))
by_venue = trades.group_by(lambda e: e.venue).count_window(3).select(lambda w: VenueCount(w.key, w.count()))
by_size = trades.group_by(lambda e: e.qty > 1000).hopping_window(HOUR, HOUR).select(
    lambda w: Count(sq.if_(w.key, w.count(), 0)))
upper = trades.group_by(lambda e: e.symbol.upper()).tumbling_window(HOUR).select(
    lambda w: SymbolCount(w.key, w.count()))

# nullable values: min/max keep them; sum/avg take them through a cast (nulls are skipped)
rebates = trades.tumbling_window(HOUR).select(lambda w: Rebates(
    total=w.sum(lambda e: cast(float, e.rebate)), lowest=w.min(lambda e: e.rebate)))

# user-defined aggregates: statically their result_type
weighted: sq.Stream[Weighted] = trades.group_by(lambda e: e.symbol).tumbling_window(HOUR).select(
    lambda w: Weighted(w.key, w.aggregate(TimeWeightedAverage(), lambda e: e.price)))


def weighted_price(w: sq.Window[Trade]) -> Optional[float]:
    return w.aggregate(TimeWeightedAverage(), lambda e: e.price)


also_weighted = trades.tumbling_window(HOUR).select(lambda w: Rebates(weighted_price(w), None))


# a fragment generic in the payload
def counts(s: sq.Stream[T]) -> sq.Stream[Count]:
    return s.tumbling_window(HOUR).select(lambda w: Count(w.count()))


# group_apply: the sub-query sees Stream[Trade], result sees (key, sub-query payload)
per_group: sq.Stream[SymbolCount] = trades.group_apply(
    lambda e: e.symbol, counts, lambda symbol, c: SymbolCount(symbol, c.n))
filtered = trades.group_apply(
    lambda e: e.symbol,
    lambda s: s.where(lambda e: e.qty > 0).count_window(2).select(lambda w: Count(w.count())),
    lambda symbol, c: SymbolCount(symbol=symbol, n=c.n))


def per_venue(s: sq.Stream[Trade]) -> sq.Stream[VenueCount]:
    return s.group_apply(lambda e: e.venue, counts, lambda venue, c: VenueCount(venue, c.n))


nested: sq.Stream[SymbolCount] = trades.group_apply(
    lambda e: e.symbol, per_venue, lambda symbol, v: SymbolCount(symbol, v.trades))

# results are typed
items: list[sq.Insert[Trade] | sq.Cti] = [
    sq.Insert(T0, T0 + sq.TICK, Trade("XYZ", 10.5, 100, Decimal("0.1"), T0)),
    sq.Cti(T0 + HOUR),
]
result: sq.Result[SymbolSummary] = sq.reference.run(symbols, {"trades": ReferenceInput(items)})
highs: list[float] = [e.payload.high for e in result.events]
