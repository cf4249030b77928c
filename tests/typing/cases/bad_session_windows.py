"""Mistakes in session windows: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import streamql as sq

GAP = timedelta(minutes=30)


@dataclasses.dataclass(frozen=True)
class Click:
    user: str
    millis: int


@dataclasses.dataclass(frozen=True)
class Visit:
    user: str
    clicks: int


clicks = sq.input("clicks", Click)

a = clicks.session_window(30)  # E: Argument 1 to "session_window" of "Stream" has incompatible type "int"; expected "timedelta"
b = clicks.session_window(GAP, max_duration=2)  # E: Argument "max_duration" to "session_window" of "Stream" has incompatible type "int"; expected "timedelta | None"
c = clicks.group_by(lambda e: e.user).session_window("30m")  # E: Argument 1 to "session_window" of "Grouped" has incompatible type "str"; expected "timedelta"
# a grouped session's aggregate of a misspelled field
d = clicks.group_by(lambda e: e.user).session_window(GAP).select(lambda w: Visit(w.key, w.sum(lambda e: e.milis)))  # E: "Click" has no attribute "milis"; maybe "millis"?
# the key is a str: Visit.clicks wants an int
e = clicks.group_by(lambda e: e.user).session_window(GAP).select(lambda w: Visit(w.key, w.key))  # E: Argument 2 to "Visit" has incompatible type "str"; expected "int"
# a session window's select builds a payload, not a plain value
f = clicks.session_window(GAP).select(lambda w: w.count())  # E: Value of type variable "Payload" of "select" of "Windowed" cannot be "int"
# the result is a Stream of what select builds
g: sq.Stream[Click] = clicks.session_window(GAP).select(lambda w: Visit("", w.count()))  # E: Argument 1 to "select" of "Windowed" has incompatible type  # E: Incompatible return value type (got "Visit", expected "Click")
# a misspelled aggregate of a grouped session window
h = clicks.group_by(lambda e: e.user).session_window(GAP).select(lambda w: Visit(w.key, w.nosuch()))  # E: "GroupWindow[str, Click]" has no attribute "nosuch"
