"""As-of joins and signals (docs/as-of-joins.md): the nodes of ``as_of_join`` and
``to_signal``.

An as-of join looks *back*: each left event meets the latest matching right event that started
at or before it, whatever that event's end. A signal turns events into a step function per key:
each event lasts until the next event of its key starts. Stability and CTIs: docs/decisions.md
("As-of joins and signals").
"""
from __future__ import annotations

import attrs

from streamql.errors import ExpressionError
from streamql.expr.nodes import Expr
from streamql.query.joins import Binary, equality_keys
from streamql.query.nodes import Projected, Unary


@attrs.frozen(cache_hash=True)
class AsOfJoin(Projected, Binary):
    """Each left event joined with the right events for which ``on`` holds that have the latest
    start at or before the left event's start (all of them when several share it), at most
    ``within`` microseconds before it (``None``: any distance); the output has the left event's
    lifetime and the payload ``projection`` of both. A left event with no such right event gives
    nothing. ``on`` has at least one equality key (``joins.equality_keys``). The output CTI is the
    lesser of the inputs' (``Binary``)."""

    on: Expr
    projection: Expr
    within: int | None

    def __attrs_post_init__(self) -> None:
        if not equality_keys(self.on):
            raise ExpressionError(
                f"as_of_join needs an equality of a left and a right field in on (e.g. lambda l, r: "
                f"l.symbol == r.symbol, possibly & other conditions), got {self.on.show()}: the latest "
                "event is looked up per key")
        if self.within is not None and self.within < 0:
            raise ExpressionError(f"as_of_join needs a within of zero or more, got {self.within} µs")

    @property
    def may_be_open(self) -> bool:
        return self.left.may_be_open


@attrs.frozen(cache_hash=True)
class ToSignal(Unary):
    """Each event lives from its start to the next later start of an event with the same ``key``
    (an expression of the payload; null keys are one key, as in ``group_by``), ``INFINITY`` until
    there is one; events of one key at one start all get that lifetime. StreamInsight's idiom
    ``alter_duration(INFINITY)`` then ``clip`` by the stream itself on the key. The output CTI is
    the input CTI."""

    key: Expr

    @property
    def may_be_open(self) -> bool:
        return True
