"""Arrow columns to numpy arrays and back, without pandas.

pyarrow imports pandas (where it is installed) the first time a process converts values to Arrow
(``pa.array``, ``RecordBatch.from_pylist``, ``pa.scalar``, ``fill_null``) or Arrow to numpy
(``to_numpy``): 0.4-0.8 s in each of a session's Python workers, which the session's first query
pays inside its scan summary (docs/design-fewer-jobs.md, "The first query of a session"). The
code that runs in the workers (the arrival-order scan's passes) reads and writes its columns
through these functions instead: numpy views of Arrow's buffers, arrays built on numpy's buffers,
and rows written through Arrow's own JSON reader.

>>> int64_values(pa.chunked_array([[3, None, 5]], pa.int64())).tolist()
[3, 0, 5]
>>> is_null(pa.chunked_array([[3, None, 5]], pa.int64())).tolist()
[False, True, False]
>>> array_of(np.array([True, False]), pa.bool_()).to_pylist()
[True, False]
>>> batch_of_rows([{"a": 1, "b": [2, 3]}], pa.schema([("a", pa.int64()), ("b", pa.list_(pa.int64()))])).to_pylist()
[{'a': 1, 'b': [2, 3]}]
"""
from __future__ import annotations

import io
import json
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

#: the numpy type of each Arrow type ``array_of`` builds
_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.float64(): np.float64}


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """The ``length`` bits of an Arrow bitmap from bit ``offset`` on, as booleans."""
    return np.unpackbits(np.frombuffer(memoryview(buffer), np.uint8), bitorder="little")[offset:offset + length].astype(bool)


def _chunks(column: pa.ChunkedArray | pa.Array) -> list[pa.Array]:
    """A column's chunks: an array is its own one chunk."""
    return column.chunks if isinstance(column, pa.ChunkedArray) else [column]


def _chunk_nulls(chunk: pa.Array) -> np.ndarray:
    if chunk.null_count == 0:
        return np.zeros(len(chunk), bool)
    validity = chunk.buffers()[0]
    if validity is None:  # an array of the null type: every value is null
        return np.ones(len(chunk), bool)
    return ~_bits(validity, chunk.offset, len(chunk))


def is_null(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Whether each value of ``column`` is null."""
    chunks = _chunks(column)
    return np.concatenate([_chunk_nulls(c) for c in chunks]) if chunks else np.zeros(0, bool)


def _chunk_int64(chunk: pa.Array, null: int) -> np.ndarray:
    if pa.types.is_null(chunk.type):
        return np.full(len(chunk), null, np.int64)
    if chunk.type != pa.int64():
        chunk = chunk.cast(pa.int64())  # a safe cast: integers (and timestamps) only, no truncation
    data = chunk.buffers()[1]
    values = (np.zeros(0, np.int64) if data is None
              else np.frombuffer(memoryview(data), np.int64, count=len(chunk), offset=chunk.offset * 8).copy())
    if chunk.null_count:
        values[_chunk_nulls(chunk)] = null
    return values


def int64_values(column: pa.ChunkedArray | pa.Array, null: int = 0) -> np.ndarray:
    """The values of an integer ``column`` as a new int64 array, ``null`` where a value is null."""
    chunks = _chunks(column)
    return np.concatenate([_chunk_int64(c, null) for c in chunks]) if chunks else np.zeros(0, np.int64)


def array_of(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """An Arrow array of type ``kind`` (a boolean, an integer or float64) holding ``values``, no
    nulls; values the type cannot hold exactly are an error, as ``pa.array`` makes them."""
    values = np.asarray(values)
    if kind == pa.bool_():
        if values.dtype != np.bool_:
            raise TypeError(f"array_of: {values.dtype} values are not booleans")
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(bits)])
    if kind not in _NUMPY:
        raise TypeError(f"array_of: no numpy type for {kind}")
    converted = np.ascontiguousarray(values, dtype=_NUMPY[kind])
    if len(values) and not np.array_equal(converted, values):
        raise OverflowError(f"array_of: values do not fit {kind}")
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(converted)])


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as the JSON encoder's Python values."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"batch_of_rows: {type(value).__name__} is no column value")


def batch_of_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """One record batch of ``schema`` holding ``rows`` (as ``RecordBatch.from_pylist(rows,
    schema=schema)``: a field a row lacks is null, a key the schema lacks is left out). The rows go
    through Arrow's JSON reader, whose integers are exact over the whole int64 range."""
    if not rows:
        return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
    text = "".join(json.dumps({k: v for k, v in row.items() if k in schema.names}, default=_plain,
                              allow_nan=False) + "\n" for row in rows)
    table = pa_json.read_json(io.BytesIO(text.encode()), read_options=pa_json.ReadOptions(use_threads=False),
                              parse_options=pa_json.ParseOptions(explicit_schema=schema,
                                                                 unexpected_field_behavior="error"))
    table = table.select(schema.names).combine_chunks()
    return pa.RecordBatch.from_arrays([c.chunk(0) for c in table.columns], schema=schema)
