"""Building as-of joins and signals: the nodes (values: equal queries are equal), ``explain``,
and the errors raised when such a query is built (an ``on`` without an equality key, a negative
``within``, a ``select`` that builds no payload, ...)."""
from __future__ import annotations

from datetime import timedelta

import pytest

import streamql as sq
from streamql.query.as_of import AsOfJoin, ToSignal
from support.as_of_cases import Pair, Tick

TRADES = sq.input("left", Tick, sq.Shape.POINT)
QUOTES = sq.input("right", Tick, sq.Shape.POINT)


def test_the_nodes_are_values() -> None:
    def build() -> sq.Stream[Pair]:
        return TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, lambda l, r: Pair(l.sym, l.px, r.px),
                                 within=timedelta(milliseconds=3))
    q = build()
    assert q == build() and hash(q) == hash(build())
    assert isinstance(q.node, AsOfJoin) and q.node.within == 3000
    assert q.node.may_be_open is False  # the left events' lifetimes: points here
    assert q != TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, lambda l, r: Pair(l.sym, l.px, r.px))
    signal = QUOTES.to_signal(lambda q: q.sym)
    assert isinstance(signal.node, ToSignal) and signal.node.may_be_open
    assert signal == QUOTES.to_signal(lambda q: q.sym) and signal != QUOTES.to_signal(lambda q: q.px)


def test_explain_shows_the_arguments_and_the_cti_rules() -> None:
    q = TRADES.as_of_join(QUOTES, lambda t, q: t.sym == q.sym, lambda t, q: Pair(t.sym, t.px, q.px),
                          within=timedelta(seconds=5)).to_signal(lambda p: p.sym)
    lines = q.explain().splitlines()
    assert lines[:3] == [
        "to_signal(p.sym) -> Pair",
        "│   CTI: the input CTI",
        "└── as_of_join(on=(t.sym == q.sym), select=Pair(sym=t.sym, left=t.px, right=q.px), within=0:00:05) -> Pair",
    ]
    assert lines[3] == "    │   CTI: the least of the inputs' CTIs"


# --- errors ------------------------------------------------------------------------------------------

def test_as_of_join_needs_an_equality_key() -> None:
    with pytest.raises(sq.ExpressionError, match="needs an equality of a left and a right field"):
        TRADES.as_of_join(QUOTES, lambda l, r: l.px > r.px, lambda l, r: Pair(l.sym, l.px, r.px))
    # an equality of one side with a constant, or within one side, is no key; an equality under | is none either
    for on in (lambda l, r: l.sym == "a", lambda l, r: (l.px == l.px) & (r.px > 0),
               lambda l, r: (l.sym == r.sym) | (l.px > r.px)):
        with pytest.raises(sq.ExpressionError, match="equality"):
            TRADES.as_of_join(QUOTES, on, lambda l, r: Pair(l.sym, l.px, r.px))


def test_as_of_join_arguments_are_checked() -> None:
    select = lambda l, r: Pair(l.sym, l.px, r.px)  # noqa: E731
    with pytest.raises(sq.ExpressionError, match="needs a predicate"):
        TRADES.as_of_join(QUOTES, None, select)  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match="within of zero or more"):
        TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, select, within=timedelta(seconds=-1))
    with pytest.raises(sq.ExpressionError, match="within must be a timedelta"):
        TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, select, within=5)  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match="must build a payload instance"):
        TRADES.as_of_join(QUOTES, lambda l, r: l.sym == r.sym, lambda l, r: l.px)  # type: ignore[type-var]
    with pytest.raises(sq.ExpressionError, match="takes a query"):
        TRADES.as_of_join([], lambda l, r: l.sym == r.sym, select)  # type: ignore[arg-type]
    with pytest.raises(sq.ExpressionError, match="needs a bool expression"):
        TRADES.as_of_join(QUOTES, lambda l, r: l.px + r.px, select)  # type: ignore[arg-type, return-value]


def test_to_signal_needs_an_expression_of_the_payload() -> None:
    with pytest.raises(sq.ExpressionError, match="returned the plain Python value"):
        QUOTES.to_signal(lambda q: 3)
    with pytest.raises(sq.ExpressionError, match="Tick has no field 'symbol'"):
        QUOTES.to_signal(lambda q: q.symbol)  # type: ignore[attr-defined]


