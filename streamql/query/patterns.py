"""Patterns (docs/patterns.md): the nodes of ``followed_by`` and ``not_followed_by``.

Esper's ``every a -> b(...)`` on the temporal model. Every left event ``a`` starts its own match;
its *partners* are the right events ``b`` for which ``on(a, b)`` holds that start strictly after
``a`` starts and, with ``within``, less than ``within`` after it. Only the events' starts matter:
their ends play no part. Each output is a point event. Stability and CTIs: docs/decisions.md
("Patterns (issue 26)").
"""
from __future__ import annotations

import attrs

from streamql.errors import ExpressionError
from streamql.expr.nodes import Expr
from streamql.query.joins import Binary, least_cti
from streamql.query.nodes import Projected
from streamql.time import shift


@attrs.frozen(cache_hash=True)
class FollowedBy(Projected, Binary):
    """Each left event matched with its partners that have the earliest start (all of them when
    several share it: Esper's ``every a -> b``), or with every partner (``all_matches``: ``every a
    -> every b``); ``within``: the partners start less than that many microseconds after the left
    event (``None``: any time after). Each match is a point event at the partner's start with the
    payload ``projection`` of both. The output CTI is the lesser of the inputs' (``Binary``).

    >>> FollowedBy(left, right, on, projection, within=600_000_000, all_matches=False)  # doctest: +SKIP
    """

    on: Expr
    projection: Expr
    within: int | None
    all_matches: bool

    def __attrs_post_init__(self) -> None:
        if self.within is not None and self.within <= 0:
            raise ExpressionError(f"followed_by needs a positive within, got {self.within} µs")

    @property
    def may_be_open(self) -> bool:
        return False


@attrs.frozen(cache_hash=True)
class NotFollowedBy(Binary):
    """Each left event that has no partner (a right event for which ``on`` holds starting strictly
    after it and less than ``within`` microseconds after it) gives a point event at its start plus
    ``within`` with its own payload (none where that reaches ``INFINITY``). The output CTI is the
    lesser of the left CTI moved by ``within`` and the right CTI: a left event still to come starts
    at or after the left CTI, so its absence is reported ``within`` after that or later.

    >>> NotFollowedBy(orders, payments, on, within=900_000_000)  # doctest: +SKIP
    """

    on: Expr
    within: int

    def __attrs_post_init__(self) -> None:
        if self.within <= 0:
            raise ExpressionError(f"not_followed_by needs a positive within, got {self.within} µs")

    def output_cti(self, input_ctis: tuple[int | None, ...]) -> int | None:
        left, right = input_ctis
        return least_cti((None if left is None else shift(left, self.within), right))

    @property
    def may_be_open(self) -> bool:
        return False
