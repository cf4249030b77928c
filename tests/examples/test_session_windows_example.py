"""examples/session_windows.py runs as documented (reference-only here: the Spark run checks itself
against the reference, and the Spark tests cover the operator): visits per user, visits cut into
parts of at most 15 minutes, and the site's busy periods."""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_example_prints_the_visits() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "session_windows.py"), "--reference-only"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    visits = lines.index("Visits per user (gap 10 minutes) (7 events, final_cti=INFINITY)")
    # ann's clicks at 9:00, 9:04, 9:09, 9:17 and 9:26 are never 10 minutes apart: one visit, which
    # ends 10 minutes after her last click (a point: one tick long)
    assert lines[visits + 1] == "  [09:00, 09:36:00.000001)  ann  clicks=5  slowest page 400 ms"
    parts = lines.index("Visits in parts of at most 15 minutes (8 events, final_cti=INFINITY)")
    assert lines[parts + 1] == "  [09:00, 09:15)  ann  clicks=3  slowest page 300 ms"
    assert lines[parts + 4] == "  [09:15, 09:30)  ann  clicks=2  slowest page 400 ms"
    busy = lines.index("Busy periods of the site (gap 5 minutes, all users) (4 events, final_cti=INFINITY)")
    assert lines[busy + 1] == "  [09:00, 09:22:00.000001)  clicks=6  211.7 ms on average"
