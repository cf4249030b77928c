"""Well-typed patterns: ``followed_by`` (with and without ``within``, ``all_matches``, no condition
at all, a stream followed by itself, chains) builds the payload its ``select`` returns,
``not_followed_by`` keeps the left payload type, and both compose with the other operators.

Must pass ``mypy --strict`` with no error (and runs: the queries are also valid at runtime).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import assert_type

import attrs

import streamql as sq
from streamql.reference import ReferenceInput

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


@dataclasses.dataclass(frozen=True)
class Withdrawal:
    account: str
    amount: float


@attrs.frozen
class Order:
    order_id: int
    total: float


@dataclasses.dataclass(frozen=True)
class Payment:
    order_id: int
    paid: float


@dataclasses.dataclass(frozen=True)
class Twice:
    account: str
    first: float
    second: float


@dataclasses.dataclass(frozen=True)
class Count:
    n: int


withdrawals = sq.input("withdrawals", Withdrawal)
orders = sq.input("orders", Order)
payments = sq.input("payments", Payment)

# followed_by: on sees (a, b), select builds the output payload
twice = withdrawals.followed_by(withdrawals, lambda a, b: a.account == b.account,
                                lambda a, b: Twice(a.account, a.amount, b.amount), within=10 * MINUTE)
assert_type(twice, sq.Stream[Twice])
every = withdrawals.followed_by(withdrawals, lambda a, b: True, lambda a, b: Twice(a.account, a.amount, b.amount),
                                all_matches=True)
assert_type(every, sq.Stream[Twice])
larger: sq.Stream[Twice] = withdrawals.followed_by(
    withdrawals, lambda a, b: (a.account == b.account) & (b.amount > a.amount),
    lambda a, b: Twice(account=a.account, first=a.amount, second=b.amount))
# a chain: the output of a pattern is a stream
thrice: sq.Stream[Twice] = twice.followed_by(withdrawals, lambda t, c: t.account == c.account,
                                             lambda t, c: Twice(t.account, t.first + t.second, c.amount), 10 * MINUTE)

# not_followed_by keeps the left payload type
unpaid = orders.not_followed_by(payments, lambda o, p: o.order_id == p.order_id, within=15 * MINUTE)
assert_type(unpaid, sq.Stream[Order])

# they compose with windows
per_hour: sq.Stream[Count] = unpaid.tumbling_window(60 * MINUTE).select(lambda w: Count(w.count()))

# results are typed
result: sq.Result[Order] = sq.reference.run(unpaid, {
    "orders": ReferenceInput([sq.Insert(T0, T0 + sq.TICK, Order(1, 9.5)), sq.Cti(T0 + 20 * MINUTE)]),
    "payments": ReferenceInput([sq.Cti(T0 + 20 * MINUTE)])})
totals: list[float] = [e.payload.total for e in result.events]
assert totals == [9.5]
