"""Where a run's time goes: wall time and Spark jobs per phase (the scan's passes, planning, the
output's job), for the benchmarks and for users asking why a query is slow.

Nothing is recorded unless a ``recording`` block is active (then each phase's jobs run in a Spark
job group of its own, which replaces the caller's while the phase runs). A phase inside another
is charged its own time and jobs only; the outer phase gets the rest.

>>> with recording(spark) as phases:  # doctest: +SKIP
...     binder.write(q, "/tmp/out")
>>> print(phases.table())  # doctest: +SKIP
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

import attrs
from streamql.spark.runtime.connect import AnySession
from streamql.spark.runtime.jobs import JobCount, counting_jobs


@attrs.define
class Phase:
    """The time and jobs one phase took (summed over its occurrences)."""

    name: str
    seconds: float = 0.0
    jobs: int | None = 0  # None on a Spark Connect session
    times: int = 0


@attrs.define
class Phases:
    """The phases recorded by ``recording``, in the order they first ran."""

    spark: AnySession = attrs.field(repr=False)
    by_name: dict[str, Phase] = attrs.field(factory=dict)

    def add(self, name: str, seconds: float, jobs: int | None) -> None:
        phase = self.by_name.setdefault(name, Phase(name))
        phase.seconds += seconds
        phase.jobs = None if phase.jobs is None or jobs is None else phase.jobs + jobs
        phase.times += 1

    @property
    def jobs(self) -> int | None:
        """The jobs of all phases (``None`` on a Spark Connect session, which cannot count them)."""
        counts = [p.jobs for p in self.by_name.values()]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    def table(self) -> str:
        """One line: ``name seconds (jobs)`` per phase (only ``name seconds`` where jobs are not
        counted)."""
        return ", ".join(f"{p.name} {p.seconds:.2f} s" + ("" if p.jobs is None else
                                                           f" ({p.jobs} job{'s' if p.jobs != 1 else ''})")
                         for p in self.by_name.values())


_CURRENT: ContextVar[Phases | None] = ContextVar("streamql_phases", default=None)


@contextmanager
def recording(spark: AnySession) -> Iterator[Phases]:
    """Records the phases of the runs in the block (what is outside any phase is ``other``)."""
    phases = Phases(spark)
    token = _CURRENT.set(phases)
    try:
        with phase("other"):
            yield phases
    finally:
        _CURRENT.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Charges the block's time and jobs to phase ``name`` while a ``recording`` is active."""
    phases = _CURRENT.get()
    if phases is None:
        yield
        return
    with _own_time(phases, name) as count, counting_jobs(phases.spark, f"streamql: {name}") as jobs:
        count.append(jobs)
        yield


_OPEN: ContextVar[tuple[list[float], ...]] = ContextVar("streamql_open_phases", default=())


@contextmanager
def _own_time(phases: Phases, name: str) -> Iterator[list[JobCount]]:
    """The block's wall time minus its nested phases' (each open phase holds [own seconds, since])."""
    now = time.perf_counter()
    outer = _OPEN.get()
    if outer:
        outer[-1][0] += now - outer[-1][1]  # the enclosing phase pauses
    mine = [0.0, now]
    token = _OPEN.set(outer + (mine,))
    counted: list[JobCount] = []
    try:
        yield counted
    finally:
        end = time.perf_counter()
        mine[0] += end - mine[1]
        _OPEN.reset(token)
        if outer:
            outer[-1][1] = end  # and resumes
        phases.add(name, mine[0], counted[0].jobs if counted else 0)


__all__ = ["Phase", "Phases", "phase", "recording"]
