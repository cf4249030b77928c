"""A live step's carried state in memory (``StateStore.commit``): the next step reads the frames
that the state's write checkpointed locally, not the files just written; a restart, or a state
directory this store did not write, reads the files. The runs release what batch runs release."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.spark.streaming.state import Carried, StateStore
from support.json_readings import EVERY_4, rows
from support.live_counts import files, sink_matches_batch, start

#: the jobs of a clean step of the hopping counts (no feed): the scan's summary, the sink's write
#: (which computes the step), the state's write (which checkpoints it) — three before the state
#: was kept in memory too
JOBS_PER_STEP = 3


def plan_of(df: DataFrame) -> str:
    """``df``'s plans as ``explain`` prints them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain(extended=True)
    return out.getvalue()


@contextlib.contextmanager
def loads_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The micro-batches whose states are read from their files (``StateStore.load``) in the block."""
    loaded: list[int] = []
    original = StateStore.load

    def load(self: StateStore, batch: int, session: Any = None) -> Carried:
        loaded.append(batch)
        return original(self, batch, session)

    monkeypatch.setattr(StateStore, "load", load)
    yield loaded
    monkeypatch.setattr(StateStore, "load", original)


def test_the_next_step_reads_the_carried_state_from_memory(spark: SparkSession, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    everything = rows(0, 24)
    files(tmp_path / "in", [everything[0:8], everything[8:16], everything[16:24]])
    with loads_counted(monkeypatch) as loaded:
        running = start(spark, tmp_path)
        running.process_all_available()
    # no step read a state from its files: the first had none, the others the previous one's frames
    assert loaded == []
    progress = running.progress
    assert [p.batch for p in progress] == [0, 1, 2]
    assert all(p.jobs is not None and p.jobs <= JOBS_PER_STEP for p in progress), [p.jobs for p in progress]
    store = running._runner.queries[running.name].store
    latest = store.latest()
    assert latest == 2
    carried = store.carried(latest)
    frames = list(carried.frames().values())
    assert frames and progress[-1].state_rows > 0
    for df in frames:  # a leaf over Spark's blocks: no file scan, no lineage of the steps
        assert df.inputFiles() == []
        plan = plan_of(df)
        assert "FileScan" not in plan and "Relation [" not in plan and "ExistingRDD" in plan, plan
    # the same state read from the files (what a restart reads) holds the same rows
    from_files = store.load(latest)
    assert all(df.inputFiles() for df in from_files.frames().values())
    for name, df in carried.frames().items():
        assert sorted(map(tuple, df.collect())) == sorted(map(tuple, from_files.frames()[name].collect())), name
    # a state directory that this store did not write (its mark differs) is read from its files
    meta = tmp_path / "ck" / "streamql" / f"state-{latest:012d}" / "meta.json"
    written = json.loads(meta.read_text())
    store.files.write_text(str(meta), json.dumps({**written, "written": "another writer"}))  # its checksum too
    assert all(df.inputFiles() for df in store.carried(latest).frames().values())
    store.files.write_text(str(meta), json.dumps(written))
    running.stop()
    released = sink_matches_batch(spark, tmp_path, everything, EVERY_4)
    assert sum(p.released for p in running.progress) == released > 0


@pytest.mark.slow
def test_a_restarted_query_reads_the_committed_state_from_its_files(spark: SparkSession, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    everything = rows(0, 40)
    files(tmp_path / "in", [everything[0:10], everything[10:20]])
    first = start(spark, tmp_path)
    first.process_all_available()
    first.stop(flush=False)  # a pause: the next run starts from the committed state
    files(tmp_path / "in", [everything[20:30], everything[30:40]], first=2)
    with loads_counted(monkeypatch) as loaded:
        second = start(spark, tmp_path)  # a new runner: nothing of the first run in its memory
        second.process_all_available()
        second.stop(flush=False)
    assert [p.batch for p in second.progress] == [2, 3]
    # its first step read the first run's last state from the files, its second step from memory
    assert loaded == [1]
    # and it released what an uninterrupted batch run releases (no flush: the run was not stopped)
    unflushed = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4))
    released = sink_matches_batch(spark, tmp_path, everything, unflushed)
    assert sum(p.released for p in [*first.progress, *second.progress]) == released > 0


@pytest.mark.slow
def test_a_step_whose_state_in_memory_is_lost_runs_again_from_the_files(spark: SparkSession, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from streamql.running import _Query

    everything = rows(0, 30)
    files(tmp_path / "in", [everything[0:10], everything[10:20], everything[20:30]])
    original = _Query._step
    failed: list[int] = []

    def step(self: _Query, carried: Carried, new: Any, batch: int, *args: Any) -> Any:
        if self.store.in_memory(carried) and not failed:  # as a job fails on a lost executor's blocks
            failed.append(batch)
            raise RuntimeError("Checkpoint block rdd_1_0 not found")
        return original(self, carried, new, batch, *args)

    monkeypatch.setattr(_Query, "_step", step)
    with loads_counted(monkeypatch) as loaded:
        running = start(spark, tmp_path)
        running.process_all_available()
        running.stop(flush=False)
    assert running.exception() is None
    assert failed == [1] and loaded == [0]  # micro-batch 1 ran again from micro-batch 0's files
    assert [p.batch for p in running.progress] == [0, 1, 2]
    unflushed = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4))
    released = sink_matches_batch(spark, tmp_path, everything, unflushed)
    assert sum(p.released for p in running.progress) == released > 0
