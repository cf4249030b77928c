"""The time layer: microsecond conversions, INFINITY and saturating arithmetic (docs/time-model.md)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamql as sq
from streamql.time import (
    INFINITY_MICROS,
    MAX_MICROS,
    MAX_SPAN_MICROS,
    MIN_MICROS,
    duration_micros,
    from_micros,
    shift,
    to_micros,
)

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

finite_micros = st.integers(min_value=MIN_MICROS, max_value=MAX_MICROS)
aware_datetimes = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime.max - timedelta(microseconds=1), timezones=st.just(UTC)
)


def test_tick_and_infinity_constants() -> None:
    assert sq.TICK == timedelta(microseconds=1)
    assert sq.INFINITY == datetime.max.replace(tzinfo=UTC)
    assert INFINITY_MICROS == 2**63 - 1


def test_to_micros_of_known_instants() -> None:
    assert to_micros(EPOCH) == 0
    assert to_micros(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == 1_000_000
    assert to_micros(datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)) == -1
    # 2009-07-15 09:13:33.317 UTC (seed 000): 1247649213 s since the epoch, plus 317 ms
    assert to_micros(datetime(2009, 7, 15, 9, 13, 33, 317_000, tzinfo=UTC)) == 1_247_649_213_317_000


def test_to_micros_normalises_other_time_zones_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    # 02:00 at +02:00 is midnight UTC
    assert to_micros(datetime(1970, 1, 1, 2, 0, tzinfo=plus_two)) == 0


def test_integer_micros_pass_through() -> None:
    assert to_micros(0) == 0
    assert to_micros(-5) == -5
    assert to_micros(MAX_MICROS) == MAX_MICROS
    assert to_micros(MIN_MICROS) == MIN_MICROS


def test_infinity_mapping_both_ways() -> None:
    assert to_micros(sq.INFINITY) == INFINITY_MICROS
    assert from_micros(INFINITY_MICROS) == sq.INFINITY
    # datetime.max as integer micros, and anything past it, is INFINITY as well
    assert to_micros(MAX_MICROS + 1) == INFINITY_MICROS
    assert to_micros(INFINITY_MICROS) == INFINITY_MICROS
    assert from_micros(MAX_MICROS + 1) == sq.INFINITY
    # the greatest finite time is one tick before datetime.max
    assert from_micros(MAX_MICROS) == sq.INFINITY - sq.TICK
    assert to_micros(sq.INFINITY - sq.TICK) == MAX_MICROS


def test_aware_datetime_past_datetime_max_utc_is_infinity() -> None:
    # datetime.max at -01:00 is an hour after datetime.max UTC: it saturates to INFINITY
    late = datetime.max.replace(tzinfo=timezone(timedelta(hours=-1)))
    assert to_micros(late) == INFINITY_MICROS


def test_times_before_year_one_are_rejected() -> None:
    with pytest.raises(ValueError, match="year 1"):
        to_micros(MIN_MICROS - 1)
    # datetime.min at +01:00 is an hour before year 1 UTC
    with pytest.raises(ValueError, match="year 1"):
        to_micros(datetime.min.replace(tzinfo=timezone(timedelta(hours=1))))


def test_naive_datetime_is_rejected_naming_the_fix() -> None:
    with pytest.raises(ValueError, match="naive") as info:
        to_micros(datetime(2009, 7, 15, 9, 13), "start")
    assert "start" in str(info.value)
    assert "tzinfo=timezone.utc" in str(info.value)


def test_other_types_are_rejected() -> None:
    with pytest.raises(TypeError, match="bool"):
        to_micros(True)
    with pytest.raises(TypeError, match="float"):
        to_micros(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str"):
        to_micros("2009-07-15")  # type: ignore[arg-type]


def test_from_micros_is_utc_aware() -> None:
    t = from_micros(1_000_000)
    assert t == datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert t.tzinfo is UTC


@given(aware_datetimes)
def test_datetime_round_trip(t: datetime) -> None:
    assert from_micros(to_micros(t)) == t


@given(finite_micros)
def test_micros_round_trip(m: int) -> None:
    assert to_micros(from_micros(m)) == m


def test_duration_micros_clamps() -> None:
    assert duration_micros(timedelta(seconds=5)) == 5_000_000
    assert duration_micros(-sq.TICK) == -1
    assert duration_micros(timedelta.max) == MAX_SPAN_MICROS
    assert duration_micros(timedelta.min) == -MAX_SPAN_MICROS


def test_shift_examples() -> None:
    assert shift(10, 5) == 15
    assert shift(10, -15) == -5
    # INFINITY stays INFINITY, whichever way it is moved
    assert shift(INFINITY_MICROS, -1) == INFINITY_MICROS
    assert shift(INFINITY_MICROS, -MAX_SPAN_MICROS) == INFINITY_MICROS
    assert shift(INFINITY_MICROS, 1) == INFINITY_MICROS
    # past the greatest finite time is INFINITY
    assert shift(MAX_MICROS, 0) == MAX_MICROS
    assert shift(MAX_MICROS, 1) == INFINITY_MICROS
    assert shift(MAX_MICROS - 1, 1) == MAX_MICROS
    # before year 1 stops at year 1
    assert shift(MIN_MICROS, -1) == MIN_MICROS


def test_shift_by_huge_durations_clamps_without_overflowing_a_long() -> None:
    huge = duration_micros(timedelta.max)  # ~8.6e16 days' worth of micros, clamped
    assert shift(MIN_MICROS, huge) == INFINITY_MICROS
    assert shift(MAX_MICROS, -huge) == MIN_MICROS
    # an unclamped integer far beyond a long is clamped too
    assert shift(0, 10**30) == INFINITY_MICROS
    assert shift(0, -(10**30)) == MIN_MICROS
    for t in (MIN_MICROS, 0, MAX_MICROS):
        for d in (10**30, -(10**30), huge, -huge):
            assert -(2**63) <= shift(t, d) <= 2**63 - 1


@given(finite_micros, st.integers(min_value=-(10**20), max_value=10**20))
def test_shift_saturates(t: int, d: int) -> None:
    moved = shift(t, d)
    assert MIN_MICROS <= moved <= MAX_MICROS or moved == INFINITY_MICROS
    exact = t + d
    if MIN_MICROS <= exact <= MAX_MICROS:
        assert moved == exact
    elif exact > MAX_MICROS:
        assert moved == INFINITY_MICROS
    else:
        assert moved == MIN_MICROS


@given(st.integers(min_value=-(10**20), max_value=10**20))
def test_infinity_is_absorbing(d: int) -> None:
    assert shift(INFINITY_MICROS, d) == INFINITY_MICROS


@given(finite_micros, st.integers(min_value=0, max_value=10**20), st.integers(min_value=0, max_value=10**20))
def test_shift_is_monotone(t: int, a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    assert shift(t, lo) <= shift(t, hi)
    assert shift(t, -hi) <= shift(t, -lo)
