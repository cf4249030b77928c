"""Late events in one simulation round (docs/design-fewer-jobs.md, step 5).

The residue table of a scan unit (``arrival_scan.simulate_residues``) against the sequential rule
(``arrival_scan.simulate``) for every entering state it claims to cover — and it covers every
state whose CTI is its floor; then on Spark, an input shaped like the benchmark's ``alter-late``
(several partitions, late events after drops in each, ``every_events`` CTIs) in one simulation
round, equal to the reference evaluator."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.runtime.phases import recording
from support.depth import examples, tiered
from support.frames import bind, frame

KINDS = [scan.INSERT, scan.INSERT, scan.INSERT, scan.START_EDGE, scan.END_EDGE, scan.CTI]


@st.composite
def unit_rows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A unit's rows: mostly rising starts, some far back (late), some CTI rows and edges."""
    n = draw(st.integers(0, 60))
    kinds, starts, ends = [], [], []
    t = draw(st.integers(-50, 50))
    for _ in range(n):
        kind = draw(st.sampled_from(KINDS))
        t += draw(st.integers(0, 6))
        start = t - draw(st.sampled_from([0, 0, 0, 1, 3, 12, 40]))
        length = draw(st.integers(1, 30))
        kinds.append(kind)
        starts.append(start)
        ends.append(start + length)
    seqs = np.arange(n, dtype=np.int64) + 1000
    return (np.array(kinds, np.int64), np.array(starts, np.int64), np.array(ends, np.int64), seqs)


@st.composite
def entering(draw: st.DrawFn) -> scan.ScanState:
    """A state entering a unit (no ``every=`` baseline: residue tables are for ``every_events``)."""
    cti = draw(st.one_of(st.just(scan.NONE), st.integers(-60, 60)))
    max_start = draw(st.one_of(st.just(scan.NONE), st.integers(-60, 80)))
    return scan.ScanState(cti, draw(st.integers(0, 20)), max_start, scan.NONE)


@settings(deadline=None, max_examples=examples(1000))
@given(rows=unit_rows(), data=st.data(), every=st.sampled_from([None, 1, 2, 3, 5]),
       delay=st.sampled_from([0, 2, 7, -1]), adjust=st.booleans())
def test_the_residue_table_is_the_simulation_from_every_state_it_covers(
        rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], data: st.DataObject, every: int | None,
        delay: int, adjust: bool) -> None:
    kinds, starts, ends, seqs = rows
    at = scan.ScanSettings(every_events=every, every=None, delay=delay, adjust=adjust)
    state = data.draw(entering(), label="state")
    # the floor: the entering CTI itself (always covered) or a guess above or below it
    floor = data.draw(st.one_of(st.just(state.cti), st.integers(-60, 80)), label="floor")
    table = scan.simulate_residues(kinds, starts, ends, seqs, floor, state.max_start, at)
    assert table is not None
    r = state.count % every if every is not None else 0
    covered = int(table.low[r]) < state.cti <= floor
    if floor == state.cti:
        assert covered
    if not covered:
        return
    expected = scan.simulate(kinds, starts, ends, seqs, state, at)
    mine = table.residue == r
    decisions = [(int(s), int(a), max(state.cti, int(t)))
                 for s, a, t in zip(table.seq[mine], table.action[mine], table.time[mine])]
    assert decisions == expected.decisions
    after = scan.ScanState(max(state.cti, int(table.inner[r])), state.count + int(table.added[r]),
                           int(table.after_max[r]), state.baseline)
    assert after == expected.state
    assert (int(table.dropped[r]), int(table.adjusted[r])) == (expected.dropped, expected.adjusted)


# --- on Spark -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Meter:
    meter: int
    value: int


METERS = sq.input("meters", Meter, shape=sq.Shape.INTERVAL)
ALTER = METERS.where(lambda e: e.value % 5 != 1).select(lambda e: Meter(e.meter, e.value * 2))


def alter_late(count: int, late_every: int) -> list[InputItem[Meter]]:
    """``alter-late`` in miniature: an event every 10 ticks, each moved back by up to 6 (within the
    delay), and every ``late_every``-th one 400 ticks late (40 events back: beyond the CTI); the
    late ones alternately short (DROP and ADJUST drop them) and long (ADJUST moves them)."""
    items: list[InputItem[Meter]] = []
    for k in range(count):
        start = 10 * k - k % 7
        length = 5
        if k % late_every == late_every // 2:
            start -= 400
            length = 5 if k % (2 * late_every) < late_every else 900
        items.append(sq.Insert(start, start + length, Meter(k % 4, k)))
    return items


def alter_settings(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=20, delay=sq.TICK * 7, flush=True),
                                  policy=policy)


@pytest.mark.parametrize("policy", tiered([sq.AdvanceTimePolicy.DROP, sq.AdvanceTimePolicy.ADJUST], deep={"ADJUST"},
                                           name=lambda p: p.name))
def test_late_events_in_every_unit_take_at_most_one_simulation_round(spark: SparkSession,
                                                             policy: sq.AdvanceTimePolicy) -> None:
    items = alter_late(800, 53)  # 4 partitions of 200 events, 3 or 4 late events in each
    at = alter_settings(policy)
    expected = sq.reference.run(ALTER, {"meters": sq.reference.ReferenceInput(items, at)}, late=True)
    assert expected.dropped >= 7 and (policy is sq.AdvanceTimePolicy.DROP or expected.adjusted >= 7)
    df = frame(spark, Meter, sq.Shape.INTERVAL, items, partitions=4)
    binder = bind(sq.Binder(spark), METERS, df, sq.Shape.INTERVAL, at)
    with recording(spark) as phases:
        actual = binder.run(ALTER, late=True)
    assert actual == expected
    # every unit holds late events: at most one simulation job (three before residue tables; none
    # where the summaries decide every unit, docs/design-fewer-jobs.md step 7)
    simulation = phases.by_name.get("scan simulation")
    assert simulation is None or simulation.times == 1
