"""The examples that run reference-only here (``--reference-only``: their Spark run checks itself
against the reference, and the Spark tests cover the operators) print what they document:

- examples/as_of_join.py: the trades priced by the quote in force;
- examples/patterns.py: withdrawals followed by another of their account within 10 minutes, and
  orders not paid within 15 minutes;
- examples/late_events.py: the intervals under DROP and ADJUST, with the record of each late
  interval (tests/spark/test_late_on_spark.py covers the records on Spark);
- examples/session_windows.py: visits per user, visits cut into parts of at most 15 minutes, and
  the site's busy periods."""
from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Callable

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def prices_trades_by_the_quote_in_force(lines: list[str]) -> None:
    priced = lines[lines.index("each trade with the latest quote of its symbol (final_cti=INFINITY)") + 1:][:5]
    # the XYZ trade at 09:30:00.2 comes before any quote of XYZ: not priced
    assert [line.split()[-1] for line in priced] == ["10.02", "10.01", "55.00", "10.01", "55.20"]
    at = lines.index("... only with quotes at most 2 s old (final_cti=INFINITY)")
    # the trades at 5.5 and 6.0 have quotes 2.5 and 3.5 s old: not priced within 2 s
    assert [line.split()[0] for line in lines[at + 1:at + 4]] == ["09:30:01", "09:30:02.7", "09:30:08"]
    assert lines[at + 4] == ""
    assert "  [09:30:05, 09:30:10)      XYZ 55.20" in lines


def prints_the_late_intervals(lines: list[str]) -> None:
    drop, adjust = lines.index("DROP: dropped=2 adjusted=0"), lines.index("ADJUST: dropped=1 adjusted=1")
    # DROP: both late intervals are dropped, each with the CTI it violated
    assert lines[drop + 4:adjust] == [
        "  late: arrival 2  dropped   [09:13:50.000, 09:14:15.000)  cti 09:14:09.270  150 W",
        "  late: arrival 3  dropped   [09:13:40.000, 09:13:55.000)  cti 09:14:09.270  120 W"]
    # ADJUST: the one ending after the CTI starts at it; the other has nothing after the CTI
    assert lines[adjust + 2] == "  [09:14:09.270, 09:14:15.000)  150 W"
    assert lines[adjust + 5:] == [
        "  late: arrival 2  adjusted  [09:13:50.000, 09:14:15.000) -> [09:14:09.270, 09:14:15.000)"
        "  cti 09:14:09.270  150 W",
        "  late: arrival 3  dropped   [09:13:40.000, 09:13:55.000)  cti 09:14:09.270  120 W"]


def prints_the_visits(lines: list[str]) -> None:
    visits = lines.index("Visits per user (gap 10 minutes) (7 events, final_cti=INFINITY)")
    # ann's clicks at 9:00, 9:04, 9:09, 9:17 and 9:26 are never 10 minutes apart: one visit, which
    # ends 10 minutes after her last click (a point: one tick long)
    assert lines[visits + 1] == "  [09:00, 09:36:00.000001)  ann  clicks=5  slowest page 400 ms"
    parts = lines.index("Visits in parts of at most 15 minutes (8 events, final_cti=INFINITY)")
    assert lines[parts + 1] == "  [09:00, 09:15)  ann  clicks=3  slowest page 300 ms"
    assert lines[parts + 4] == "  [09:15, 09:30)  ann  clicks=2  slowest page 400 ms"
    busy = lines.index("Busy periods of the site (gap 5 minutes, all users) (4 events, final_cti=INFINITY)")
    assert lines[busy + 1] == "  [09:00, 09:22:00.000001)  clicks=6  211.7 ms on average"


def finds_the_patterns(lines: list[str]) -> None:
    twice = lines.index("a withdrawal followed by the next of its account within 10 minutes (final_cti=INFINITY)")
    # 200 meets the next withdrawal of A-1 only (300 at 21:06), 300 meets 250; 250 meets nothing
    # within 10 minutes (80 is 15 minutes later); B-7's late 60 still counts
    assert lines[twice + 1:twice + 6] == ["  21:06  A-1 200 then 300", "  21:07  B-7 40 then 60",
                                          "  21:09  A-1 300 then 250", "  21:29  A-1 80 then 80", ""]
    every = lines.index("... followed by every later one within 10 minutes (final_cti=INFINITY)")
    assert "  21:09  A-1 200 then 250" in lines[every:]
    unpaid = lines.index("orders not followed by their payment within 15 minutes (final_cti=INFINITY)")
    # order 2 is paid exactly 15 minutes later (too late), order 3 after 30; order 4 in time
    assert lines[unpaid + 1:] == ["  21:18  order 2 (35.50)", "  21:25  order 3 (12.00)"]


#: what each example's output must hold, by the example's name in examples/
EXPECTED: dict[str, Callable[[list[str]], None]] = {
    "as_of_join": prices_trades_by_the_quote_in_force,
    "late_events": prints_the_late_intervals,
    "patterns": finds_the_patterns,
    "session_windows": prints_the_visits,
}


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_the_example_prints_what_it_documents(example: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / f"{example}.py"), "--reference-only"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    EXPECTED[example](done.stdout.splitlines())
