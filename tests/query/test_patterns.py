"""Building patterns: the nodes (values: equal queries are equal), ``explain``, and the errors
raised when such a query is built (a condition that is no condition, a ``within`` that is not a
positive timedelta, a ``select`` that builds no payload, ...)."""
from __future__ import annotations

from datetime import timedelta

import pytest

import streamql as sq
from streamql.errors import ExpressionError
from streamql.expr.nodes import Literal
from streamql.query.patterns import FollowedBy, NotFollowedBy
from support.pattern_cases import Event, Match, us

A = sq.input("a", Event, sq.Shape.POINT)
B = sq.input("b", Event, sq.Shape.INTERVAL)


def test_the_nodes_are_values() -> None:
    def build() -> sq.Stream[Match]:
        return A.followed_by(B, lambda x, y: x.key == y.key, lambda x, y: Match(x.key, x.n, y.n),
                             within=timedelta(milliseconds=3))
    q = build()
    assert q == build() and hash(q) == hash(build())
    assert isinstance(q.node, FollowedBy) and q.node.within == 3000 and not q.node.all_matches
    assert q.node.may_be_open is False  # points, whatever the inputs
    assert q != A.followed_by(B, lambda x, y: x.key == y.key, lambda x, y: Match(x.key, x.n, y.n),
                              within=timedelta(milliseconds=3), all_matches=True)
    anything = A.followed_by(B, lambda x, y: True, lambda x, y: Match(x.key, x.n, y.n))
    assert isinstance(anything.node, FollowedBy) and anything.node.on == Literal(anything.node.on.type, True)
    assert anything.node.within is None
    absent = A.not_followed_by(B, lambda x, y: x.key == y.key, us(5))
    assert isinstance(absent.node, NotFollowedBy) and absent.node.within == 5 and absent.node.schema == A.node.schema
    assert absent.node.may_be_open is False and absent == A.not_followed_by(B, lambda x, y: x.key == y.key, us(5))


def test_explain_shows_the_arguments_and_the_cti_rules() -> None:
    q = A.followed_by(B, lambda x, y: x.key == y.key, lambda x, y: Match(x.key, x.n, y.n), within=timedelta(minutes=10),
                      all_matches=True).not_followed_by(B, lambda m, y: True, timedelta(minutes=15))
    lines = q.explain().splitlines()
    assert lines[:4] == [
        "not_followed_by(on=True, within=0:15:00) -> Match",
        "│   CTI: the lesser of the left CTI moved by 0:15:00 and the right CTI",
        "├── followed_by(on=(x.key == y.key), select=Match(key=x.key, a=x.n, b=y.n), within=0:10:00, "
        "all_matches=True) -> Match",
        "│   │   CTI: the least of the inputs' CTIs",
    ]


# --- errors ------------------------------------------------------------------------------------------

def test_bad_arguments_name_the_operator_and_the_argument() -> None:
    a, b = sq.input("a", Event), sq.input("b", Event)
    pair = lambda x, y: Match(x.key, x.n, y.n)  # noqa: E731
    with pytest.raises(ExpressionError, match="followed_by needs a condition"):
        a.followed_by(b, None, pair)  # type: ignore[arg-type]
    with pytest.raises(ExpressionError, match="followed_by takes a query"):
        a.followed_by(42, lambda x, y: True, pair)  # type: ignore[arg-type]
    with pytest.raises(ExpressionError, match="followed_by needs a positive within"):
        a.followed_by(b, lambda x, y: True, pair, timedelta(0))
    with pytest.raises(ExpressionError, match="followed_by needs a positive within"):
        a.followed_by(b, lambda x, y: True, pair, timedelta(seconds=-1))
    with pytest.raises(ExpressionError, match="within must be a timedelta"):
        a.followed_by(b, lambda x, y: True, pair, 5)  # type: ignore[arg-type]
    with pytest.raises(ExpressionError, match="followed_by on needs a bool expression"):
        a.followed_by(b, lambda x, y: x.n + y.n, pair)  # type: ignore[arg-type, return-value]
    with pytest.raises(ExpressionError, match="is_null"):
        a.followed_by(b, lambda x, y: x.key is None, pair)
    with pytest.raises(ExpressionError, match="followed_by select must build a payload instance"):
        a.followed_by(b, lambda x, y: True, lambda x, y: x.n)  # type: ignore[type-var]
    with pytest.raises(ExpressionError, match="all_matches must be a bool"):
        a.followed_by(b, lambda x, y: True, pair, all_matches="yes")  # type: ignore[arg-type]
    with pytest.raises(ExpressionError, match="not_followed_by needs a positive within"):
        a.not_followed_by(b, lambda x, y: True, timedelta(0))
    with pytest.raises(ExpressionError, match="not_followed_by on needs a bool expression"):
        a.not_followed_by(b, lambda x, y: x.tag, us(3))  # type: ignore[arg-type, return-value]
    with pytest.raises(ExpressionError, match="not_followed_by: within must be a timedelta"):
        a.not_followed_by(b, lambda x, y: True, None)  # type: ignore[arg-type]
