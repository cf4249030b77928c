"""The arrival-order scan in array operations (docs/design-fewer-jobs.md, step 7).

``arrival_scan.simulate`` (whole windows of rows, guessed CTIs refined until they reproduce
themselves) against ``simulate_stepped`` (the rule row by row) on random units with late events
everywhere, both policies, CTI rows, edges, negative delays and windows small enough that every
path of the window logic runs; and the summary pass's decision of a unit with late events
(``summarize``, then ``clean_transfer``) against the simulation from every entering state it
accepts."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamql.spark.ingress import arrival_scan as scan
from support.depth import examples

KINDS = [scan.INSERT, scan.INSERT, scan.INSERT, scan.START_EDGE, scan.END_EDGE, scan.CTI]

Unit = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@st.composite
def unit_rows(draw: st.DrawFn, kinds: list[int] = KINDS) -> Unit:
    """A unit's rows: mostly rising starts, some far back (late), some just behind, CTI rows, edges."""
    n = draw(st.integers(0, 80))
    late = draw(st.sampled_from([[0, 0, 0, 1, 3, 12, 40], [0, 40], [0, 0, 0, 0, 0, 0, 0, 0, 0, 400]]))
    out_kinds, starts, ends = [], [], []
    t = draw(st.integers(-50, 50))
    for _ in range(n):
        kind = draw(st.sampled_from(kinds))
        t += draw(st.integers(0, 6))
        start = t - draw(st.sampled_from(late))
        out_kinds.append(kind)
        starts.append(start)
        ends.append(start + draw(st.integers(1, 30)))
    seqs = np.arange(n, dtype=np.int64) + 1000
    return np.array(out_kinds, np.int64), np.array(starts, np.int64), np.array(ends, np.int64), seqs


@st.composite
def entering(draw: st.DrawFn) -> scan.ScanState:
    cti = draw(st.one_of(st.just(scan.NONE), st.integers(-60, 60)))
    max_start = draw(st.one_of(st.just(scan.NONE), st.integers(-60, 80)))
    return scan.ScanState(cti, draw(st.integers(0, 20)), max_start, scan.NONE)


@pytest.mark.parametrize(("window", "guesses"), [(4, 4), (1 << 16, 4), (1 << 16, 1), (1 << 16, 2)])
@settings(deadline=None, max_examples=examples(300))
@given(rows=unit_rows(), state=entering(), every=st.sampled_from([None, 1, 2, 3, 5, 20]),
       delay=st.sampled_from([0, 2, 7, -1]), adjust=st.booleans())
def test_the_windows_are_the_rule_row_by_row(window: int, guesses: int, rows: Unit, state: scan.ScanState,
                                             every: int | None, delay: int, adjust: bool) -> None:
    """Also with one or two guesses a window: then most windows end unsettled, and some with their
    guesses differing in the last row only (``test_a_window_whose_last_guess_differs_in_its_last_row``)."""
    at = scan.ScanSettings(every_events=every, every=None, delay=delay, adjust=adjust)
    expected = scan.simulate_stepped(*rows, state, at)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "FIRST_WINDOW", window)
        patch.setattr(scan, "GUESSES", guesses)
        patch.setattr(scan, "STEPPED_ROWS", 3)
        got = scan.simulate(*rows, state, at)
    assert got.decisions == expected.decisions
    assert got.state == expected.state
    assert got.cti_changes == expected.cti_changes
    assert (got.dropped, got.adjusted) == (expected.dropped, expected.adjusted)


def test_a_window_whose_last_guess_differs_in_its_last_row() -> None:
    """Found by the deep tier (an Esper property test, DROP, a CTI every 2 events, delay 2): after
    its four guesses the window's CTIs differed in its last row only. Every row was then exact, but
    the decisions were still those of the previous guess, which put the CTI 16058 before the last
    event (16044) and dropped it. The rule: the five first events are late for the entering CTI
    15500 and the one at 16039 for the CTI 16040, so the event at 16060 is the 29th (it generates
    nothing) and the one at 16044 the 30th, which is accepted and generates 16058 itself."""
    starts = np.array([15000, 15001, 15002, 15002, 15000, 16010, 16034, 16034, 16042, 16036, 16039, 16060, 16044],
                      np.int64)
    ends = np.array([15005, 15002, 15008, 15004, 15005, 16016, 16040, 16036, 16044, 16038, 16043, 16064, 16046],
                    np.int64)
    kinds, seqs = np.zeros(len(starts), np.int64), np.arange(len(starts), dtype=np.int64)
    at = scan.ScanSettings(every_events=2, every=None, delay=2, adjust=False)
    state = scan.ScanState(cti=15500, count=23, max_start=15003)
    got = scan.simulate(kinds, starts, ends, seqs, state, at)
    dropped = [(0, 15500), (1, 15500), (2, 15500), (3, 15500), (4, 15500), (10, 16040)]
    assert got.decisions == [(seq, scan.DROP, cti) for seq, cti in dropped]
    # rows 5, 7, 9 and 12 are the 24th, 26th, 28th and 30th events: their greatest starts less 2
    assert got.cti_changes == [(5, 16008), (7, 16032), (9, 16040), (12, 16058)]
    assert got.state == scan.ScanState(cti=16058, count=30, max_start=16060)
    assert got == scan.simulate_stepped(kinds, starts, ends, seqs, state, at)


def test_late_events_far_behind_settle_in_whole_windows() -> None:
    """The benchmark's shape: 1 in 10 events 5 s late, a CTI every 1,000 events: no row is stepped."""
    n = 200_000
    ids = np.arange(n, dtype=np.int64)
    starts = ids * 1000 - (ids % 7) * 100 - np.where(ids % 10 == 0, 5_000_000, 0)
    kinds = np.zeros(n, np.int64)
    at = scan.ScanSettings(every_events=1000, every=None, delay=1000, adjust=False)
    state = scan.ScanState()
    steps = []
    original = scan.simulate_stepped

    def counted(*args: object) -> scan.Simulation:
        steps.append(1)
        return original(*args)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "simulate_stepped", counted)
        got = scan.simulate(kinds, starts, starts + 1, ids, state, at)
    assert not steps
    expected = original(kinds, starts, starts + 1, ids, state, at)
    assert got.decisions == expected.decisions and got.state == expected.state


@settings(deadline=None, max_examples=examples(300))
@given(rows=unit_rows(), states=st.lists(entering(), min_size=1, max_size=6),
       every=st.sampled_from([None, 1, 2, 3, 5, 20]), delay=st.sampled_from([0, 2, 7, -1]), adjust=st.booleans())
def test_a_unit_decided_by_its_summary_is_its_simulation(rows: Unit, states: list[scan.ScanState], every: int | None,
                                                         delay: int, adjust: bool) -> None:
    """Whatever entering state ``clean_transfer`` accepts for a summary, its state after is the
    simulation's, and so are the late events' count (the decisions themselves are simulated from
    the exact state when the output is built)."""
    kinds, starts, ends, seqs = rows
    at = scan.ScanSettings(every_events=every, every=None, delay=delay, adjust=adjust)
    summary = scan.summarize(scan.Rows(kinds, starts, ends, np.zeros(len(kinds), bool), seqs), at, unit=0)
    for state in states:
        after = scan.clean_transfer(summary, state, at)
        if after is None:
            continue
        expected = scan.simulate_stepped(kinds, starts, ends, seqs, state, at)
        assert (after.cti, after.max_start) == (expected.state.cti, expected.state.max_start)
        if every is not None:
            assert after.count == expected.state.count
        assert (summary.dropped, summary.adjusted) == (expected.dropped, expected.adjusted)


def test_late_events_far_behind_are_decided_by_the_summary() -> None:
    """The benchmark's shape: the summary decides the unit for the states the units before it leave."""
    n = 100_000
    ids = np.arange(n, dtype=np.int64)
    starts = ids * 1000 - (ids % 7) * 100 - np.where(ids % 10 == 0, 5_000_000, 0)
    kinds = np.zeros(n, np.int64)
    at = scan.ScanSettings(every_events=1000, every=None, delay=1000, adjust=False)
    first = scan.summarize(scan.Rows(kinds[:50_000], starts[:50_000], starts[:50_000] + 1,
                                     np.zeros(50_000, bool), ids[:50_000]), at, unit=0)
    second = scan.summarize(scan.Rows(kinds[50_000:], starts[50_000:], starts[50_000:] + 1,
                                      np.zeros(50_000, bool), ids[50_000:]), at, unit=1)
    assert first.decided and second.decided and second.dropped == 5_000
    # the first unit from the input's first state: its late events before the first CTI are not
    # late; the summary's decisions need an entering CTI above them (the first unit is simulated)
    assert scan.clean_transfer(first, scan.ScanState(), at) is None
    state = scan.simulate_stepped(kinds[:50_000], starts[:50_000], starts[:50_000] + 1, ids[:50_000],
                                  scan.ScanState(), at).state
    end = scan.clean_transfer(second, state, at)
    expected = scan.simulate_stepped(kinds, starts, starts + 1, ids, scan.ScanState(), at)
    assert end == expected.state
