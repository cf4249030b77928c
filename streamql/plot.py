"""Timeline pictures of a run: ``sq.plot.timeline`` (needs matplotlib: ``pip install 'streamql[plot]'``).

One lane per input and one for the output (or one per group key): lifetimes are bars, point
events ticks, open events bars with an arrow, CTIs dashed vertical marks. Dropped events are
red and hatched, adjusted ones orange with a dotted line from where they started. Every output
CTI is numbered, and each output event carries the number of the CTI that released it, in that
CTI's colour: what each CTI released is read off the picture.

>>> fig = sq.plot.timeline(usage, {"readings": sq.reference.ReferenceInput(items, settings)})  # doctest: +SKIP
>>> fig.savefig("usage.png")                                                                  # doctest: +SKIP

Every artist carries a ``gid`` naming what it draws (``"interval"``, ``"point"``, ``"open"``,
``"dropped"``, ``"adjusted"``, ``"cti"``, ``"step"``), so that tests and tools can read a figure's
structure without looking at pixels.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping

from streamql.errors import BindingError
from streamql.events import Result, Shape
from streamql.query.stream import Stream
from streamql.reference.inputs import ReferenceInput
from streamql.time import INFINITY
from streamql.timeline import MAX_EVENTS, Bar, Lane, Mark, Timeline, trace, trace_binding

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from streamql.binder import Binder

__all__ = ["Timeline", "draw", "timeline", "trace", "trace_binding"]

_INPUT = "#5b6770"
_DROPPED = "#d62728"
_ADJUSTED = "#f58518"
_UNRELEASED = "#c7c7c7"
_ROW = 1.0    # the height of one row of bars
_BAR = 0.6    # a bar's height within its row
_GAP = 0.8    # between lanes


def timeline(query: Stream[Any], inputs: Mapping[str, ReferenceInput[Any]] | Binder, *,
             output: Shape = Shape.INTERVAL, result: Result[Any] | None = None,
             group_by: Callable[[Any], Hashable] | None = None,
             labels: Mapping[str, Callable[[Any], str]] | None = None, max_events: int = MAX_EVENTS,
             title: str | None = None, span: tuple[datetime, datetime] | None = None) -> Figure:
    """Draws a run of ``query`` and returns the matplotlib ``Figure`` (``fig.savefig("run.png")``).

    ``inputs``: the reference evaluator's inputs (``{"name": sq.reference.ReferenceInput(...)}``),
    or a ``sq.Binder`` whose inputs are bound to small DataFrames — the query then runs on Spark,
    the output lane shows what Spark released, and the inputs are collected to replay the CTIs
    (more than ``max_events`` rows is an error, raised before anything is collected).
    ``result``: with reference inputs, draw this result's events as the output (a Spark run's).
    ``group_by``: one output lane per key of the output payload. ``labels``: text drawn on the
    events of a lane, by input name or ``"output"`` (``{"readings": lambda e: e.meter}``).
    ``span``: the (first, last) times shown, when a few long events would squeeze the rest;
    default: from the earliest to the latest time of the run.
    """
    from streamql.binder import Binder

    if isinstance(inputs, Binder):
        if result is not None:
            raise BindingError("timeline from a Binder runs the query itself: pass result= only with reference inputs")
        traced = trace_binding(inputs, query, output, group_by=group_by, max_events=max_events)
    else:
        traced = trace(query, inputs, output, result=result, group_by=group_by, max_events=max_events)
    return draw(traced, title=title, labels=labels, span=span)


def draw(tl: Timeline, *, title: str | None = None, labels: Mapping[str, Callable[[Any], str]] | None = None,
         span: tuple[datetime, datetime] | None = None) -> Figure:
    """Draws a traced run (``sq.timeline.trace``) as a ``Figure``."""
    try:
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
        from matplotlib.figure import Figure
    except ImportError:  # without the plot extra
        raise ImportError("sq.plot needs matplotlib: pip install 'streamql[plot]'") from None

    if span is not None and not (isinstance(span, tuple) and len(span) == 2 and span[0] < span[1]):
        raise BindingError(f"span must be (first, last) datetimes with first < last, got {span!r}")
    lo, hi = _span(tl) if span is None else (_x(span[0]), _x(span[1]))
    right = hi + (hi - lo) * 0.08  # where open events end and an INFINITY CTI is drawn
    rows = {lane.name: _pack(lane.bars, right) for lane in tl.lanes}
    heights = [max(rows[lane.name].values(), default=0) + 1 for lane in tl.lanes]
    fig = Figure(figsize=(11, 1.2 + 0.42 * sum(heights) + 0.5 * len(tl.lanes)), layout="constrained")
    ax = fig.add_subplot()
    palette = _palette(len(tl.steps))
    ticks, names = [], []
    top = 0.0
    for lane, height in reversed(list(zip(tl.lanes, heights))):
        bottom = top
        top = bottom + height * _ROW
        ticks.append((bottom + top) / 2)
        names.append(lane.name)
        for bar in lane.bars:
            y = bottom + rows[lane.name][id(bar)] * _ROW + (_ROW - _BAR) / 2
            _draw_bar(ax, bar, y, right, palette, (labels or {}).get("output" if lane.output else lane.name),
                      lane.output)
        # release steps at one CTI (an EDGE output's end edges released without the CTI moving): one mark
        marks: dict[datetime, list[int]] = {}
        for cti in lane.ctis:
            marks.setdefault(cti.time, []).extend([] if cti.step is None else [cti.step])
        for time, steps in marks.items():
            x = right if time == INFINITY else _x(time)
            colour = palette[steps[-1] - 1] if steps else "black"
            ax.plot([x, x], [bottom - 0.15, top + 0.15], linestyle="--", linewidth=1.2, color=colour, gid="cti")
            if steps:
                ax.text(x, top + 0.2, ",".join(map(str, steps)), ha="center", va="bottom", fontsize=8, color=colour,
                        fontweight="bold", gid="step")
        top += _GAP
        if lane is tl.lanes[0]:
            continue
        ax.axhline(top - _GAP / 2, color="#dddddd", linewidth=0.8, gid="separator")
    if _has_infinity(tl):
        ax.text(right, top, "∞", ha="center", va="bottom", fontsize=11, gid="infinity")
    ax.set_yticks(ticks, names)
    ax.set_ylim(-_GAP / 2, top)
    ax.set_xlim(lo - (hi - lo) * 0.03, right + (hi - lo) * 0.03)
    locator = AutoDateLocator(tz=timezone.utc)  # type: ignore[no-untyped-call]  # matplotlib leaves it unannotated
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=timezone.utc))  # type: ignore[no-untyped-call]
    ax.grid(axis="x", color="#eeeeee")
    ax.set_axisbelow(True)
    ax.set_xlabel("application time (UTC); ∞ at the right edge" if _has_infinity(tl) else "application time (UTC)")
    ax.set_title(title or _default_title(tl), fontsize=10)
    _legend(ax)
    return fig


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _x(t: datetime) -> float:
    """A time as matplotlib's date axis counts it: days since 1970 (its default epoch)."""
    return (t - _EPOCH) / timedelta(days=1)


def _span(tl: Timeline) -> tuple[float, float]:
    times = [t for lane in tl.lanes for bar in lane.bars
             for t in (bar.start, bar.end, bar.original_start) if t is not None and t != INFINITY]
    times += [c.time for lane in tl.lanes for c in lane.ctis if c.time != INFINITY]
    if not times:
        raise BindingError("nothing to draw: the run has no events and no finite CTIs")
    lo, hi = min(times), max(times)
    if hi == lo:
        lo, hi = lo - timedelta(seconds=1), hi + timedelta(seconds=1)
    return _x(lo), _x(hi)


def _pack(bars: list[Bar], right: float) -> dict[int, int]:
    """Rows for a lane's bars so that overlapping ones do not cover each other (first fit, by start)."""
    ends: list[float] = []
    row_of: dict[int, int] = {}
    for bar in sorted(bars, key=lambda b: (b.original_start or b.start, b.end)):
        begin = _x(bar.original_start or bar.start)
        end = right if bar.end == INFINITY else max(_x(bar.end), begin + (right - begin) * 0.004)
        row = next((i for i, taken in enumerate(ends) if taken <= begin), len(ends))
        if row == len(ends):
            ends.append(end)
        else:
            ends[row] = end
        row_of[id(bar)] = row
    return row_of


# matplotlib's tab10 without its red and orange, which mark dropped and adjusted events
_STEP_COLOURS = ["#2ca02c", "#9467bd", "#1f77b4", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f"]


def _palette(n: int) -> list[str]:
    return [_STEP_COLOURS[i % len(_STEP_COLOURS)] for i in range(n)]


def _draw_bar(ax: Axes, bar: Bar, y: float, right: float, palette: list[str],
              label: Callable[[Any], str] | None, output: bool) -> None:
    if bar.dropped:
        colour, gid = _DROPPED, "dropped"
    elif bar.step is not None:
        colour, gid = palette[bar.step - 1], bar.mark.value
    elif bar.adjusted:
        colour, gid = _ADJUSTED, "adjusted"
    else:
        colour, gid = (_UNRELEASED if output else _INPUT), bar.mark.value
    x0 = _x(bar.start)
    if bar.mark is Mark.POINT:
        ax.plot([x0, x0], [y, y + _BAR], color=colour, linewidth=2.5, solid_capstyle="butt", gid=gid)
        if bar.dropped:
            ax.plot([x0], [y + _BAR / 2], marker="x", color=_DROPPED, markersize=7, gid="dropped-mark")
    else:
        end = right if bar.mark is Mark.OPEN else _x(bar.end)
        width = end - x0
        ax.broken_barh([(x0, width)], (y, _BAR), facecolors=colour, edgecolors="white" if not bar.dropped else _DROPPED,
                       hatch="///" if bar.dropped else None, alpha=0.45 if bar.dropped else 0.9, gid=gid)
        if bar.mark is Mark.OPEN:
            ax.plot([end], [y + _BAR / 2], marker=">", color=colour, markersize=7, gid="arrow")
    if bar.original_start is not None:
        ax.plot([_x(bar.original_start), x0], [y + _BAR / 2, y + _BAR / 2], linestyle=":", color=_ADJUSTED,
                linewidth=1.5, gid="adjusted-from")
    text = label(bar.payload) if label is not None else ""
    if bar.step is not None:
        steps = str(bar.step) if bar.end_step is None or bar.end_step == bar.step else f"{bar.step}→{bar.end_step}"
        text = f"{text} ({steps})" if text else steps
    if text:
        ax.text(x0, y + _BAR + 0.03, " " + text, fontsize=7, va="bottom", ha="left", clip_on=True, gid="label")


def _has_infinity(tl: Timeline) -> bool:
    return any(c.time == INFINITY for lane in tl.lanes for c in lane.ctis) or \
        any(b.mark is Mark.OPEN for lane in tl.lanes for b in lane.bars)


def _default_title(tl: Timeline) -> str:
    r = tl.result
    released = len(r.edges) if tl.output is Shape.EDGE else len(r.events)
    return (f"{released} {'edges' if tl.output is Shape.EDGE else 'events'} released in {len(tl.steps)} release steps"
            f" · dropped {r.dropped} · adjusted {r.adjusted}")


def _legend(ax: Axes) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=_INPUT, label="input event"),
        Line2D([], [], color=_INPUT, marker="|", linestyle="", markersize=9, markeredgewidth=2.5, label="point event"),
        Line2D([], [], color=_INPUT, marker=">", linestyle="", label="open (no end yet)"),
        Patch(facecolor=_DROPPED, alpha=0.45, hatch="///", edgecolor=_DROPPED, label="dropped"),
        Patch(facecolor=_ADJUSTED, label="adjusted (dotted: moved from)"),
        Line2D([], [], color="black", linestyle="--", label="CTI (output: numbered)"),
        Patch(facecolor=_UNRELEASED, label="output not released by the replay"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
              title="numbers on output events: the CTI that released them", title_fontsize=7)
