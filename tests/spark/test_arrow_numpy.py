"""The scan's worker code converts between Arrow and numpy without pandas
(``streamql.spark.base.arrow_numpy``): the conversions equal pyarrow's own on random columns and
rows, and the scan's worker functions run in a fresh process without importing pandas (pyarrow
would import it on its first ``to_numpy`` or ``pa.array``: 0.4-0.8 s in each of a session's
Python workers)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamql.spark.base.arrow_numpy import array_of, batch_of_rows, int64_values, is_null
from streamql.spark.ingress.scan import _INPUT, _SIMULATION_ARROW, _SUMMARY_ARROW
from support.depth import examples
from support.worker_check import child_env

pytestmark = pytest.mark.hypothesis

_INTEGERS = [(pa.int8(), 8), (pa.int16(), 16), (pa.int32(), 32), (pa.int64(), 64)]


@st.composite
def _columns(draw: st.DrawFn) -> pa.ChunkedArray:
    kind, bits = draw(st.sampled_from(_INTEGERS))
    value = st.one_of(st.none(), st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    chunks = []
    for values in draw(st.lists(st.lists(value, max_size=20), max_size=4)):
        chunk = pa.array(values, kind)
        cut = draw(st.integers(0, len(values)))  # a sliced chunk: its values start at an offset
        chunks.append(chunk.slice(cut))
    return pa.chunked_array(chunks, kind)


@given(_columns(), st.integers(-5, 5))
@settings(deadline=None, max_examples=examples(200))
def test_int64_values_and_nulls_equal_pyarrows_own(column: pa.ChunkedArray, null: int) -> None:
    expected = column.to_pylist()
    assert is_null(column).tolist() == [v is None for v in expected]
    values = int64_values(column, null)
    assert values.dtype == np.int64
    assert values.tolist() == [null if v is None else v for v in expected]


def test_a_column_of_the_null_type_is_all_null() -> None:
    column = pa.chunked_array([pa.nulls(3)])
    assert is_null(column).tolist() == [True] * 3
    assert int64_values(column, -1).tolist() == [-1] * 3


def test_arrays_of_booleans_and_integers_and_values_that_do_not_fit() -> None:
    assert array_of(np.array([True, False, True] * 5), pa.bool_()).to_pylist() == [True, False, True] * 5
    assert array_of(np.arange(4), pa.int32()).equals(pa.array([0, 1, 2, 3], pa.int32()))
    assert array_of(np.zeros(0, np.int64), pa.int64()).equals(pa.array([], pa.int64()))
    with pytest.raises(OverflowError, match="int32"):
        array_of(np.array([2 ** 40]), pa.int32())
    with pytest.raises(TypeError, match="booleans"):
        array_of(np.array([1, 0]), pa.bool_())


_LONG = st.one_of(st.none(), st.integers(-(2 ** 63), 2 ** 63 - 1))


def _row_of(schema: pa.Schema) -> st.SearchStrategy[dict[str, Any]]:
    def field(kind: pa.DataType) -> st.SearchStrategy[Any]:
        if kind == pa.bool_():
            return st.one_of(st.none(), st.booleans())
        if kind == pa.int32():
            return st.one_of(st.none(), st.integers(-(2 ** 31), 2 ** 31 - 1))
        if pa.types.is_list(kind):
            return st.one_of(st.none(), st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), max_size=5),
                             st.lists(st.integers(-9, 9), max_size=3).map(lambda v: np.array(v, np.int64)))
        return st.one_of(_LONG, st.integers(-9, 9).map(np.int64))
    # some fields left out (null), and a key the schema lacks (left out, as from_pylist does)
    return st.fixed_dictionaries({}, optional={f.name: field(f.type) for f in schema}).map(
        lambda row: {**row, "_not_in_the_schema": 1})


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in row.items()}


@given(st.sampled_from([_SUMMARY_ARROW, _SIMULATION_ARROW]).flatmap(
    lambda schema: st.tuples(st.just(schema), st.lists(_row_of(schema), max_size=4))))
@settings(deadline=None, max_examples=examples(100))
def test_a_batch_of_rows_equals_pyarrows_from_pylist(drawn: tuple[pa.Schema, list[dict[str, Any]]]) -> None:
    schema, rows = drawn
    built = batch_of_rows(rows, schema)
    assert built.schema == schema
    assert built.equals(pa.RecordBatch.from_pylist([_plain(r) for r in rows], schema=schema))


# the scan's worker functions over one partition: the summary (arrival values with a null, a bad
# row, late events decided in the summary, several inputs) and the simulation of a unit; the input
# comes as Arrow IPC, which the child reads without pyarrow's conversions
_WORKER = """
import sys
import pyarrow as pa
import pyspark
pyspark.TaskContext.get = classmethod(lambda cls: type("Task", (), {"partitionId": lambda self: 0})())
from streamql.spark.ingress import arrival_scan as scan
from streamql.spark.ingress.scan import _simulate_units, _summarize_inputs, _summarize_units
with pa.ipc.open_stream(sys.argv[1]) as one, pa.ipc.open_stream(sys.argv[2]) as several:
    batch, both = one.read_next_batch(), several.read_next_batch()
for adjust in (False, True):
    settings = scan.ScanSettings(every_events=2, every=None, delay=0, adjust=adjust)
    summaries = list(_summarize_units(settings, scan.ScanState())(iter([batch])))
    per_input = list(_summarize_inputs({0: (settings, True), 1: (settings, False)})(iter([both])))
    simulated = list(_simulate_units({0: scan.ScanState()}, settings)(iter([batch.drop_columns(["arrival"])])))
    assert sum(b.num_rows for b in summaries) == 1 and sum(b.num_rows for b in per_input) == 2
    assert sum(b.num_rows for b in simulated) > 1  # the unit's state and its decisions
print(sorted(m for m in sys.modules if m == "pandas" or m.startswith("pandas.")))
"""


def _stream(path: Path, batch: pa.RecordBatch) -> str:
    with pa.ipc.new_stream(str(path), batch.schema) as out:
        out.write_batch(batch)
    return str(path)


def test_the_scans_worker_functions_run_without_importing_pandas(tmp_path: Path) -> None:
    batch = pa.RecordBatch.from_pydict({
        "kind": pa.array([0, 0, 3, 0, 0, 3, 0, 0], pa.int32()),
        "start": pa.array([10, 20, 25, 5, None, 40, 30, 50], pa.int64()),
        "end": pa.array([11, 21, 25, 6, None, 40, 31, 51], pa.int64()),
        "arrival": pa.array([1, 2, 3, None, 5, 6, 7, 8], pa.int64())})
    both = batch.append_column(_INPUT, pa.array([0, 1] * 4, pa.int32()))
    done = subprocess.run([sys.executable, "-c", _WORKER, _stream(tmp_path / "one", batch),
                           _stream(tmp_path / "several", both)],
                          capture_output=True, text=True, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
