"""Application time: the microsecond chronon, ``INFINITY`` and saturating arithmetic.

Internally every time is an ``int`` of microseconds since the Unix epoch (UTC), which is
exactly Spark's ``TimestampType`` resolution. ``INFINITY`` is the greatest time: it is
``Long.MaxValue`` inside and ``datetime.max`` (UTC) outside. Arithmetic saturates:
moving or extending an open event keeps it open, and nothing overflows a 64-bit long.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Union

TICK: timedelta = timedelta(microseconds=1)
INFINITY: datetime = datetime.max.replace(tzinfo=timezone.utc)

INFINITY_MICROS: int = 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: the greatest finite time: one tick before ``datetime.max``, which stands for INFINITY
MAX_MICROS: int = (INFINITY - _EPOCH) // TICK - 1
#: the least time a ``datetime`` can show
MIN_MICROS: int = (datetime.min.replace(tzinfo=timezone.utc) - _EPOCH) // TICK
#: durations are clamped to this span before adding: any larger shift saturates anyway,
#: and clamping first keeps ``time + duration`` inside a 64-bit long
MAX_SPAN_MICROS: int = MAX_MICROS - MIN_MICROS + 1

TimeLike = Union[datetime, int]


def to_micros(t: TimeLike, what: str = "time") -> int:
    """Converts a tz-aware ``datetime`` or integer microseconds to internal microseconds.

    >>> to_micros(datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
    1000000
    """
    if isinstance(t, bool):
        raise TypeError(f"{what} must be a tz-aware datetime or integer microseconds, not bool")
    if isinstance(t, int):
        if t >= MAX_MICROS + 1:
            return INFINITY_MICROS
        if t < MIN_MICROS:
            raise ValueError(f"{what} {t} is before the least representable time (year 1)")
        return t
    if isinstance(t, datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError(
                f"{what} {t!r} is a naive datetime: application times are UTC instants; "
                "attach a time zone, e.g. t.replace(tzinfo=timezone.utc)"
            )
        # Saturate exactly as integer input does: an aware datetime in another zone can lie
        # past datetime.max UTC (it is INFINITY, not a finite time beyond it) or before year 1
        # UTC (an error), and INFINITY itself must map to Long.MaxValue.
        micros = (t - _EPOCH) // TICK
        if micros < MIN_MICROS:
            raise ValueError(f"{what} {t!r} is before the least representable time (year 1, UTC)")
        return to_micros(micros, what)
    raise TypeError(f"{what} must be a tz-aware datetime or integer microseconds, not {type(t).__name__}")


def from_micros(t: int) -> datetime:
    """Converts internal microseconds to a tz-aware UTC ``datetime`` (``INFINITY`` for the open end)."""
    if t >= MAX_MICROS + 1:
        return INFINITY
    return _EPOCH + timedelta(microseconds=t)


def duration_micros(d: timedelta) -> int:
    """A ``timedelta`` in whole microseconds, clamped to the span of representable times."""
    micros = d // TICK
    return max(-MAX_SPAN_MICROS, min(MAX_SPAN_MICROS, micros))


def shift(t: int, d: int) -> int:
    """``t + d`` with saturation: ``INFINITY`` stays ``INFINITY``; results past the greatest
    finite time become ``INFINITY``; results before year 1 stop at year 1."""
    if t == INFINITY_MICROS:
        return INFINITY_MICROS
    d = max(-MAX_SPAN_MICROS, min(MAX_SPAN_MICROS, d))
    moved = t + d
    if moved > MAX_MICROS:
        return INFINITY_MICROS
    return max(MIN_MICROS, moved)
