"""examples/late_events.py runs as documented (reference-only here: the Spark run checks itself
against the reference, and tests/spark/test_late_on_spark.py covers the records on Spark): the
intervals under DROP and ADJUST, with the record of each late interval."""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_example_prints_the_late_intervals() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "late_events.py"), "--reference-only"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
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
