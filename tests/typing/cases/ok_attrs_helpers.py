"""Well-typed queries over attrs payloads, using the expression helpers inside lambdas.

``sq.if_``, ``sq.is_in``, ``sq.is_null``, ``sq.coalesce``, ``sq.greatest``, ``sq.least`` and
``sq.length`` are typed as the Python values they stand for, so their results fit payload
fields and conditions. Must pass ``mypy --strict`` with no error.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Optional

import attrs

import streamql as sq


@attrs.frozen
class Trade:
    symbol: str
    price: float
    bid: float
    ask: float
    volume: int
    venue: Optional[str] = None
    fallback_venue: Optional[str] = None


@attrs.define
class Quote:
    symbol: str
    spread: float
    side: str
    venue: str


@attrs.frozen
class Flagged:
    symbol: str
    big: bool
    unknown_venue: bool
    symbol_length: int
    capped_volume: int


trades: sq.Stream[Trade] = sq.input("trades", Trade, shape=sq.Shape.POINT)

# conditions built from helpers are bool
listed = trades.where(lambda t: sq.is_in(t.symbol, ["MSFT", "AAPL", "GOOG"]))
known = trades.where(lambda t: sq.is_null(t.venue) == False)  # noqa: E712 - traced, not Python truth
no_venue = trades.where(lambda t: sq.is_null(t.venue))
short = trades.where(lambda t: sq.length(t.symbol) <= 4)
big_side = trades.where(lambda t: sq.greatest(t.bid, t.ask) > 100.0)
some_venue = trades.where(lambda t: sq.coalesce(t.venue, t.fallback_venue, "OTC") == "XNAS")

# helper results fit payload fields of the matching type
quotes: sq.Stream[Quote] = trades.select(
    lambda t: Quote(
        symbol=t.symbol,
        spread=sq.greatest(t.bid, t.ask) - sq.least(t.bid, t.ask),
        side=sq.if_(t.price >= t.ask, "buy", "sell"),
        venue=sq.coalesce(t.venue, "OTC"),
    )
)
flagged: sq.Stream[Flagged] = trades.select(
    lambda t: Flagged(
        t.symbol,
        sq.if_(t.volume > 1000, True, False),
        sq.is_null(t.venue),
        sq.length(t.symbol),
        sq.least(t.volume, 10_000),
    )
)

# an attrs payload through the lifetime operators
held: sq.Stream[Quote] = (
    quotes.alter_duration(lambda q: sq.if_(q.spread > 1.0, timedelta(minutes=5), timedelta(minutes=1)))
    .alter_lifetime(start_shift=timedelta(0), duration=timedelta(minutes=2))
    .shift(timedelta(milliseconds=250))
    .to_point()
)
