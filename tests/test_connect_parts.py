"""The parts of Spark Connect support that need no Spark: files through ``pyarrow.fs`` (what a
Connect session's checkpoints, sinks and published writes go through), the parallelism read from a
session's settings, and the save mode both kinds of session take (docs/spark-connect.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from streamql.binder import save_mode
from streamql.spark.runtime.connect import is_connect, is_session, parallelism
from streamql.spark.runtime.files import ArrowFiles, Files


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class _ConnectLike:
    """Stands for a Spark Connect session: what the runtime reads of one (a conf), no SparkContext."""

    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


def test_a_session_without_a_spark_context_gets_files_through_pyarrow() -> None:
    assert isinstance(Files(_ConnectLike({})), ArrowFiles)
    assert not is_connect(_ConnectLike({})) and not is_session(object())


def test_arrow_files_do_what_the_state_store_and_publish_need(tmp_path: Path) -> None:
    files = Files(_ConnectLike({}))
    root = tmp_path / "ck"
    assert not files.exists(str(root)) and files.children(str(root)) == []
    files.write_text(f"{root}/state-1.tmp/meta.json", '{"batch": 1}')  # parents are made
    assert files.read_text(f"file://{root}/state-1.tmp/meta.json") == '{"batch": 1}'
    assert files.rename(f"{root}/state-1.tmp", f"{root}/state-1")
    assert files.children(str(root)) == ["state-1"]
    files.mkdirs(f"{root}/state-2")
    assert not files.rename(f"{root}/state-1", f"{root}/state-2")  # an existing target stays
    assert sorted(files.children(str(root))) == ["state-1", "state-2"]
    files.delete(f"{root}/state-1")
    files.delete(f"{root}/nothing-here")
    assert files.children(str(root)) == ["state-2"] and files.exists(f"file:{root}/state-2")


def test_parallelism_comes_from_the_settings_of_a_connect_session() -> None:
    assert parallelism(_ConnectLike({"spark.default.parallelism": "6", "spark.master": "local[2]"})) == 6
    assert parallelism(_ConnectLike({"spark.master": "local[3]"})) == 3
    assert parallelism(_ConnectLike({"spark.master": "sc://host", "spark.sql.shuffle.partitions": "8"})) == 8


def test_errorifexists_is_written_as_error() -> None:
    assert [save_mode(m) for m in ("errorifexists", "ErrorIfExists", "overwrite", "append")] == \
        ["error", "error", "overwrite", "append"]


def test_a_spark_context_is_its_own_context() -> None:
    from pyspark import SparkContext

    from streamql.spark.runtime.connect import context_of

    context = object.__new__(SparkContext)  # no JVM needed: only the type is looked at
    assert context_of(context) is context and context_of(_ConnectLike({})) is None
