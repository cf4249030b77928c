"""Well-typed session windows: ungrouped and grouped, with and without a maximum duration, every
aggregate, the key's type in grouped windows, inside group_apply, and run in the reference
evaluator."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Optional

import streamql as sq
from streamql.reference import ReferenceInput

GAP = timedelta(minutes=30)


@dataclasses.dataclass(frozen=True)
class Click:
    user: str
    page: str
    millis: int
    price: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class Visit:
    user: str
    clicks: int
    millis: int
    mean_price: Optional[float]
    first_page: str


@dataclasses.dataclass(frozen=True)
class Busy:
    clicks: int
    busy: bool


clicks: sq.Stream[Click] = sq.input("clicks", Click)

sessions: sq.Windowed[Click] = clicks.session_window(GAP)
busy: sq.Stream[Busy] = sessions.select(lambda w: Busy(w.count(), w.count() > 10))
pieces: sq.Windowed[Click] = clicks.session_window(GAP, max_duration=timedelta(hours=2))
also_busy: sq.Stream[Busy] = pieces.select(lambda w: Busy(w.count(), w.sum(lambda e: e.millis) > 60_000))

per_user: sq.GroupedWindowed[str, Click] = clicks.group_by(lambda e: e.user).session_window(GAP, timedelta(hours=4))
visits: sq.Stream[Visit] = per_user.select(lambda w: Visit(
    user=w.key,
    clicks=w.count(),
    millis=w.sum(lambda e: e.millis),
    mean_price=w.avg(lambda e: e.price),
    first_page=w.min(lambda e: e.page),
))
per_user_apply: sq.Stream[Visit] = clicks.group_apply(
    lambda e: e.user, lambda s: s.session_window(GAP).select(lambda w: Busy(w.count(), w.count() > 3)),
    lambda user, b: Visit(user, b.clicks, 0, None, ""))

UTC = timezone.utc
t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
result: sq.Result[Visit] = sq.reference.run(visits, {"clicks": ReferenceInput(
    [sq.Insert(t0, t0 + sq.TICK, Click("ann", "home", 900))],
    sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True)))})
assert [e.payload.clicks for e in result.events] == [1]
