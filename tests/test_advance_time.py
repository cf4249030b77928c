"""Advance-time settings (docs/ctis-and-release.md#where-ctis-come-from): valid values, and every invalid
combination rejected with ``ValueError`` at construction."""
from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import attrs
import pytest

import streamql as sq

SECOND = timedelta(seconds=1)


def test_defaults_and_valid_values() -> None:
    by_count = sq.AdvanceTimeGeneration(every_events=10, delay=timedelta(seconds=5), flush=True)
    assert (by_count.every_events, by_count.every, by_count.delay, by_count.flush) == (
        10, None, timedelta(seconds=5), True)
    by_time = sq.AdvanceTimeGeneration(every=SECOND)
    assert (by_time.every_events, by_time.every, by_time.delay, by_time.flush) == (None, SECOND, timedelta(0), False)
    # seed 001: "a negative delay of one tick" commits every point event as soon as it arrives
    assert sq.AdvanceTimeGeneration(every_events=1, delay=-sq.TICK).delay == -sq.TICK

    settings = sq.AdvanceTimeSettings(generation=by_count)
    assert settings.policy is sq.AdvanceTimePolicy.DROP and settings.import_ is None
    imported = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("fast"), policy=sq.AdvanceTimePolicy.ADJUST)
    assert imported.import_ == sq.AdvanceTimeImport(from_input="fast")
    both = sq.AdvanceTimeSettings(generation=by_time, import_=sq.AdvanceTimeImport("fast"))
    assert both.generation is by_time


def test_settings_are_frozen_values() -> None:
    a = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1))
    b = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1))
    assert a == b and hash(a) == hash(b)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.policy = sq.AdvanceTimePolicy.ADJUST  # type: ignore[misc]


def test_settings_need_generation_or_import() -> None:
    with pytest.raises(ValueError, match="needs generation=, import_= or both"):
        sq.AdvanceTimeSettings()
    with pytest.raises(ValueError, match="needs generation=, import_= or both"):
        sq.AdvanceTimeSettings(policy=sq.AdvanceTimePolicy.ADJUST)


@pytest.mark.parametrize("kwargs", [{}, {"delay": SECOND}, {"every_events": 1, "every": SECOND}])
def test_generation_needs_exactly_one_frequency(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly one of every_events= and every="):
        sq.AdvanceTimeGeneration(**kwargs)


@pytest.mark.parametrize("count", [0, -1, -10])
def test_every_events_must_be_positive(count: int) -> None:
    with pytest.raises(ValueError, match="every_events must be a positive int"):
        sq.AdvanceTimeGeneration(every_events=count)


@pytest.mark.parametrize("count", [1.0, True, "10", 2.5])
def test_every_events_must_be_an_int(count: object) -> None:
    with pytest.raises(ValueError, match="every_events must be a positive int"):
        sq.AdvanceTimeGeneration(every_events=cast(int, count))


@pytest.mark.parametrize("every", [timedelta(0), -sq.TICK, -SECOND])
def test_every_must_be_positive(every: timedelta) -> None:
    with pytest.raises(ValueError, match="every must be a positive timedelta"):
        sq.AdvanceTimeGeneration(every=every)


@pytest.mark.parametrize("every", [5, 1.5, "1s"])
def test_every_must_be_a_timedelta(every: object) -> None:
    with pytest.raises(ValueError, match="every must be a positive timedelta"):
        sq.AdvanceTimeGeneration(every=cast(timedelta, every))


@pytest.mark.parametrize("delay", [0, 5, None, "5s"])
def test_delay_must_be_a_timedelta(delay: object) -> None:
    with pytest.raises(ValueError, match="delay must be a timedelta"):
        sq.AdvanceTimeGeneration(every_events=1, delay=cast(timedelta, delay))


@pytest.mark.parametrize("name", ["", None, 3])
def test_import_needs_an_input_name(name: object) -> None:
    with pytest.raises(ValueError, match="from_input must be an input name"):
        sq.AdvanceTimeImport(cast(str, name))


def test_settings_reject_wrong_component_types() -> None:
    generation = sq.AdvanceTimeGeneration(every_events=1)
    with pytest.raises(ValueError, match="generation must be an AdvanceTimeGeneration"):
        sq.AdvanceTimeSettings(generation=cast(sq.AdvanceTimeGeneration, sq.AdvanceTimeImport("x")))
    with pytest.raises(ValueError, match="import_ must be an AdvanceTimeImport"):
        sq.AdvanceTimeSettings(generation=generation, import_=cast(sq.AdvanceTimeImport, "other"))
    with pytest.raises(ValueError, match="import_ must be an AdvanceTimeImport"):
        sq.AdvanceTimeSettings(import_=cast(sq.AdvanceTimeImport, generation))
    with pytest.raises(ValueError, match="policy must be an AdvanceTimePolicy"):
        sq.AdvanceTimeSettings(generation=generation, policy=cast(sq.AdvanceTimePolicy, "DROP"))


@pytest.mark.parametrize("flush", ["no", 1, None])
def test_flush_must_be_a_bool(flush: object) -> None:
    with pytest.raises(ValueError, match="flush must be a bool"):
        sq.AdvanceTimeGeneration(every_events=1, flush=cast(bool, flush))
