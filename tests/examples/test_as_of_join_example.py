"""examples/as_of_join.py runs as documented (reference-only here: the Spark run checks itself against
the reference, and the Spark tests cover the operators): the trades priced by the quote in force."""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_example_prices_trades_by_the_quote_in_force() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "as_of_join.py"), "--reference-only"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    priced = lines[lines.index("each trade with the latest quote of its symbol (final_cti=INFINITY)") + 1:][:5]
    # the XYZ trade at 09:30:00.2 comes before any quote of XYZ: not priced
    assert [line.split()[-1] for line in priced] == ["10.02", "10.01", "55.00", "10.01", "55.20"]
    at = lines.index("... only with quotes at most 2 s old (final_cti=INFINITY)")
    # the trades at 5.5 and 6.0 have quotes 2.5 and 3.5 s old: not priced within 2 s
    assert [line.split()[0] for line in lines[at + 1:at + 4]] == ["09:30:01", "09:30:02.7", "09:30:08"]
    assert lines[at + 4] == ""
    assert "  [09:30:05, 09:30:10)      XYZ 55.20" in lines
