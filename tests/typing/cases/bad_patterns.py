"""Mistakes in patterns: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Order:
    order_id: int
    total: float


@dataclasses.dataclass(frozen=True)
class Payment:
    order_id: int
    paid: float


@dataclasses.dataclass(frozen=True)
class Paid:
    order_id: int
    paid: float


orders = sq.input("orders", Order)
payments = sq.input("payments", Payment)

# misspelled fields in on or select
a = orders.followed_by(payments, lambda o, p: o.order_id == p.order, lambda o, p: Paid(o.order_id, p.paid))  # E: "Payment" has no attribute "order"
b = orders.followed_by(payments, lambda o, p: o.order_id == p.order_id, lambda o, p: Paid(o.order_id, o.paid))  # E: "Order" has no attribute "paid"

# select of the wrong payload type, or of no payload; on that is not a condition
c: sq.Stream[Paid] = orders.followed_by(payments, lambda o, p: True, lambda o, p: Order(o.order_id, p.paid))  # E: Argument 3 to "followed_by" of "Stream" has incompatible type  # E: Incompatible return value type (got "Order", expected "Paid")
d = orders.followed_by(payments, lambda o, p: True, lambda o, p: p.paid)  # E: Value of type variable "Payload" of "followed_by" of "Stream" cannot be "float"
e = orders.followed_by(payments, lambda o, p: o.total, lambda o, p: Paid(o.order_id, p.paid))  # E: Argument 2 to "followed_by" of "Stream" has incompatible type  # E: Incompatible return value type (got "float", expected "bool")

# within is a timedelta and not_followed_by needs one; all_matches is a bool
f = orders.followed_by(payments, lambda o, p: True, lambda o, p: Paid(o.order_id, p.paid), within=15)  # E: Argument "within" to "followed_by" of "Stream" has incompatible type "int"; expected "timedelta | None"
g = orders.not_followed_by(payments, lambda o, p: o.order_id == p.order_id)  # E: Missing positional argument "within" in call to "not_followed_by" of "Stream"
h = orders.followed_by(payments, lambda o, p: True, lambda o, p: Paid(o.order_id, p.paid), all_matches="yes")  # E: Argument "all_matches" to "followed_by" of "Stream" has incompatible type "str"; expected "bool"

# not_followed_by keeps the left payload type
i: sq.Stream[Payment] = orders.not_followed_by(payments, lambda o, p: o.order_id == p.order_id, timedelta(minutes=15))  # E: Incompatible types in assignment (expression has type "Stream[Order]", variable has type "Stream[Payment]")
