"""The few helpers the documentation's examples share.

Each page of the site runs its examples in order, in one Python session (most of them in the
reference evaluator, without a JVM); a page's collapsed "Setup" block imports what it needs from
here, so that the page itself starts with its subject::

    from doc_helpers import FLUSH, at, every_event, show

To run a page's examples yourself, put this file beside your script (or, in a clone of the
repository, set ``PYTHONPATH=docs``). The tests (``tests/docs/test_pages.py``) and the site's build
(``docs/hooks.py``) import it from ``docs/``.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import streamql as sq

T = TypeVar("T")

UTC = timezone.utc

#: the day the examples happen on
DAY = datetime(2024, 5, 1, tzinfo=UTC)

#: no CTI until the end of the input, then one at INFINITY: everything is released
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


def at(hh: int, mm: int, ss: int = 0) -> datetime:
    """``hh:mm:ss`` on the examples' day (1 May 2024), UTC."""
    return DAY.replace(hour=hh, minute=mm, second=ss)


def hm(t: datetime) -> str:
    """``12:05``, or ``12:05:00.000001`` when the seconds matter; ``INFINITY``."""
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M") if t.second == t.microsecond == 0 else t.strftime("%H:%M:%S.%f")


def hms(t: datetime) -> str:
    """``09:02:30``, or ``09:02:30.000001`` when the microseconds matter; ``INFINITY``."""
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M:%S") if t.microsecond == 0 else t.strftime("%H:%M:%S.%f")


def show(result: sq.Result[Any], clock: Callable[[datetime], str] = hm) -> None:
    """Print a result: one ``[start, end)  payload`` line per event, then the final CTI."""
    for e in result.events:
        print(f"[{clock(e.start)}, {clock(e.end)})  {e.payload}")
    print("final_cti=" + ("None" if result.final_cti is None else clock(result.final_cti)))


def show_seconds(result: sq.Result[Any]) -> None:
    """``show`` for pages whose times have seconds: ``[09:02:30, 09:05:30)  payload``."""
    show(result, hms)


def posts(result: sq.Result[Any], name: Callable[[Any], object] = lambda p: p.name,
          clock: Callable[[datetime], str] = hms) -> None:
    """EDGE output as Esper posts it: at each time, the new events (START edges) and the old ones
    (END edges), each shown by ``name`` of its payload."""
    by_time: dict[datetime, tuple[list[str], list[str]]] = {}
    for e in result.edges:
        new, old = by_time.setdefault(e.time, ([], []))
        (new if e.kind is sq.EdgeKind.START else old).append(str(name(e.payload)))
    for t, (new, old) in by_time.items():
        print(f"{clock(t)}  new: {', '.join(new) or '-':<10}  old: {', '.join(old) or '-'}")


def point(t: datetime, payload: T) -> sq.Insert[T]:
    """A point event at ``t``: the lifetime ``[t, t + sq.TICK)``."""
    return sq.Insert(t, t + sq.TICK, payload)


def every_event(delay: timedelta = timedelta(0), flush: bool = False,
                policy: sq.AdvanceTimePolicy = sq.AdvanceTimePolicy.DROP) -> sq.AdvanceTimeSettings:
    """A CTI after every event, ``delay`` behind its start: StreamInsight's
    ``AdvanceTimeGenerationSettings(1, delay, flush)``."""
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=delay, flush=flush),
                                  policy=policy)
