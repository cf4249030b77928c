"""Mistakes in as-of joins and signals: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Trade:
    symbol: str
    size: int


@dataclasses.dataclass(frozen=True)
class Quote:
    symbol: str
    bid: float


@dataclasses.dataclass(frozen=True)
class Priced:
    symbol: str
    size: int
    bid: float


trades = sq.input("trades", Trade)
quotes = sq.input("quotes", Quote)

# misspelled fields in on or select
a = trades.as_of_join(quotes, lambda t, q: t.symbol == q.sym, lambda t, q: Priced(t.symbol, t.size, q.bid))  # E: "Quote" has no attribute "sym"
b = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol, lambda t, q: Priced(t.symbol, t.sise, q.bid))  # E: "Trade" has no attribute "sise"

# select of the wrong payload type, or of no payload; on that is not a condition
c: sq.Stream[Priced] = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol, lambda t, q: Trade(t.symbol, t.size))  # E: Argument 3 to "as_of_join" of "Stream" has incompatible type  # E: Incompatible return value type (got "Trade", expected "Priced")
d = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol, lambda t, q: q.bid)  # E: Value of type variable "Payload" of "as_of_join" of "Stream" cannot be "float"
e = trades.as_of_join(quotes, lambda t, q: t.symbol, lambda t, q: Priced(t.symbol, t.size, q.bid))  # E: Argument 2 to "as_of_join" of "Stream" has incompatible type  # E: Incompatible return value type (got "str", expected "bool")

# within is a timedelta; on is required
f = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol, lambda t, q: Priced(t.symbol, t.size, q.bid), within=5)  # E: Argument "within" to "as_of_join" of "Stream" has incompatible type "int"; expected "timedelta | None"
g = trades.as_of_join(quotes, None, lambda t, q: Priced(t.symbol, t.size, q.bid))  # E: Argument 2 to "as_of_join" of "Stream" has incompatible type "None"

# to_signal keeps the payload type; its key reads the payload
h: sq.Stream[Priced] = quotes.to_signal(lambda q: q.symbol)  # E: Incompatible types in assignment (expression has type "Stream[Quote]", variable has type "Stream[Priced]")
i = quotes.to_signal(lambda q: q.symbl)  # E: "Quote" has no attribute "symbl"; maybe "symbol"?
j = quotes.to_signal(timedelta(seconds=1))  # E: Argument 1 to "to_signal" of "Stream" has incompatible type "timedelta"
