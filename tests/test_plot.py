"""``sq.plot.timeline``: the figure's structure (lanes, bars, ticks, CTI marks, step numbers), not its pixels."""
from __future__ import annotations

import pathlib
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from collections import Counter
import pytest
from matplotlib.figure import Figure
from pyspark.sql import SparkSession

import streamql as sq
from support.timelines import ADJUST, EVERY_3, READINGS, SESSIONS, at, averages, readings, sessions


def gids(fig: Figure) -> Counter[str]:
    (ax,) = [a for a in fig.axes]
    return Counter(str(artist.get_gid()) for artist in ax.get_children() if artist.get_gid() is not None)


def lanes(fig: Figure) -> list[str]:
    # lanes are drawn bottom-up: the y labels read top-down reversed
    return [t.get_text() for t in fig.axes[0].get_yticklabels()][::-1]


def test_a_run_is_drawn_lane_by_lane_and_saved_as_png(tmp_path: pathlib.Path) -> None:
    fig = sq.plot.timeline(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)},
                           labels={"output": lambda a: f"{a.average:.0f}"})
    assert lanes(fig) == ["readings", "output"]
    drawn = gids(fig)
    # 7 accepted readings and the dropped one are ticks; 11 released snapshot segments are bars
    assert drawn["point"] == 7 and drawn["dropped"] == 1 and drawn["dropped-mark"] == 1
    assert drawn["interval"] == 11
    # CTIs: the input's 3 (0:20, 1:25, the flush) and the output's 3, numbered 1..3
    assert drawn["cti"] == 6 and drawn["step"] == 3
    step_numbers = sorted(t.get_text() for t in fig.axes[0].texts if t.get_gid() == "step")
    assert step_numbers == ["1", "2", "3"]
    labels = [t.get_text().strip() for t in fig.axes[0].texts if t.get_gid() == "label"]
    assert "100 (2)" in labels and "120 (3)" in labels and len(labels) == 11
    path = tmp_path / "run.png"
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_grouped_output_open_and_adjusted_events(tmp_path: pathlib.Path) -> None:
    grouped = sq.plot.timeline(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)},
                               group_by=lambda a: a.meter, title="per meter")
    assert lanes(grouped) == ["readings", "output m1", "output m2"]
    assert grouped.axes[0].get_title() == "per meter"
    assert gids(grouped)["cti"] == 3 + 3 * 2  # the output CTIs are marked on every output lane
    fig = sq.plot.timeline(sessions, {"sessions": sq.reference.ReferenceInput(SESSIONS, ADJUST)}, output=sq.Shape.EDGE)
    drawn = gids(fig)
    # input: a closed, b adjusted and open, c open; output: a closed, b open
    assert drawn["interval"] == 2 and drawn["adjusted"] == 1 and drawn["open"] == 2
    assert drawn["arrow"] == 3 and drawn["adjusted-from"] == 1
    fig.savefig(tmp_path / "edges.svg")
    assert (tmp_path / "edges.svg").read_text().startswith("<?xml")


def test_span_sets_the_times_shown() -> None:
    fig = sq.plot.timeline(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)},
                           span=(at(0), at(60)))
    low, high = fig.axes[0].get_xlim()
    assert low < _days(at(0)) < _days(at(60)) < high < _days(at(75))
    with pytest.raises(sq.BindingError, match="span must be"):
        sq.plot.timeline(averages, {"readings": sq.reference.ReferenceInput(READINGS, EVERY_3)}, span=(at(9), at(1)))


def _days(t: datetime) -> float:
    return (t - datetime(1970, 1, 1, tzinfo=timezone.utc)) / timedelta(days=1)


def test_nothing_to_draw_is_an_error() -> None:
    with pytest.raises(sq.BindingError, match="nothing to draw"):
        sq.plot.timeline(readings, {"readings": sq.reference.ReferenceInput([])})


def test_from_spark_the_size_guard_fires_before_collecting(spark: SparkSession) -> None:
    df = spark.createDataFrame([(i.start, i.payload.meter, i.payload.consumption) for i in READINGS],
                               "ts timestamp, meter string, consumption double")
    binder = sq.Binder(spark).bind(readings, df, start="ts", advance_time=EVERY_3)
    fig = sq.plot.timeline(averages, binder)
    assert lanes(fig) == ["readings", "output"] and gids(fig)["interval"] == 11
    with pytest.raises(sq.BindingError, match="max_events=3"):
        sq.plot.timeline(averages, binder, max_events=3)
    with pytest.raises(sq.BindingError, match="pass result= only with reference inputs"):
        sq.plot.timeline(averages, binder, result=binder.run(averages))


def test_streamql_imports_without_matplotlib_and_plot_says_what_to_install() -> None:
    script = (
        "import sys; sys.modules['matplotlib'] = None  # as if it were not installed\n"
        "import streamql as sq\n"
        "from support.timelines import EVERY_3, READINGS, averages\n"
        "try:\n"
        "    sq.plot.timeline(averages, {'readings': sq.reference.ReferenceInput(READINGS, EVERY_3)})\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=pathlib.Path(__file__).parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "sq.plot needs matplotlib: pip install 'streamql[plot]'"
