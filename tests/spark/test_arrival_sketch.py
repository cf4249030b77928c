"""The arrival values' sketches (``base.sketches.sketch``/``quantiles``): the summary pass in
storage order keeps a few order statistics of each unit's arrival values, and where storage order
is not arrival order the numbering takes its ranges from them instead of a quantile job. Ranges
only balance the scan units; these tests check that the quantiles are as close as promised."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamql.spark.base.sketches import quantiles, sketch


def test_a_short_unit_is_sketched_by_all_its_values() -> None:
    assert sketch(np.array([5, 1, 3, 1])) == [1, 1, 3, 5]
    assert sketch(np.array([], dtype=np.int64)) == []


def test_a_long_unit_is_sketched_by_the_middles_of_equal_shares() -> None:
    # 100 values in 4 shares of 25: the middles are the 12th, 37th, 62nd and 87th (0-based)
    assert sketch(np.arange(100)[::-1], points=4) == [12, 37, 62, 87]


def test_quantiles_of_units_weigh_each_point_by_its_units_share() -> None:
    # unit a: 2 values sketched exactly; unit b: 400 values, 4 points standing for 100 each
    units = [(2, [0, 1]), (400, [100, 200, 300, 400])]
    assert quantiles(units, [0.25, 0.5, 0.75]) == [100, 200, 300]
    assert quantiles([(0, [])], [0.5]) == []


@settings(max_examples=200, deadline=None)
@given(units=st.lists(st.lists(st.integers(0, 10_000), min_size=1, max_size=300), min_size=1, max_size=6),
       points=st.integers(1, 40))
def test_each_quantile_is_within_a_share_per_unit_of_its_rank(units: list[list[int]], points: int) -> None:
    everything = np.sort(np.concatenate([np.array(u) for u in units]))
    total = len(everything)
    sketches = [(len(u), sketch(np.array(u), points)) for u in units]
    # each unit errs by at most one share (n / k values), plus one for the rounding of ranks
    slack = sum(len(u) / max(1, min(points, len(u))) + 1 for u in units)
    probabilities = [i / 8 for i in range(1, 8)]
    for p, q in zip(probabilities, quantiles(sketches, probabilities)):
        assert q in set(everything.tolist())
        below, at_or_below = int(np.sum(everything < q)), int(np.sum(everything <= q))
        assert below - slack <= p * total <= at_or_below + slack, (p, q, below, at_or_below, slack)
