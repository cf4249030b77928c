"""Delta Lake sinks of running queries (``Binder.start(..., format="delta")``): each micro-batch
that released something appends its rows to the Delta table in one commit, as an idempotent write
(Delta's ``txnAppId``/``txnVersion``), so that a micro-batch that Spark runs again after a crash
between that commit and streamql's state commit appends nothing (docs/kafka-and-delta.md).

Only the DataFrame API: the same code runs on classic and Spark Connect sessions (the server needs
Delta's jars)."""
from __future__ import annotations

import uuid
from typing import Callable

from pyspark.sql import DataFrame

from streamql.spark.runtime.files import Files

DELTA = "delta"
#: the file, in a query's directory of the checkpoint, that holds its Delta application id
APP_ID_FILE = "delta-txn-app-id"


def app_id(files: Files, root: str) -> str:
    """The query's Delta application id (``txnAppId``): made once, at the first start with this
    checkpoint, and read back at every later one (written under a temporary name and renamed, so
    it is whole or absent). It belongs to the checkpoint, not to the path: a query started anew
    with another checkpoint counts its micro-batches from 0 again, and its writes must not be taken
    for the old query's."""
    path = f"{root.rstrip('/')}/{APP_ID_FILE}"
    if not files.exists(path):
        temporary = f"{path}-{uuid.uuid4().hex}"
        files.write_text(temporary, f"streamql-{uuid.uuid4().hex}")
        if files.exists(path) or not files.rename(temporary, path):
            files.delete(temporary)
    return files.read_text(path).strip()


def append_once(df: DataFrame, table: str, staging: str, app: str, batch: int, files: Files,
                keep: Callable[[], bool]) -> bool:
    """Appends ``df`` to the Delta table at ``table`` as micro-batch ``batch`` of application
    ``app``, once: Delta skips the append if the table has a transaction of ``app`` at ``batch``
    or later. ``df`` is first written to a temporary Parquet directory under ``staging`` (that
    write computes the step, and what it observes decides ``keep``); only if ``keep()`` says so is
    it appended, so a micro-batch that released nothing makes no commit. Returns whether it
    appended (or found its micro-batch appended before)."""
    temporary = f"{staging.rstrip('/')}/delta-{batch}-{uuid.uuid4().hex}"
    df.write.mode("overwrite").parquet(temporary)
    try:
        if not keep():
            return False
        (df.sparkSession.read.parquet(temporary).write.format(DELTA).mode("append")
         .option("txnAppId", app).option("txnVersion", str(batch)).save(table))
        return True
    finally:
        files.delete(temporary)


__all__ = ["APP_ID_FILE", "DELTA", "app_id", "append_once"]
