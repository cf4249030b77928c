"""The release-rule cases an independent implementation of the rule found (tests/support/
release_cases.py), on Spark: every output shape, the counts and the final CTI — the same
assertions as tests/reference/test_release_cases.py."""
from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.time import from_micros
from support.depth import tiered
from support.frames import bind, frame, run_in_shapes
from support.release_cases import CASES, Case, ordered_edges


def binder(spark: SparkSession, case: Case) -> sq.Binder:
    """Every input of ``case`` bound to a DataFrame of its items (with arrival columns when the
    case asks for them: one clock, as the reference's list positions)."""
    bound, streams = sq.Binder(spark), case.streams()
    for seed, (name, side) in enumerate(case.sides.items()):
        df = frame(spark, case.payload, side.shape, side.items, arrival=case.arrival, seed=seed)
        bound = bind(bound, streams[name], df, side.shape, side.settings, arrival=case.arrival)
    return bound


@pytest.mark.parametrize("case", tiered(CASES, deep={c.name for c in CASES if c.deep}, name=lambda c: c.name,
                                        named=True))
def test_case_on_spark(spark: SparkSession, case: Case) -> None:
    q: sq.Stream[Any] = case.built()
    interval, point, edge = run_in_shapes(binder(spark, case), q, sq.Shape.INTERVAL, sq.Shape.POINT, sq.Shape.EDGE)
    assert interval.events == case.expected_events()
    assert interval.final_cti == (None if case.final_cti is None else from_micros(case.final_cti))
    assert (interval.dropped, interval.adjusted) == (case.dropped, case.adjusted)
    assert point.events == case.expected_points()
    assert ordered_edges(edge.edges) == ordered_edges(case.expected_edges())
