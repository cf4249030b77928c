"""Well-typed as-of joins and signals: ``as_of_join`` (with and without ``within``, with conditions
beside the equality key) builds the payload its ``select`` returns, ``to_signal`` keeps the payload
type, and both compose with the other operators.

Must pass ``mypy --strict`` with no error (and runs: the queries are also valid at runtime).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Optional

import attrs

import streamql as sq
from streamql.reference import ReferenceInput

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SECOND = timedelta(seconds=1)


@dataclasses.dataclass(frozen=True)
class Trade:
    symbol: str
    size: int
    limit: Optional[float] = None


@attrs.frozen
class Quote:
    symbol: str
    bid: float


@dataclasses.dataclass(frozen=True)
class Priced:
    symbol: str
    size: int
    bid: float


@dataclasses.dataclass(frozen=True)
class Total:
    notional: float


trades: sq.Stream[Trade] = sq.input("trades", Trade)
quotes: sq.Stream[Quote] = sq.input("quotes", Quote)

# as_of_join: on sees (left, right), select builds the output payload
priced: sq.Stream[Priced] = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol,
                                              lambda t, q: Priced(t.symbol, t.size, q.bid))
recent: sq.Stream[Priced] = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol,
                                              lambda t, q: Priced(t.symbol, t.size, q.bid), within=5 * SECOND)
below_limit: sq.Stream[Priced] = trades.as_of_join(
    quotes, lambda t, q: (t.symbol == q.symbol) & (q.bid <= sq.coalesce(t.limit, 1e9)),
    lambda t, q: Priced(symbol=t.symbol, size=t.size, bid=q.bid), within=SECOND)

# to_signal keeps the payload type, with a key of any type
signal: sq.Stream[Quote] = quotes.to_signal(lambda q: q.symbol)
by_band: sq.Stream[Quote] = quotes.to_signal(lambda q: q.bid // 10)
in_force: sq.Stream[Priced] = trades.join(signal, lambda t, q: t.symbol == q.symbol,
                                          lambda t, q: Priced(t.symbol, t.size, q.bid))

# they compose with windows and groups
notional: sq.Stream[Total] = priced.tumbling_window(SECOND).select(lambda w: Total(w.sum(lambda p: p.bid * p.size)))
# per symbol: each trade with the latest earlier trade of its size (a second before), as a price
per_symbol: sq.Stream[Priced] = trades.group_apply(
    lambda t: t.symbol, lambda s: s.as_of_join(s.shift(SECOND), lambda a, b: a.size == b.size,
                                               lambda a, b: Priced(a.symbol, a.size, b.size * 1.0)),
    lambda symbol, p: Priced(symbol, p.size, p.bid))

# results are typed
result: sq.Result[Priced] = sq.reference.run(priced, {
    "trades": ReferenceInput([sq.Insert(T0 + SECOND, T0 + SECOND + sq.TICK, Trade("a", 10)), sq.Cti(T0 + 2 * SECOND)]),
    "quotes": ReferenceInput([sq.Insert(T0, T0 + sq.TICK, Quote("a", 99.5)), sq.Cti(T0 + 2 * SECOND)])})
bids: list[float] = [e.payload.bid for e in result.events]
assert bids == [99.5]
