"""Reusable query fragments: functions from typed streams to typed streams compose like queries.

Must pass ``mypy --strict`` with no error.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Callable, TypeVar, Union

import attrs

import streamql as sq

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
# a fragment generic in what it selects needs its type variable bound to payload instances,
# as `Stream.select` is
P = TypeVar("P", bound="Union[DataclassInstance, attrs.AttrsInstance]")


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int


@attrs.frozen
class Usage:
    meter: str
    kwh: float


@attrs.frozen
class Alert:
    meter: str
    level: str


def to_usage(readings: sq.Stream[Reading]) -> sq.Stream[Usage]:
    """Watt-hours to kilowatt-hours."""
    return readings.select(lambda e: Usage(e.meter, e.consumption / 1000))


def high(usage: sq.Stream[Usage], threshold: float) -> sq.Stream[Usage]:
    """A fragment with a plain parameter, captured by the lambda as a constant."""
    return usage.where(lambda u: u.kwh > threshold)


def alerts(usage: sq.Stream[Usage]) -> sq.Stream[Alert]:
    return usage.select(lambda u: Alert(u.meter, sq.if_(u.kwh > 10.0, "critical", "warning")))


def held_for(d: timedelta) -> Callable[[sq.Stream[T]], sq.Stream[T]]:
    """A generic fragment factory: works on a stream of any payload type."""

    def apply(s: sq.Stream[T]) -> sq.Stream[T]:
        return s.alter_duration(d).shift(-sq.TICK)

    return apply


def project(s: sq.Stream[T], f: Callable[[T], P]) -> sq.Stream[P]:
    return s.to_point().select(f)


def compose(f: Callable[[sq.Stream[Reading]], sq.Stream[Usage]],
            g: Callable[[sq.Stream[Usage]], sq.Stream[Alert]]) -> Callable[[sq.Stream[Reading]], sq.Stream[Alert]]:
    return lambda s: g(f(s))


readings = sq.input("readings", Reading)
pipeline: sq.Stream[Alert] = alerts(high(to_usage(readings), 5.0))
held_readings: sq.Stream[Reading] = held_for(timedelta(minutes=10))(readings)
held_alerts: sq.Stream[Alert] = held_for(timedelta(minutes=1))(pipeline)
projected: sq.Stream[Alert] = project(readings, lambda e: Alert(e.meter, "info"))
composed: sq.Stream[Alert] = compose(to_usage, alerts)(readings)
fragments: list[Callable[[sq.Stream[Usage]], sq.Stream[Usage]]] = [
    lambda s: high(s, 1.0),
    held_for(timedelta(seconds=5)),
    lambda s: s.to_point(),
]
same = pipeline == alerts(high(to_usage(readings), 5.0))  # queries are values
