"""Mistakes in window queries: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Optional

import streamql as sq

HOUR = timedelta(hours=1)


@dataclasses.dataclass(frozen=True)
class Trade:
    symbol: str
    price: float
    qty: int
    venue: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Count:
    n: int


@dataclasses.dataclass(frozen=True)
class Label:
    text: str


@dataclasses.dataclass(frozen=True)
class SymbolCount:
    symbol: str
    n: int


class TimeWeightedAverage(sq.UserAggregate[float, tuple[float, float], float]):
    result_type = float

    def zero(self) -> tuple[float, float]:
        return (0.0, 0.0)

    def add(self, acc: tuple[float, float], value: float, start: datetime, end: datetime) -> tuple[float, float]:
        return (acc[0] + value * (end - start).total_seconds(), acc[1] + (end - start).total_seconds())

    def result(self, acc: tuple[float, float]) -> float:
        return acc[0] / acc[1]


trades = sq.input("trades", Trade)
hourly = trades.tumbling_window(HOUR)
per_symbol = trades.group_by(lambda e: e.symbol).tumbling_window(HOUR)

# a misspelled field inside an aggregate's lambda
a = hourly.select(lambda w: Count(w.sum(lambda e: e.qtty)))  # E: "Trade" has no attribute "qtty"; maybe "qty"?

# aggregate arguments of the wrong type: sum takes int, float or Decimal; avg int or float
b = hourly.select(lambda w: Label(w.sum(lambda e: e.symbol)))  # E: Value of type variable "N" of "sum" of "Window" cannot be "str"
c = hourly.select(lambda w: Count(w.avg(lambda e: e.symbol)))  # E: Value of type variable "Fl" of "avg" of "Window" cannot be "str"  # E: Argument 1 to "Count" has incompatible type "str"; expected "int"
d = hourly.select(lambda w: Count(w.sum(lambda e: e.venue)))  # E: Value of type variable "N" of "sum" of "Window" cannot be "str | None"  # E: Argument 1 to "Count" has incompatible type "str | None"; expected "int"
e = per_symbol.select(lambda w: SymbolCount(w.key, w.count(lambda e: e.qty)))  # E: Too many arguments for "count" of "Window"

# a window's select must build a payload instance
f = hourly.select(lambda w: w.count())  # E: Value of type variable "Payload" of "select" of "Windowed" cannot be "int"
g = per_symbol.select(lambda w: w.key)  # E: Value of type variable "Payload" of "select" of "GroupedWindowed" cannot be "str"
h = trades.snapshot_window().select(lambda w: Count(w.count()), 1)  # E: Too many arguments for "select" of "Windowed"

# aggregate results into payload fields of another type
i = hourly.select(lambda w: Count(n=w.avg(lambda e: e.price)))  # E: Argument "n" to "Count" has incompatible type "float"; expected "int"
j = hourly.select(lambda w: Count(w.sum(lambda e: e.price)))  # E: Argument 1 to "Count" has incompatible type "float"; expected "int"
k = hourly.select(lambda w: Count(w.max(lambda e: e.venue)))  # E: Argument 1 to "Count" has incompatible type "str | None"; expected "int"
m = per_symbol.select(lambda w: Count(w.key))  # E: Argument 1 to "Count" has incompatible type "str"; expected "int"
wrong: sq.Stream[Label] = hourly.select(lambda w: Count(w.count()))  # E: Argument 1 to "select" of "Windowed" has incompatible type "Callable[[Window[Trade]], Count]"; expected "Callable[[Window[Trade]], Label]"  # E: Incompatible return value type (got "Count", expected "Label")

# user-defined aggregates: the value type and the result type are checked
n = hourly.select(lambda w: Count(w.aggregate(TimeWeightedAverage(), lambda e: e.symbol)))  # E: Argument 2 to "aggregate" of "Window" has incompatible type "Callable[[Trade], str]"; expected "Callable[[Trade], float]"  # E: Incompatible return value type (got "str", expected "float")  # E: Argument 1 to "Count" has incompatible type "float"; expected "int"
o = hourly.select(lambda w: Count(w.aggregate(TimeWeightedAverage(), lambda e: e.price)))  # E: Argument 1 to "Count" has incompatible type "float"; expected "int"

# group_apply: the result sees (key, payload of the sub-query); the sub-query must be a stream
q = trades.group_apply(lambda e: e.symbol, lambda s: s.count_window(2).select(lambda w: Count(w.count())), lambda symbol, c: SymbolCount(c.n, symbol))  # E: Argument 1 to "SymbolCount" has incompatible type "int"; expected "str"  # E: Argument 2 to "SymbolCount" has incompatible type "str"; expected "int"
r = trades.group_apply(lambda e: e.symbol, lambda s: s.count_window(2).select(lambda w: Count(w.count())), lambda symbol, c: SymbolCount(symbol, c.total))  # E: "Count" has no attribute "total"
t = trades.group_apply(lambda e: e.symbol, lambda s: s.count_window(2), lambda symbol, c: SymbolCount(symbol, 1))  # E: Argument 2 to "group_apply" of "Stream" has incompatible type "Callable[[Stream[Trade]], Windowed[Trade]]"  # E: Incompatible return value type (got "Windowed[Trade]", expected "Stream[Never]")

# window parameters
u = trades.tumbling_window(3600)  # E: Argument 1 to "tumbling_window" of "Stream" has incompatible type "int"; expected "timedelta"
v = trades.count_window(HOUR)  # E: Argument 1 to "count_window" of "Stream" has incompatible type "timedelta"; expected "int"

# a misspelled aggregate, on ungrouped and grouped windows; `w.key` on an ungrouped window
w1 = hourly.select(lambda w: Count(w.nosuch()))  # E: "Window[Trade]" has no attribute "nosuch"
w2 = per_symbol.select(lambda w: SymbolCount(w.key, w.cnt()))  # E: "GroupWindow[str, Trade]" has no attribute "cnt"
w3 = trades.snapshot_window().select(lambda w: Count(w.average(lambda e: e.qty)))  # E: "Window[Trade]" has no attribute "average"
w4 = hourly.select(lambda w: SymbolCount(w.key, w.count()))  # E: "Window[Trade]" has no attribute "key"

# Not caught by mypy (it raises sq.ExpressionError when the query is built): a group_apply
# result that returns a plain value rather than a payload (its type is then inferred as Any).
