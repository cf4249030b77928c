"""The arrival-order work of an input — CTI rows, CTI generation, DROP/ADJUST — as a parallel scan.

Each Spark partition holds a contiguous run of the input in arrival order. The scan has three
steps (docs/binding.md#ingress-the-arrival-order-scan):

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

from typing import Iterator, Protocol

import attrs
import numpy as np
import pyarrow as pa

from streamql.spark.base.arrow_numpy import int64_values, is_null
from streamql.time import INFINITY_MICROS, MAX_MICROS, MIN_MICROS

INSERT, START_EDGE, END_EDGE, CTI = 0, 1, 2, 3
DROP, ADJUST_START, ADJUST_END = 1, 2, 3
#: below every time (and below every time minus any clamped delay): "no value yet"
NONE = -(2**62)
#: a row's scan unit (a run of arrival order) is ``seq >> PARTITION_BITS``: monotonically_increasing_id
#: keeps the partition index there, and arrival-ordered inputs put their arrival range there
PARTITION_BITS = 33


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
    #: the unit's late events are decided whatever its entering state (``decide_late``): then
    #: ``eligible``, ``max_start``, ``tail_max`` and ``min_checked`` are those of its accepted
    #: events, and ``clean_transfer`` decides the unit where the entering state allows it
    decided: bool = False
    dropped: int = 0
    adjusted: int = 0
    #: the least end of an event whose start ADJUST moves (it must end after the entering CTI)
    moved_end: int = INFINITY_MICROS
    #: the least greatest start (the unit's own) before such an event (the entering CTI must not be
    #: above it and the entering greatest start: a moved start then never raises the greatest start)
    moved_floor: int = INFINITY_MICROS
    #: the least entering CTI under which the unit's decisions hold (``NONE``: any)
    floor: int = NONE


def checked_times(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The time of each row that the CTI checks (docs/ctis-and-release.md): an end edge's end, an event's start
    (INSERT, START_EDGE); a CTI row is never late (INFINITY). A row is late for CTI ``c`` when this
    time is before ``c``; ``late_action`` says what becomes of it.

    >>> checked_times(np.array([INSERT, END_EDGE, CTI]), np.array([5, 5, 5]), np.array([9, 7, 0]))
    array([                  5,                   7, 9223372036854775807])
    """
    return np.where(kinds == END_EDGE, ends, np.where(kinds == CTI, INFINITY_MICROS, starts))


def late_action(kind: int, end: int, cti: int, adjust: bool) -> int:
    """What becomes of a row late for CTI ``cti`` (``checked_times``): under ADJUST an end edge's
    end moves to ``cti`` (``ADJUST_END``) and an event's start moves to ``cti`` (``ADJUST_START``)
    if the event ends after ``cti`` (a start edge's event ends at INFINITY); else it is dropped.

    >>> late_action(INSERT, 12, 10, adjust=True) == ADJUST_START, late_action(INSERT, 10, 10, adjust=True) == DROP
    (True, True)
    """
    if not adjust:
        return DROP
    if kind == END_EDGE:
        return ADJUST_END
    if kind == START_EDGE:
        end = INFINITY_MICROS
    return ADJUST_START if end > cti else DROP


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
    reads, and file order (``seq`` = partition << PARTITION_BITS | row index, as monotonically_increasing_id)."""
    names = set(table.schema.names)
    n = table.num_rows
    start_column = table.column("start")
    bad = is_null(start_column)
    starts = int64_values(start_column)
    return Rows(
        kinds=int64_values(table.column("kind")) if "kind" in names else np.zeros(n, np.int64),
        starts=starts,
        ends=int64_values(table.column("end")) if "end" in names else starts + 1,
        bad=bad,
        seqs=(int64_values(table.column("seq")) if "seq" in names
              else (partition << PARTITION_BITS) + np.arange(n, dtype=np.int64)),
    )


def summarize(rows: Rows, settings: ScanSettings, unit: int) -> Summary:
    """What a scan unit does to the scan state when none of its events is late, and whether its
    own CTIs (its CTI rows, and those its events generate) find none late."""
    bad_count = int(rows.bad.sum())
    first_bad = int(rows.seqs[rows.bad][0]) if bad_count else -1
    good = rows.good()
    kinds, starts = good.kinds, good.starts
    eligible = (kinds == INSERT) | (kinds == START_EDGE)
    checked = checked_times(kinds, starts, good.ends)
    cti_rows = np.where(kinds == CTI, starts, NONE)
    cti_before = _exclusive_running_max(cti_rows)
    elig_starts = np.where(eligible, starts, NONE)
    bound = cti_before
    if settings.generates:
        max_before = _exclusive_running_max(elig_starts)
        generated = np.where(max_before == NONE, NONE, max_before - settings.delay)
        bound = np.maximum(bound, generated)
    locally_certain = not bool(np.any(checked < bound))  # no row late for the unit's own CTIs
    tail: tuple[int, ...] = ()
    if settings.every_events is not None and eligible.any():
        running = np.maximum.accumulate(starts[eligible])
        tail = tuple(int(v) for v in running[-settings.every_events:])
    decided = None if locally_certain else decide_late(kinds, starts, good.ends, checked, settings)
    if decided is not None:
        return attrs.evolve(decided, unit=unit, max_cti_row=int(cti_rows.max()), bad_rows=bad_count,
                            first_bad=first_bad)
    return Summary(
        unit=unit,
        decided=locally_certain,
        rows=int(len(kinds)),
        eligible=int(eligible.sum()),
        max_start=int(elig_starts.max()) if len(kinds) else NONE,
        max_cti_row=int(cti_rows.max()) if len(kinds) else NONE,
        min_checked=int(checked.min()) if len(kinds) else INFINITY_MICROS,
        locally_certain=locally_certain,
        tail_max=tail,
        bad_rows=bad_count,
        first_bad=first_bad,
    )


def _exclusive_running_max(values: np.ndarray) -> np.ndarray:
    """The greatest of the values before each position (``NONE`` before the first)."""
    if len(values) == 0:
        return values
    running = np.maximum.accumulate(values)
    return np.concatenate([[NONE], running[:-1]]).astype(np.int64)


#: a unit's guessed decisions are refined at most this many times by ``decide_late``
DECIDE_GUESSES = 6
#: ``decide_late``'s mark of a row whose fate depends on the entering state
UNDECIDED = -1


def decide_late(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, checked: np.ndarray,
                settings: ScanSettings) -> Summary | None:
    """The decisions of a unit's rows that hold for every entering state, where there are such
    (docs/design-fewer-jobs.md, step 7): a row whose checked time is below the least CTI any
    entering state gives it (``low``: the unit's CTI rows and the CTI generated at the earliest
    ``every_events``-th accepted event any entering count can have) is late whatever the state; a
    row at or above the greatest (``high``: at the latest such event, or the entering state's part,
    which ``clean_transfer`` checks) is not. Both bounds depend on the decisions before the row, so
    they are computed from guessed decisions (first: none late) until the decisions they give are
    the guess (then they are the rule's: a row's bounds depend only on the rows before it). None
    where a row falls between the bounds (its fate depends on the entering count), where the
    guesses do not settle, with ``every=`` (a chain of baselines), or where a start ADJUST moves
    could raise the greatest start. Else the unit's summary with its accepted events' facts."""
    if settings.every is not None:
        return None
    n = len(kinds)
    eligible = (kinds == INSERT) | (kinds == START_EDGE)
    cti_before = _exclusive_running_max(np.where(kinds == CTI, starts, NONE))
    end = np.where(kinds == START_EDGE, INFINITY_MICROS, ends)
    every = settings.every_events
    action = np.zeros(n, np.int64)
    floor = NONE
    for _ in range(DECIDE_GUESSES):
        accepted = eligible & (action != DROP)
        running = np.maximum.accumulate(np.where(eligible & (action <= 0), starts, NONE)) if n else starts
        low = high = np.maximum(cti_before, floor)
        greatest_before = np.full(n, NONE, np.int64)
        if every is not None:
            counted = np.cumsum(accepted) - accepted  # accepted events before each row
            # the greatest start after the k-th accepted event at [k] (none at [0]), and less the delay
            at = np.concatenate([[NONE], running[np.flatnonzero(accepted)]])
            if len(at) > 1:
                generated = _shift_all(at, -settings.delay)
                greatest_before = at[counted]
                high = np.maximum(high, generated[counted])
                low = np.maximum(low, generated[np.maximum(counted - every + 1, 0)])
        late = checked < low
        between = (checked < high) & ~late
        new = np.where(late, DROP, 0)
        raised = int(checked[between].max()) + 1 if between.any() else NONE
        if settings.adjust:
            moved = late & (kinds != END_EDGE) & (end > high)
            unsure = late & (kinds != END_EDGE) & (end > low) & ~moved
            if unsure.any():
                raised = max(raised, int(end[unsure].max()))
            between |= unsure
            new = np.where(late & (kinds == END_EDGE), ADJUST_END, np.where(moved, ADJUST_START, new))
        new = np.where(between, UNDECIDED, new)  # taken as accepted by the next guess
        if np.array_equal(new, action) and raised == NONE:
            break
        # rows whose fate depends on the entering state: decided as late under an entering CTI
        # above them (which ``clean_transfer`` then requires)
        action, floor = new, max(floor, raised)
    else:
        return None
    moved = action == ADJUST_START
    if moved.any() and (settings.delay < 0 or bool(np.any(high[moved] > greatest_before[moved]))):
        return None
    accepted = eligible & (action != DROP)
    kept = action == 0
    tail: tuple[int, ...] = ()
    if every is not None and accepted.any():
        tail = tuple(int(v) for v in running[np.flatnonzero(accepted)][-every:])
    return Summary(
        unit=0, rows=n, eligible=int(accepted.sum()),
        max_start=int(running[-1]) if n else NONE, max_cti_row=NONE,
        min_checked=int(checked[kept].min()) if kept.any() else INFINITY_MICROS,
        locally_certain=False, tail_max=tail, bad_rows=0, first_bad=-1, decided=True,
        dropped=int(np.count_nonzero(action == DROP)), adjusted=int(np.count_nonzero(action >= ADJUST_START)),
        moved_end=int(end[moved].min()) if moved.any() else INFINITY_MICROS,
        moved_floor=int(greatest_before[moved].min()) if moved.any() else INFINITY_MICROS, floor=floor,
    )


# --- step 2: the exact state after a partition --------------------------------------------------


def clean_transfer(summary: Summary, state: ScanState, settings: ScanSettings) -> ScanState | None:
    """The state after the partition if none of its events can violate a CTI, else None.

    Within the partition the CTI never exceeds max(incoming CTI, CTI rows so far, greatest start
    so far - delay); ``summarize`` checked every event against the partition's own part of that
    bound, so only the incoming part is left to check here.
    """
    if not (summary.locally_certain or summary.decided) or settings.every is not None:
        return None
    incoming = state.cti
    if settings.generates and state.max_start != NONE:
        incoming = max(incoming, state.max_start - settings.delay)
    if summary.min_checked < incoming:
        return None
    # a late event whose start ADJUST moves: still moved (it ends after the CTI), and its new start
    # (at most the entering CTI or the unit's own bound) raises no greatest start
    if summary.moved_end <= incoming or state.cti > max(state.max_start, summary.moved_floor):
        return None
    if state.cti < summary.floor:
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


def optimistic_transfer(summary: Summary, state: ScanState, settings: ScanSettings) -> ScanState:
    """A guess of the state after a unit that may hold late events: as if none were late.
    Only ever used to start a speculative simulation, whose result is checked before use."""
    cti = max(state.cti, summary.max_cti_row)
    max_start = max(state.max_start, summary.max_start)
    if settings.generates and max_start != NONE:
        cti = max(cti, _shift(max_start, -settings.delay))
    baseline = state.baseline if settings.every is None else max(state.baseline, summary.max_start)
    return ScanState(cti, state.count + summary.eligible, max_start, baseline)


# --- the rule itself, row by row ----------------------------------------------------------------


@attrs.define
class Simulation:
    state: ScanState
    decisions: list[tuple[int, int, int]]  # (seq, action, new time; for DROP the CTI it violated)
    cti_changes: list[tuple[int, int]]  # (row index, CTI after that row)
    dropped: int
    adjusted: int


@attrs.define
class _Scanner:
    """The CTI rule (docs/ctis-and-release.md) over rows in arrival order, exactly as the reference ingress
    (``streamql.reference.inputs``) applies it: ``step`` takes one row; ``skip`` takes a run of
    rows that ``next_stop`` proved change nothing but the count and the greatest start."""

    kinds: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    seqs: np.ndarray
    checked: np.ndarray  # ``checked_times`` of the rows
    settings: ScanSettings
    cti: int
    count: int
    max_start: int
    baseline: int
    decisions: list[tuple[int, int, int]] = attrs.Factory(list)
    changes: list[tuple[int, int]] = attrs.Factory(list)
    dropped: int = 0
    adjusted: int = 0

    def step(self, i: int) -> None:
        """Takes row ``i``: a CTI row may move the CTI; an event or end edge late for it is decided
        (``late_action``); an accepted event may generate a CTI."""
        kind = int(self.kinds[i])
        if kind == CTI:
            self._move_cti(i, int(self.starts[i]))
            return
        cti = self.cti
        action = None
        if int(self.checked[i]) < cti:
            action = late_action(kind, int(self.ends[i]), cti, self.settings.adjust)
            self.decisions.append((int(self.seqs[i]), action, cti))
            if action == DROP:
                self.dropped += 1
            else:
                self.adjusted += 1
        if kind != END_EDGE and action != DROP:
            self._accept(i, cti if action == ADJUST_START else int(self.starts[i]))

    def _accept(self, i: int, start: int) -> None:
        """Takes the accepted event of row ``i``, which starts at ``start`` (after ADJUST)."""
        self.max_start = max(self.max_start, start)
        if self._advance_generation(start):
            self._move_cti(i, _shift(self.max_start, -self.settings.delay))

    def _advance_generation(self, start: int) -> bool:
        """Counts an accepted event that starts at ``start`` for CTI generation, and says whether it
        generates a CTI: the ``every_events``-th event, or one ``every`` past the baseline (then
        the new baseline; the first event sets the first)."""
        settings = self.settings
        if not settings.generates:
            return False
        self.count += 1
        if settings.every_events is not None:
            return self.count % settings.every_events == 0
        if self.baseline == NONE:
            self.baseline = start
            return False
        assert settings.every is not None
        if start < _shift(self.baseline, settings.every):
            return False
        self.baseline = start
        return True

    def _move_cti(self, i: int, cti: int) -> None:
        """Moves the CTI to ``cti`` after row ``i`` where that is later (a CTI never goes back)."""
        if cti > self.cti:
            self.cti = cti
            self.changes.append((i, cti))

    def next_stop(self, lo: int, hi: int) -> int:
        """The first row in ``[lo, hi)`` that ``step`` must take (``hi`` if none): a late event or
        end edge, a CTI row that moves the CTI, the event that generates a CTI or sets the first
        ``every=`` baseline."""
        kinds, starts = self.kinds[lo:hi], self.starts[lo:hi]
        late = self.checked[lo:hi] < self.cti
        accepted = ((kinds == INSERT) | (kinds == START_EDGE)) & ~late
        stops = late | ((kinds == CTI) & (starts > self.cti))
        settings = self.settings
        if settings.every_events is not None:
            need = settings.every_events - self.count % settings.every_events
            stops |= accepted & (np.cumsum(accepted) == need)
        elif settings.every is not None:
            if self.baseline == NONE:
                stops |= accepted
            else:
                stops |= accepted & (starts >= _shift(self.baseline, settings.every))
        found = np.flatnonzero(stops)
        return lo + int(found[0]) if len(found) else hi

    def skip(self, lo: int, hi: int) -> None:
        """Takes rows ``[lo, hi)``, which ``next_stop`` found to change only the count and the
        greatest start."""
        if hi <= lo:
            return
        kinds = self.kinds[lo:hi]
        eligible = (kinds == INSERT) | (kinds == START_EDGE)
        if eligible.any():
            self.max_start = max(self.max_start, int(self.starts[lo:hi][eligible].max()))
            if self.settings.generates:
                self.count += int(eligible.sum())


class _Stepping(Protocol):
    """A scanner that ``_stepped`` drives: ``_Scanner``, ``_ResidueScanner``."""

    def next_stop(self, lo: int, hi: int) -> int: ...

    def skip(self, lo: int, hi: int) -> None: ...

    def step(self, i: int) -> None: ...


def _stepped(scanner: _Stepping, n: int, dense_runs: bool) -> Iterator[int]:
    """Drives ``scanner`` over rows ``[0, n)``: runs of rows that cannot be late are skipped in
    bulk, in windows that double while nothing stops them; each row that may be late is stepped,
    and yielded after its step. ``dense_runs``: where such rows come close together, the next 512
    rows are stepped one by one (cheaper than searching for each)."""
    i, window = 0, 4096
    while i < n:
        hi = min(n, i + window)
        stop = scanner.next_stop(i, hi)
        scanner.skip(i, stop)
        if stop == hi:
            i, window = hi, min(window * 2, 1 << 20)
            continue
        if dense_runs and stop - i < 64:
            for j in range(stop, min(n, stop + 512)):
                scanner.step(j)
                yield j
            i, window = min(n, stop + 512), 4096
            continue
        scanner.step(stop)
        yield stop
        i, window = stop + 1, max(4096, 2 * (stop - i))


def simulate_stepped(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, seqs: np.ndarray,
                     state: ScanState, settings: ScanSettings) -> Simulation:
    """Runs rows in arrival order through the CTI rule and returns the decisions that differ from
    "accept unchanged". Runs of rows that cannot change anything are taken in bulk (numpy);
    where interesting rows are dense, rows are taken one by one (``simulate`` takes whole windows
    of rows in array operations; this is its fallback for ``every=`` and its oracle in the tests)."""
    scanner = _Scanner(kinds, starts, ends, seqs, checked_times(kinds, starts, ends), settings,
                       state.cti, state.count, state.max_start, state.baseline)
    for _ in _stepped(scanner, len(kinds), dense_runs=True):
        pass
    return Simulation(ScanState(scanner.cti, scanner.count, scanner.max_start, scanner.baseline),
                      scanner.decisions, scanner.changes, scanner.dropped, scanner.adjusted)


# --- the rule over whole windows of rows: array operations (docs/design-fewer-jobs.md, step 7) ----

#: a window's guess of the CTIs is refined at most this many times before the rows it proved exact
#: are taken and the next few rows stepped one by one
GUESSES = 4
#: the first window of ``simulate``; it doubles while guesses converge, up to ``MAX_WINDOW``
FIRST_WINDOW, MAX_WINDOW = 1 << 16, 1 << 20
#: rows stepped one by one (``_Scanner``) after a window whose guesses did not converge
STEPPED_ROWS = 64


def _late_actions(kinds: np.ndarray, ends: np.ndarray, cti: np.ndarray, late: np.ndarray,
                  adjust: bool) -> np.ndarray:
    """``late_action`` of every row (0 where ``late`` is False)."""
    if not adjust:
        return np.where(late, DROP, 0)
    end = np.where(kinds == START_EDGE, INFINITY_MICROS, ends)
    action = np.where(end > cti, ADJUST_START, DROP)
    return np.where(late, np.where(kinds == END_EDGE, ADJUST_END, action), 0)


def _window(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, checked: np.ndarray, before: np.ndarray,
            state: ScanState, settings: ScanSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rule over rows whose CTI before each is ``before`` (a guess): each row's action, the
    CTI after each row, which rows are accepted events (counted for generation) and the greatest
    accepted start after each row. Row ``i``'s outputs depend on ``before`` only through the
    decisions of rows up to ``i`` (``every_events`` or no generation; not ``every=``)."""
    late = checked < before  # never a CTI row: its checked time is INFINITY
    action = _late_actions(kinds, ends, before, late, settings.adjust)
    accepted = (kinds == INSERT) | (kinds == START_EDGE)
    if late.any():
        accepted &= action != DROP
        start = np.where(action == ADJUST_START, before, starts)
    else:
        start = starts
    greatest = np.maximum.accumulate(np.where(accepted, start, NONE))
    if state.max_start != NONE:
        greatest = np.maximum(greatest, state.max_start)
    contribution = np.where(kinds == CTI, starts, NONE)
    every = settings.every_events
    if every is not None:
        # the k-th accepted event here is the (count + k)-th: it generates where that divides by every
        generating = np.flatnonzero(accepted)[every - 1 - state.count % every::every]
        if len(generating):
            contribution[generating] = np.maximum(contribution[generating],
                                                  _shift_all(greatest[generating], -settings.delay))
    after = np.maximum.accumulate(contribution)
    if state.cti != NONE:
        after = np.maximum(after, state.cti)
    return action, after, accepted, greatest


def simulate(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, seqs: np.ndarray,
             state: ScanState, settings: ScanSettings) -> Simulation:
    """``simulate_stepped``'s outcome (the rule row by row) computed over whole windows of rows in
    array operations: the CTI before each row is guessed (first as if no row were late), the
    window's decisions and CTIs are computed from the guess (``_window``) and become the next
    guess. A guess that reproduces itself is exact (row ``i``'s CTI depends only on the decisions
    before it), and each round makes at least one more row exact: late events far behind the CTI,
    however many, settle in two or three rounds. Where a window does not settle in ``GUESSES``
    rounds, its rows proved exact are taken and the next ``STEPPED_ROWS`` stepped one by one.
    ``every=`` (a chain of baselines) is stepped row by row."""
    if settings.every is not None:
        return simulate_stepped(kinds, starts, ends, seqs, state, settings)
    checked = checked_times(kinds, starts, ends)
    n = len(kinds)
    decided: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    changed: list[tuple[np.ndarray, np.ndarray]] = []
    lo, window = 0, FIRST_WINDOW
    while lo < n:
        hi = min(n, lo + window)
        k, s, e, c = kinds[lo:hi], starts[lo:hi], ends[lo:hi], checked[lo:hi]
        guess = np.full(hi - lo, NONE, np.int64)
        exact, converged = 0, False
        for _ in range(GUESSES):
            action, after, accepted, greatest = _window(k, s, e, c, guess, state, settings)
            before = np.concatenate([[state.cti], after[:-1]])
            differ = np.flatnonzero(before != guess)
            if not len(differ):
                exact, converged = hi - lo, True
                break
            exact = int(differ[0]) + 1  # rows before the first difference were exact, so is its own CTI
            guess = before
        if not converged:
            # the rows up to the first difference, again from their exact CTIs (all of the window's
            # rows where the last guess differed in its last row only: the arrays above were
            # computed from the guess before, which was wrong there)
            guess = guess[:exact]
            action, after, accepted, greatest = _window(k[:exact], s[:exact], e[:exact], c[:exact], guess, state,
                                                        settings)
        late = np.flatnonzero(action[:exact] != 0)
        decided.append((seqs[lo:lo + exact][late], action[late], guess[late]))
        prior = np.concatenate([[state.cti], after[:exact - 1]]) if exact else after[:0]
        moved = np.flatnonzero(after[:exact] > prior)
        changed.append((moved + lo, after[moved]))
        if exact:
            count = state.count + (int(np.count_nonzero(accepted[:exact])) if settings.generates else 0)
            state = ScanState(int(after[exact - 1]), count, int(greatest[exact - 1]), state.baseline)
        settled = exact == hi - lo
        lo += exact
        if settled:
            window = min(window * 2, MAX_WINDOW)
            continue
        # a window that did not settle: the next rows one by one, then smaller windows
        window = max(STEPPED_ROWS * 4, window // 4)
        upto = min(n, lo + STEPPED_ROWS)
        stepped = simulate_stepped(kinds[lo:upto], starts[lo:upto], ends[lo:upto], seqs[lo:upto], state, settings)
        if stepped.decisions:
            seq, act, time = (np.array(v, np.int64) for v in zip(*stepped.decisions))
            decided.append((seq, act, time))
        if stepped.cti_changes:
            index, cti = (np.array(v, np.int64) for v in zip(*stepped.cti_changes))
            changed.append((index + lo, cti))
        state, lo = stepped.state, upto
    seq = np.concatenate([d[0] for d in decided]) if decided else np.zeros(0, np.int64)
    act = np.concatenate([d[1] for d in decided]) if decided else np.zeros(0, np.int64)
    time = np.concatenate([d[2] for d in decided]) if decided else np.zeros(0, np.int64)
    index = np.concatenate([c[0] for c in changed]) if changed else np.zeros(0, np.int64)
    cti = np.concatenate([c[1] for c in changed]) if changed else np.zeros(0, np.int64)
    return Simulation(state, list(zip(seq.tolist(), act.tolist(), time.tolist())),
                      list(zip(index.tolist(), cti.tolist())),
                      int(np.count_nonzero(act == DROP)), int(np.count_nonzero(act != DROP)))


# --- one simulation for every entering count (docs/design-fewer-jobs.md, step 5) -----------------

#: ``every_events`` above this: a unit is not simulated for every residue of the entering count
MAX_RESIDUES = 4096
#: a residue table is given up (``simulate_residues`` returns None) when its stops times its
#: residues exceed this: so many candidate late rows cost more than a second round (and each
#: stop may add a decision per residue)
RESIDUE_WORK = 1 << 21
#: below every entering CTI (``ResidueTable.low`` before anything narrows it)
LOWEST = -(2**63)


def residues(settings: ScanSettings) -> int | None:
    """How many residues of the entering count a unit's outcome can depend on: ``every_events``,
    1 without generation (the count does not matter), None where the outcome is not a function
    of the residue (``every=``: a chain of baselines) or there are too many."""
    if settings.every is not None:
        return None
    if settings.every_events is None:
        return 1
    return settings.every_events if settings.every_events <= MAX_RESIDUES else None


@attrs.frozen(eq=False)
class ResidueTable:
    """A unit simulated for every residue ``r`` of the entering count (``count % every_events``),
    from a greatest start ``max_start`` and under a CTI ``floor`` (the guessed entering CTI),
    with the unit's own part of the CTI (``inner``: its CTI rows and generated CTIs) kept apart
    from the floor. For an entering state with that residue and greatest start and a CTI ``c``
    with ``low[r] < c <= floor`` the unit decides the same rows the same way, each late row's
    time being ``max(c, time)``, and leaves the CTI ``max(c, inner[r])``, the count plus
    ``added[r]`` and the greatest start ``after_max[r]``. Arrays are indexed by the residue; the
    decisions are rows of ``residue``, ``seq``, ``action``, ``time``."""

    added: np.ndarray
    inner: np.ndarray
    after_max: np.ndarray
    low: np.ndarray
    dropped: np.ndarray
    adjusted: np.ndarray
    residue: np.ndarray
    seq: np.ndarray
    action: np.ndarray
    time: np.ndarray


def _shift_all(t: np.ndarray, d: int) -> np.ndarray:
    """``_shift`` of every value, ``NONE`` kept (no event yet: nothing generated)."""
    if d == 0:
        return t
    finite = (t != INFINITY_MICROS) & (t != NONE)
    moved = np.where(finite, t, 0) + d
    if d > 0:
        moved = np.where(moved > MAX_MICROS, INFINITY_MICROS, moved)
    else:
        moved = np.maximum(MIN_MICROS, moved)
    return np.where(finite, moved, t).astype(np.int64, copy=False)


@attrs.define
class _ResidueScanner:
    """``_Scanner`` for every residue of the entering count at once: numpy arrays of states."""

    kinds: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    seqs: np.ndarray
    checked: np.ndarray
    settings: ScanSettings
    floor: int
    n: int  # residues
    phase: np.ndarray  # the count modulo every_events, per residue
    inner: np.ndarray
    max_start: np.ndarray
    added: np.ndarray
    low: np.ndarray
    dropped: np.ndarray
    adjusted: np.ndarray
    decided: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = attrs.Factory(list)

    def next_stop(self, lo: int, hi: int) -> int:
        """The first row in ``[lo, hi)`` that some residue may find late (``hi`` if none): its
        checked time below the greatest CTI any residue can have there (``summarize``'s bound)."""
        kinds, starts = self.kinds[lo:hi], self.starts[lo:hi]
        bound = np.maximum(_exclusive_running_max(np.where(kinds == CTI, starts, NONE)),
                           max(self.floor, int(self.inner.max())))
        if self.settings.generates:
            eligible = (kinds == INSERT) | (kinds == START_EDGE)
            greatest = np.maximum(_exclusive_running_max(np.where(eligible, starts, NONE)), int(self.max_start.max()))
            bound = np.maximum(bound, _shift_all(greatest, -self.settings.delay))
        found = np.flatnonzero(self.checked[lo:hi] < bound)
        return lo + int(found[0]) if len(found) else hi

    def skip(self, lo: int, hi: int) -> None:
        """Takes rows ``[lo, hi)``, late for no residue: their CTI rows and, per residue, the CTI
        generated at its last ``every_events``-th event among them (CTIs only grow, so the order
        of these moves does not matter)."""
        if hi <= lo:
            return
        kinds, starts = self.kinds[lo:hi], self.starts[lo:hi]
        cti_rows = starts[kinds == CTI]
        if len(cti_rows):
            self.inner = np.maximum(self.inner, int(cti_rows.max()))
        accepted = starts[(kinds == INSERT) | (kinds == START_EDGE)]
        k = len(accepted)
        if not k:
            return
        every = self.settings.every_events
        if every is not None:
            running = np.maximum.accumulate(accepted)
            last = k - (self.phase + k) % every  # 1-based position of each residue's last generating event
            greatest = np.maximum(self.max_start, running[np.maximum(last, 1) - 1])
            generated = _shift_all(greatest, -self.settings.delay)
            self.inner = np.where(last >= 1, np.maximum(self.inner, generated), self.inner)
            self.phase = (self.phase + k) % every
            self.added += k
        self.max_start = np.maximum(self.max_start, int(accepted.max()))

    def step(self, i: int) -> None:
        """Takes row ``i`` for every residue, narrowing ``low`` where the decision depends on the
        entering CTI below the floor."""
        kind = int(self.kinds[i])
        if kind == CTI:
            self.inner = np.maximum(self.inner, int(self.starts[i]))
            return
        checked, floor = int(self.checked[i]), self.floor
        cti = np.maximum(self.inner, floor)
        late = checked < cti
        # late only through the floor: late for an entering CTI above ``checked`` only
        self.low = np.where(late & (checked >= self.inner), np.maximum(self.low, checked), self.low)
        action = np.where(late, DROP, 0)
        if self.settings.adjust:
            if kind == END_EDGE:
                action = np.where(late, ADJUST_END, 0)
            else:
                end = INFINITY_MICROS if kind == START_EDGE else int(self.ends[i])
                moved = late & (end > cti)
                action = np.where(moved, ADJUST_START, action)
                # dropped under the floor, moved under a lower entering CTI at or above the end
                narrowed = late & ~moved & (end > self.inner)
                self.low = np.where(narrowed, np.maximum(self.low, end - 1), self.low)
        if late.any():
            which = np.flatnonzero(late)
            self.decided.append((which, int(self.seqs[i]), action[which], self.inner[which]))
            self.dropped += action == DROP
            self.adjusted += (action == ADJUST_START) | (action == ADJUST_END)
        if kind == END_EDGE:
            return
        accepted = action != DROP
        moved_start = action == ADJUST_START
        # a start moved to max(c, inner) may raise the greatest start by an amount c decides
        risky = moved_start & (self.inner < floor) & (self.max_start < floor)
        self.low = np.where(risky, np.maximum(self.low, floor - 1), self.low)
        start = np.where(moved_start, cti, int(self.starts[i]))
        self.max_start = np.where(accepted, np.maximum(self.max_start, start), self.max_start)
        every = self.settings.every_events
        if every is not None:
            self.added += accepted
            self.phase = np.where(accepted, (self.phase + 1) % every, self.phase)
            generating = accepted & (self.phase == 0)
            self.inner = np.where(generating, np.maximum(self.inner, _shift_all(self.max_start, -self.settings.delay)),
                                  self.inner)


def simulate_residues(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, seqs: np.ndarray,
                      floor: int, max_start: int, settings: ScanSettings) -> ResidueTable | None:
    """``simulate`` for every residue of the entering count at once (``ResidueTable``), or None
    where so many rows may be late that the table would cost more than simulating again."""
    n = residues(settings)
    assert n is not None
    zeros = np.zeros(n, np.int64)
    scanner = _ResidueScanner(kinds, starts, ends, seqs, checked_times(kinds, starts, ends), settings, floor, n,
                              phase=np.arange(n, dtype=np.int64), inner=np.full(n, NONE, np.int64),
                              max_start=np.full(n, max_start, np.int64), added=zeros.copy(),
                              low=np.full(n, LOWEST, np.int64), dropped=zeros.copy(), adjusted=zeros.copy())
    for stops, _ in enumerate(_stepped(scanner, len(kinds), dense_runs=False), start=1):
        if stops * n > RESIDUE_WORK:
            return None
    decided = scanner.decided
    return ResidueTable(
        added=scanner.added, inner=scanner.inner, after_max=scanner.max_start, low=scanner.low,
        dropped=scanner.dropped, adjusted=scanner.adjusted,
        residue=np.concatenate([d[0] for d in decided]) if decided else zeros[:0],
        seq=np.concatenate([np.full(len(d[0]), d[1], np.int64) for d in decided]) if decided else zeros[:0],
        action=np.concatenate([d[2] for d in decided]).astype(np.int64) if decided else zeros[:0],
        time=np.concatenate([d[3] for d in decided]) if decided else zeros[:0],
    )
