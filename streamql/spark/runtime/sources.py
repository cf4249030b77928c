"""Sources that give a batch run other rows in each job: a batch run reads them once.

A batch run reads an input's DataFrame in several Spark jobs (the scan's summary pass, its
simulation rounds, the output's job) and needs every job to see the same rows in the same
partitions. Files, tables of files (Delta Lake included), rows in the plan and a range do. A
source read through a connector does not: ``spark.read.format("kafka")`` asks the broker for the
topic's latest offsets each time a job is planned (a topic written during the run gives the
output rows the scan never saw), and every job reads the topic again (a second a job here, on a
topic of 144 records). Such an input is read once per run, into a local checkpoint
(``snapshot``), and every job of the run reads that (docs/decisions.md, "a batch run reads a
connector's source once").

>>> rereads_source(spark.read.format("kafka").option(...).load())  # doctest: +SKIP
True
"""
from __future__ import annotations

from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from streamql.spark.runtime.connect import is_connect, local_checkpoint, plan_nodes

#: the leaves of an analysed plan that read the same rows in every job: rows in the plan, a
#: range, cached or checkpointed rows, a table of files (Hive), a stream (a live step's rows)
_SAME_ROWS_LEAVES = frozenset({
    "LocalRelation", "Range", "OneRowRelation", "LogicalRDD", "InMemoryRelation", "HiveTableRelation",
    "StreamingRelation", "StreamingRelationV2", "StreamingExecutionRelation", "StreamingDataSourceV2Relation",
    "StreamingDataSourceV2ScanRelation",
})
#: a file source's ``spark.read.format(...)`` names, as a Spark Connect plan holds them (none:
#: ``spark.sql.sources.default``, Parquet unless set otherwise)
_FILE_FORMATS = frozenset({"parquet", "orc", "json", "csv", "text", "avro", "xml", "binaryfile", "delta"})
#: a file source of the data source API v2 (its table extends this class)
_FILE_TABLE = "org.apache.spark.sql.execution.datasources.v2.FileTable"


def rereads_source(df: DataFrame) -> bool:
    """Whether a batch DataFrame reads a source other than files, rows in the plan, a range or
    cached rows: a connector's (Kafka, JDBC, a Python data source, ...), which may give each job
    other rows."""
    if is_connect(df.sparkSession):
        return _connect_reads_connector(getattr(df, "_plan", None))
    plan = df._jdf.queryExecution().analyzed()
    leaves = plan.collectLeaves().iterator()
    while leaves.hasNext():
        if not _same_rows(leaves.next()):
            return True
    return False


def _same_rows(leaf: Any) -> bool:
    """Whether a leaf of a classic session's analysed plan (a JVM object) reads the same rows in
    every job."""
    kind = leaf.getClass().getSimpleName()
    if kind in _SAME_ROWS_LEAVES:
        return True
    if kind == "LogicalRelation":
        return bool(leaf.relation().getClass().getSimpleName() == "HadoopFsRelation")
    if kind == "DataSourceV2Relation":
        table = leaf.table().getClass()
        while table is not None:
            if table.getName() == _FILE_TABLE:
                return True
            table = table.getSuperclass()
    return False


def _connect_reads_connector(plan: object) -> bool:
    """Whether a Spark Connect logical plan (``pyspark.sql.connect.plan``) reads a data source
    whose format is not a file format."""
    for node in plan_nodes(plan):
        if type(node).__name__ == "DataSource" and not getattr(node, "_is_streaming", False):
            form = getattr(node, "_format", None)
            if form is not None and form.lower() not in _FILE_FORMATS:
                return True
    return False


def snapshot(df: DataFrame) -> DataFrame:
    """The rows ``df`` reads now, read once: a local checkpoint made at once (one job), which the
    run's jobs read instead of the source. PySpark 3.5's Spark Connect DataFrame has no
    ``localCheckpoint``: there the rows are cached (``persist``) and counted at once instead, which
    holds them while the cache keeps them (docs/compatibility.md)."""
    if getattr(type(df), "localCheckpoint", None) is None:
        cached = df.persist(StorageLevel.MEMORY_AND_DISK)
        cached.count()
        return cached
    return local_checkpoint(df, eager=True)


__all__ = ["rereads_source", "snapshot"]
