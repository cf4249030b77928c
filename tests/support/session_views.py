"""Hand-worked session windows: page views of two users (intervals), worked out by hand from
docs/session-windows.md and written out in full; the reference tests and the Spark tests run the
same cases.

With a gap of 3 minutes, each view ``[s, e)`` reaches ``e + 3 min``:

- ann: [12:00, 12:02) reaches 12:05; [12:04, 12:05) starts before that: same session, reach 12:08;
  [12:05, 12:06) too, reach 12:09; [12:09, 12:11) starts exactly at 12:09 — touching does not
  merge — a new session, reach 12:14; [12:20, 12:21) a new one, reach 12:24;
- bob: [12:01, 12:03) reaches 12:06; [12:07, 12:08) starts after it: a new session, reach 12:11;
  [12:10, 12:12) joins it, reach 12:15.

With ``max_duration`` 5 minutes each session is cut every 5 minutes from its first start: ann's
first session [12:00, 12:09) into [12:00, 12:05) (the views of 12:00 and 12:04) and [12:05, 12:09)
(the view of 12:05; the piece would end at 12:10 but the session ends at 12:09); bob's second
session [12:07, 12:15) into [12:07, 12:12) (both views) and nothing after (no view starts in
[12:12, 12:17)).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import streamql as sq
from streamql.events import InputItem

from support.seeds import UTC

GAP = timedelta(minutes=3)
PIECE = timedelta(minutes=5)


def m(hh: int, mm: int) -> datetime:
    return datetime(2024, 5, 1, hh, mm, tzinfo=UTC)


@dataclass(frozen=True)
class View:
    user: str
    seconds: int


@dataclass(frozen=True)
class Visit:
    user: str
    views: int
    seconds: int


@dataclass(frozen=True)
class Views:
    views: int
    seconds: int


VIEWS_IN = sq.input("views", View, shape=sq.Shape.INTERVAL)
#: in start order (also the arrival order)
VIEWS: list[InputItem[Any]] = [
    sq.Insert(m(12, 0), m(12, 2), View("ann", 120)),
    sq.Insert(m(12, 1), m(12, 3), View("bob", 100)),
    sq.Insert(m(12, 4), m(12, 5), View("ann", 40)),
    sq.Insert(m(12, 5), m(12, 6), View("ann", 30)),
    sq.Insert(m(12, 7), m(12, 8), View("bob", 60)),
    sq.Insert(m(12, 9), m(12, 11), View("ann", 90)),
    sq.Insert(m(12, 10), m(12, 12), View("bob", 80)),
    sq.Insert(m(12, 20), m(12, 21), View("ann", 20)),
]

PER_USER = VIEWS_IN.group_by(lambda e: e.user).session_window(GAP).select(
    lambda w: Visit(w.key, w.count(), w.sum(lambda e: e.seconds)))
PER_USER_PIECES = VIEWS_IN.group_by(lambda e: e.user).session_window(GAP, max_duration=PIECE).select(
    lambda w: Visit(w.key, w.count(), w.sum(lambda e: e.seconds)))
ALL_USERS = VIEWS_IN.session_window(GAP).select(lambda w: Views(w.count(), w.sum(lambda e: e.seconds)))

#: every session, with a final CTI at INFINITY (sorted as Result.events are)
PER_USER_FLUSHED = [
    sq.Event(m(12, 0), m(12, 9), Visit("ann", 3, 190)),
    sq.Event(m(12, 1), m(12, 6), Visit("bob", 1, 100)),
    sq.Event(m(12, 7), m(12, 15), Visit("bob", 2, 140)),
    sq.Event(m(12, 9), m(12, 14), Visit("ann", 1, 90)),
    sq.Event(m(12, 20), m(12, 24), Visit("ann", 1, 20)),
]
PER_USER_PIECES_FLUSHED = [
    sq.Event(m(12, 0), m(12, 5), Visit("ann", 2, 160)),
    sq.Event(m(12, 1), m(12, 6), Visit("bob", 1, 100)),
    sq.Event(m(12, 5), m(12, 9), Visit("ann", 1, 30)),     # the last piece ends with its session
    sq.Event(m(12, 7), m(12, 12), Visit("bob", 2, 140)),
    sq.Event(m(12, 9), m(12, 14), Visit("ann", 1, 90)),
    sq.Event(m(12, 20), m(12, 24), Visit("ann", 1, 20)),
]
#: ungrouped: the views of both users chain from 12:00 to 12:15 (12:09 starts before bob's reach
#: 12:11), then 12:20 alone
ALL_USERS_FLUSHED = [
    sq.Event(m(12, 0), m(12, 15), Views(7, 520)),
    sq.Event(m(12, 20), m(12, 24), Views(1, 20)),
]
