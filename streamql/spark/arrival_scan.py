"""The arrival-order work of an input — CTI rows, CTI generation, DROP/ADJUST — as a parallel scan.

Each Spark partition holds a contiguous run of the input in arrival order. The scan has three
steps (DESIGN §6):

1. ``summarize`` (every partition in parallel): what the partition does to the scan state when
   none of its events violates a CTI, and whether that is certain given the incoming state.
2. ``combine`` (driver, over one small summary per partition): the exact incoming state of every
   partition. A partition whose summary cannot decide (it holds events that may be late) is
   *simulated* exactly from its now known incoming state before the combine moves on.
3. The simulated partitions' decisions (drop, move a start, move an end) are joined back to the
   events; partitions found clean need nothing.

``simulate`` is the sequential rule itself, written as ``streamql.reference.inputs`` is: it is
the same algorithm over arrays. Functions here run in Spark's Python workers (``mapInArrow``)
on the time columns only — never on payloads.
"""
from __future__ import annotations

import attrs
import numpy as np
import pyarrow as pa

from streamql.time import INFINITY_MICROS, MAX_MICROS, MIN_MICROS

INSERT, START_EDGE, END_EDGE, CTI = 0, 1, 2, 3
DROP, ADJUST_START, ADJUST_END = 1, 2, 3
#: below every time (and below every time minus any clamped delay): "no value yet"
NONE = -(2**62)


@attrs.frozen
class ScanSettings:
    """The parts of an input's advance-time settings the scan needs, in microseconds."""

    every_events: int | None
    every: int | None
    delay: int
    adjust: bool

    @property
    def generates(self) -> bool:
        return self.every_events is not None or self.every is not None


@attrs.frozen
class ScanState:
    """The scan state between two rows: the current CTI, the accepted count, the greatest
    accepted start and the ``every=`` baseline (``NONE`` where there is none yet)."""

    cti: int = NONE
    count: int = 0
    max_start: int = NONE
    baseline: int = NONE


@attrs.frozen
class Summary:
    """One scan unit's summary (computed without knowing its incoming state)."""

    unit: int
    rows: int
    eligible: int  # inserts and start edges: the events CTI generation counts
    max_start: int
    max_cti_row: int
    min_checked: int  # least start (end, for end edges) that a CTI could violate
    locally_certain: bool  # no event is late with respect to CTIs from inside the partition
    tail_max: tuple[int, ...]  # running max of starts at the last every_events eligible positions
    bad_rows: int
    first_bad: int  # seq of the first bad row, or -1


def _shift(t: int, d: int) -> int:
    """Saturating ``t + d`` for finite ``t`` (mirrors ``streamql.time.shift``)."""
    if t == INFINITY_MICROS:
        return t
    moved = t + d
    return INFINITY_MICROS if moved > MAX_MICROS else max(MIN_MICROS, moved)


# --- step 1: per-partition summaries ----------------------------------------------------------


@attrs.frozen
class Rows:
    """A run of input rows in arrival order (the time columns only)."""

    kinds: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    bad: np.ndarray
    seqs: np.ndarray

    def slice(self, lo: int, hi: int) -> Rows:
        return Rows(self.kinds[lo:hi], self.starts[lo:hi], self.ends[lo:hi], self.bad[lo:hi], self.seqs[lo:hi])

    def good(self) -> Rows:
        keep = ~self.bad
        return Rows(self.kinds[keep], self.starts[keep], self.ends[keep], self.bad[keep], self.seqs[keep])


def rows_of(table: pa.Table, partition: int) -> Rows:
    """The rows of an Arrow table with ``start`` (null for a bad row) and, where the input needs
    them, ``kind``, ``end`` and ``seq``; absent columns mean all INSERTs, ends that no decision
    reads, and file order (``seq`` = partition << 33 | row index, as monotonically_increasing_id)."""
    names = set(table.schema.names)
    n = table.num_rows
    start_column = table.column("start")
    bad = start_column.is_null().to_numpy(zero_copy_only=False).astype(bool)
    starts = start_column.fill_null(0).to_numpy().astype(np.int64)
    return Rows(
        kinds=table.column("kind").to_numpy().astype(np.int64) if "kind" in names else np.zeros(n, np.int64),
        starts=starts,
        ends=table.column("end").fill_null(0).to_numpy().astype(np.int64) if "end" in names else starts + 1,
        bad=bad,
        seqs=(table.column("seq").to_numpy().astype(np.int64) if "seq" in names
              else (partition << 33) + np.arange(n, dtype=np.int64)),
    )


def summarize(rows: Rows, settings: ScanSettings, unit: int) -> Summary:
    bad_count = int(rows.bad.sum())
    first_bad = int(rows.seqs[rows.bad][0]) if bad_count else -1
    good = rows.good()
    kinds, starts, ends = good.kinds, good.starts, good.ends
    eligible = (kinds == INSERT) | (kinds == START_EDGE)
    checked = eligible | (kinds == END_EDGE)
    values = np.where(kinds == END_EDGE, ends, starts)
    cti_rows = np.where(kinds == CTI, starts, NONE)
    cti_before = _exclusive_running_max(cti_rows)
    elig_starts = np.where(eligible, starts, NONE)
    bound = cti_before
    if settings.generates:
        max_before = _exclusive_running_max(elig_starts)
        generated = np.where(max_before == NONE, NONE, max_before - settings.delay)
        bound = np.maximum(bound, generated)
    locally_certain = bool(np.all(values[checked] >= bound[checked])) if checked.any() else True
    tail: tuple[int, ...] = ()
    if settings.every_events is not None and eligible.any():
        running = np.maximum.accumulate(starts[eligible])
        tail = tuple(int(v) for v in running[-settings.every_events:])
    return Summary(
        unit=unit,
        rows=int(len(kinds)),
        eligible=int(eligible.sum()),
        max_start=int(elig_starts.max()) if len(kinds) else NONE,
        max_cti_row=int(cti_rows.max()) if len(kinds) else NONE,
        min_checked=int(values[checked].min()) if checked.any() else INFINITY_MICROS,
        locally_certain=locally_certain,
        tail_max=tail,
        bad_rows=bad_count,
        first_bad=first_bad,
    )


def _exclusive_running_max(values: np.ndarray) -> np.ndarray:
    if len(values) == 0:
        return values
    running = np.maximum.accumulate(values)
    return np.concatenate([[NONE], running[:-1]]).astype(np.int64)


# --- step 2: the exact state after a partition --------------------------------------------------


def clean_transfer(summary: Summary, state: ScanState, settings: ScanSettings) -> ScanState | None:
    """The state after the partition if none of its events can violate a CTI, else None.

    Within the partition the CTI never exceeds max(incoming CTI, CTI rows so far, greatest start
    so far - delay); ``summarize`` checked every event against the partition's own part of that
    bound, so only the incoming part is left to check here.
    """
    if not summary.locally_certain or settings.every is not None:
        return None
    incoming = state.cti
    if settings.generates and state.max_start != NONE:
        incoming = max(incoming, state.max_start - settings.delay)
    if summary.min_checked < incoming:
        return None
    cti = max(state.cti, summary.max_cti_row)
    count = state.count + summary.eligible
    max_start = max(state.max_start, summary.max_start)
    n = settings.every_events
    if n is not None and summary.eligible:
        last = summary.eligible - (count % n)  # the partition's last generating position, 1-based
        if last >= 1:
            tail_index = len(summary.tail_max) - (summary.eligible - last) - 1
            greatest = max(state.max_start, summary.tail_max[tail_index])
            cti = max(cti, _shift(greatest, -settings.delay))
    return ScanState(cti, count, max_start, state.baseline)


# --- the rule itself, row by row ----------------------------------------------------------------


@attrs.define
class Simulation:
    state: ScanState
    decisions: list[tuple[int, int, int]]  # (seq, action, new time)
    cti_changes: list[tuple[int, int]]  # (row index, CTI after that row)
    dropped: int
    adjusted: int


def simulate(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, seqs: np.ndarray,
             state: ScanState, settings: ScanSettings) -> Simulation:
    """Runs rows in arrival order through the CTI rule of DESIGN §5, exactly as the reference
    ingress does, and returns the decisions that differ from "accept unchanged"."""
    cti, count, max_start, baseline = state.cti, state.count, state.max_start, state.baseline
    every_events, every, delay, adjust = settings.every_events, settings.every, settings.delay, settings.adjust
    decisions: list[tuple[int, int, int]] = []
    changes: list[tuple[int, int]] = []
    dropped = adjusted = 0
    for i in range(len(kinds)):
        kind = int(kinds[i])
        if kind == CTI:
            if int(starts[i]) > cti:
                cti = int(starts[i])
                changes.append((i, cti))
            continue
        if kind == END_EDGE:
            end = int(ends[i])
            if end < cti:
                if adjust:
                    decisions.append((int(seqs[i]), ADJUST_END, cti))
                    adjusted += 1
                else:
                    decisions.append((int(seqs[i]), DROP, 0))
                    dropped += 1
            continue
        start = int(starts[i])
        end = INFINITY_MICROS if kind == START_EDGE else int(ends[i])
        if start < cti:
            if adjust and end > cti:
                start = cti
                decisions.append((int(seqs[i]), ADJUST_START, cti))
                adjusted += 1
            else:
                decisions.append((int(seqs[i]), DROP, 0))
                dropped += 1
                continue
        max_start = max(max_start, start)
        if every_events is None and every is None:
            continue
        count += 1
        if every_events is not None:
            trigger = count % every_events == 0
        elif baseline == NONE:
            baseline, trigger = start, False
        else:
            assert every is not None
            trigger = start >= _shift(baseline, every)
            if trigger:
                baseline = start
        if trigger:
            generated = max(cti, _shift(max_start, -delay))
            if generated > cti:
                cti = generated
                changes.append((i, cti))
    return Simulation(ScanState(cti, count, max_start, baseline), decisions, changes, dropped, adjusted)
