"""Sketches: a few evenly spaced order statistics of a unit's values, from which the driver merges
approximate quantiles without a job of their own. The arrival-order scan's summary pass sketches
each scan unit's arrival values and event starts (``streamql.spark.ingress.scan``); the arrival
numbering takes its ranges from the former, the ranges of ungrouped windows take their borders
from the latter (``streamql.spark.windows.snapshot.range_borders``). Ranges only spread the work:
any borders give the same result, so a rough sketch is as exact as a fine one.

>>> quantiles([(100, sketch(np.arange(100)))], [0.5])  # doctest: +SKIP
[50]
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: how many order statistics a unit's sketch keeps
SKETCH_POINTS = 32


def sketch(values: np.ndarray, points: int = SKETCH_POINTS) -> list[int]:
    """Evenly spaced order statistics of ``values`` (all of them, sorted, when there are at most
    ``points``): the value at the middle of each of ``points`` equal shares of the sorted values."""
    values = values.astype(np.int64)
    if len(values) <= points:
        return [int(v) for v in np.sort(values)]
    at = ((np.arange(points) * 2 + 1) * len(values)) // (2 * points)
    # the order statistics alone (a selection, not a sort: a tenth of the time on millions of values)
    return [int(v) for v in np.partition(values, at)[at]]


#: sketches of several units' values: per unit, its count of values and its ``sketch``
Sketches = tuple[tuple[int, tuple[int, ...]], ...]


def quantiles(sketches: Sequence[tuple[int, Sequence[int]]], probabilities: list[float]) -> list[int]:
    """Approximate quantiles of the values of several units from their sketches (each a count of
    values and its ``sketch``): each point stands for an equal share of its unit's values. A unit
    with ``n`` values sketched by ``k`` points errs by at most ``n / k`` ranks. Values of the
    sketches only, so every quantile is a value of the data; none without values."""
    values: list[int] = []
    weights: list[float] = []
    for count, points in sketches:
        values += list(points)
        weights += [count / len(points)] * len(points) if points else []
    if not values:
        return []
    order = np.argsort(np.asarray(values, dtype=np.int64), kind="stable")
    ordered = np.asarray(values, dtype=np.int64)[order]
    cumulative = np.cumsum(np.asarray(weights)[order])
    last = len(ordered) - 1
    return [int(ordered[min(int(np.searchsorted(cumulative, p * cumulative[-1])), last)]) for p in probabilities]
