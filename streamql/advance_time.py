"""Advance-time settings: how an input gets CTIs and what happens to events that violate them.

Plain immutable values, validated at construction (as StreamInsight's
``AdvanceTimeGenerationSettings``, ``AdvanceTimeImportSettings`` and ``AdvanceTimePolicy``).
"""
from __future__ import annotations

from datetime import timedelta
from enum import Enum
from typing import Any

import attrs


class AdvanceTimePolicy(Enum):
    """What happens to an event that arrives after a CTI it violates.

    ``DROP`` removes it (an end edge is ignored: the event stays open); ``ADJUST`` moves its
    start (or an end edge's end) to the CTI, removing it only when nothing of it is left.
    """

    DROP = "DROP"
    ADJUST = "ADJUST"


def _positive_count(_: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError(f"AdvanceTimeGeneration.{attribute.name} must be a positive int, got {value!r}")


def _positive_duration(_: Any, attribute: attrs.Attribute[Any], value: timedelta | None) -> None:
    if value is not None and (not isinstance(value, timedelta) or value <= timedelta(0)):
        raise ValueError(f"AdvanceTimeGeneration.{attribute.name} must be a positive timedelta, got {value!r}")


def _is_timedelta(_: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, timedelta):
        raise ValueError(f"AdvanceTimeGeneration.{attribute.name} must be a timedelta, got {value!r}")


def _is_bool(_: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    # a truthy non-bool (flush="no") would silently turn flushing on
    if not isinstance(value, bool):
        raise ValueError(f"AdvanceTimeGeneration.{attribute.name} must be a bool, got {value!r}")


@attrs.frozen
class AdvanceTimeGeneration:
    """Generate a CTI after every ``every_events`` accepted events, or whenever the start time
    moved ``every`` past the previous trigger; the CTI lies ``delay`` behind the greatest start
    seen. ``flush=True`` adds a final CTI at ``sq.INFINITY`` after the last event.

    >>> AdvanceTimeGeneration(every_events=10, delay=timedelta(seconds=5), flush=True)
    AdvanceTimeGeneration(every_events=10, every=None, delay=datetime.timedelta(seconds=5), flush=True)
    """

    every_events: int | None = attrs.field(default=None, validator=_positive_count)
    every: timedelta | None = attrs.field(default=None, validator=_positive_duration)
    delay: timedelta = attrs.field(default=timedelta(0), validator=_is_timedelta)
    flush: bool = attrs.field(default=False, validator=_is_bool)

    def __attrs_post_init__(self) -> None:
        if (self.every_events is None) == (self.every is None):
            raise ValueError("AdvanceTimeGeneration needs exactly one of every_events= and every=")


@attrs.frozen
class AdvanceTimeImport:
    """Copy every CTI of another bound input (its final CTI included)."""

    from_input: str = attrs.field()

    @from_input.validator
    def _check(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError(f"AdvanceTimeImport.from_input must be an input name, got {value!r}")


@attrs.frozen
class AdvanceTimeSettings:
    """CTI generation and/or import for an input, and the policy for violating events.

    >>> AdvanceTimeSettings(generation=AdvanceTimeGeneration(every_events=1, delay=-TICK, flush=True),
    ...                     policy=AdvanceTimePolicy.ADJUST)  # doctest: +SKIP
    """

    generation: AdvanceTimeGeneration | None = None
    import_: AdvanceTimeImport | None = None
    policy: AdvanceTimePolicy = AdvanceTimePolicy.DROP

    def __attrs_post_init__(self) -> None:
        if self.generation is None and self.import_ is None:
            raise ValueError("AdvanceTimeSettings needs generation=, import_= or both")
        if self.generation is not None and not isinstance(self.generation, AdvanceTimeGeneration):
            raise ValueError(f"generation must be an AdvanceTimeGeneration, got {self.generation!r}")
        if self.import_ is not None and not isinstance(self.import_, AdvanceTimeImport):
            raise ValueError(f"import_ must be an AdvanceTimeImport, got {self.import_!r}")
        if not isinstance(self.policy, AdvanceTimePolicy):
            raise ValueError(f"policy must be an AdvanceTimePolicy, got {self.policy!r}")

    def without_flush(self) -> AdvanceTimeSettings:
        """These settings for a run that has not ended: no final INFINITY CTI."""
        if self.generation is None or not self.generation.flush:
            return self
        return attrs.evolve(self, generation=attrs.evolve(self.generation, flush=False))
