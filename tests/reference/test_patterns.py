"""``followed_by`` and ``not_followed_by`` in the reference evaluator: the hand-worked cases of
``support/pattern_cases.py`` (Esper's ``every a -> b`` family, Flink CEP's order not followed by its
payment within 15 minutes, ties, chains, a stream followed by itself, CTIs that release part of
it) and the output CTI rules (the errors of the fluent API: tests/query/test_patterns.py)."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import streamql as sq
from streamql.events import InputItem
from streamql.time import to_micros
from support.pattern_cases import CASES, Case, Event, Match, us


def _run(case: Case) -> sq.Result[Any]:
    streams = {name: sq.input(name, Event, side.shape) for name, side in case.sides.items()}
    inputs = {name: sq.reference.ReferenceInput(list(side.items), side.settings) for name, side in case.sides.items()}
    return sq.reference.run(case.query(streams), inputs, output=sq.Shape.POINT)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hand_worked_case(case: Case) -> None:
    result = _run(case)
    assert sorted([(to_micros(e.start), e.payload) for e in result.events], key=repr) == sorted(case.points, key=repr)
    assert (None if result.final_cti is None else to_micros(result.final_cti)) == case.final_cti


def test_the_output_cti_of_not_followed_by_moves_the_left_cti_by_within() -> None:
    orders, payments = sq.input("orders", Event), sq.input("payments", Event)
    q = orders.not_followed_by(payments, lambda o, p: o.key == p.key, us(15))
    assert q.node.output_cti((10, 100)) == 25 and q.node.output_cti((10, 20)) == 20
    assert q.node.output_cti((None, 20)) is None and q.node.output_cti((sq.time.INFINITY_MICROS, 7)) == 7
    assert q.node.output_cti((sq.time.INFINITY_MICROS, sq.time.INFINITY_MICROS)) == sq.time.INFINITY_MICROS
    f = orders.followed_by(payments, lambda o, p: o.key == p.key, lambda o, p: Match(o.key, o.n, p.n), us(15))
    assert f.node.output_cti((10, 100)) == 10


def test_a_within_beyond_the_end_of_time_saturates() -> None:
    # within as long as timedelta allows: followed_by is as without within; every absence would be at
    # INFINITY, which is no time: there is none; the output CTI reaches INFINITY with the right CTI
    a, b = sq.input("a", Event), sq.input("b", Event)
    forever = timedelta.max
    items: list[InputItem[Event]] = [sq.Insert(1, 2, Event("A", 1, "x")), sq.Insert(5, 6, Event("B", 2, "x")), sq.Cti(7)]
    inputs = {"a": sq.reference.ReferenceInput(items), "b": sq.reference.ReferenceInput(items)}
    matched = sq.reference.run(a.followed_by(b, lambda x, y: x.tag < y.tag, lambda x, y: Match(x.key, x.n, y.n),
                                             forever), inputs)
    assert [(to_micros(e.start), e.payload) for e in matched.events] == [(5, Match("x", 1, 2))]
    absent = sq.reference.run(a.not_followed_by(b, lambda x, y: x.tag > y.tag, forever), inputs)
    assert absent.events == [] and absent.final_cti is not None and to_micros(absent.final_cti) == 7
