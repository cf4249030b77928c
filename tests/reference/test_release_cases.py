"""The release-rule cases an independent implementation of the rule found (tests/support/
release_cases.py), on the reference evaluator: every output shape, the counts and the final CTI."""
from __future__ import annotations

from typing import Any

import pytest

import streamql as sq
from streamql.time import from_micros
from support.release_cases import CASES, Case, ordered_edges


def inputs(case: Case) -> dict[str, sq.reference.ReferenceInput[Any]]:
    return {name: sq.reference.ReferenceInput(side.items, side.settings) for name, side in case.sides.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_the_reference(case: Case) -> None:
    q = case.built()
    interval = sq.reference.run(q, inputs(case))
    assert interval.events == case.expected_events()
    assert interval.final_cti == (None if case.final_cti is None else from_micros(case.final_cti))
    assert (interval.dropped, interval.adjusted) == (case.dropped, case.adjusted)
    assert sq.reference.run(q, inputs(case), sq.Shape.POINT).events == case.expected_points()
    assert ordered_edges(sq.reference.run(q, inputs(case), sq.Shape.EDGE).edges) == ordered_edges(case.expected_edges())
