"""examples/timeline.py runs as documented: it saves the picture and prints what each CTI released."""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_example_saves_its_picture_and_prints_the_release_steps(tmp_path: pathlib.Path) -> None:
    picture = tmp_path / "run.png"
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "timeline.py"), str(picture)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert picture.read_bytes().startswith(b"\x89PNG")
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("CTI ")] == [
        "CTI 1 at 09:03 released 1:", "CTI 2 at 09:12 released 5:", "CTI 3 at INFINITY (flush) released 5:"]
    # the snapshot of m1 between its readings of 9:00 and 9:03 is released by the first CTI
    assert lines[2] == "  m1 [09:00, 09:03)  average 100.0 W"
