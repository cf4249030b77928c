"""Both kinds of SparkSession: a classic one (this process drives a JVM through py4j and has a
``SparkContext``) and a Spark Connect one (``pyspark.sql.connect.session.SparkSession``: a gRPC
client of a Spark Connect server — ``SparkSession.builder.remote(...)``, Databricks Connect,
serverless compute). streamql runs on the DataFrame and Structured Streaming API both have; what
only a classic session offers (Spark's status tracker for job counts, ``SparkContext.addPyFile``)
is reached through this module and is ``None`` on a Connect session (docs/spark-connect.md).

PySpark's Connect client needs ``grpcio`` and friends (``pip install streamql[connect]``), so the
Connect classes are never imported here: a session is recognised by its class's module.
"""
from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any, Iterator, Union

from streamql.spark.compat import SparkContext  # pyspark-client has none
from pyspark.sql import DataFrame, SparkSession

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

#: a SparkSession of either kind
AnySession = Union[SparkSession, "ConnectSession"]


def is_connect(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session."""
    return type(spark).__module__.startswith("pyspark.sql.connect") and hasattr(spark, "client")


def is_session(spark: object) -> bool:
    """Whether ``spark`` is a SparkSession, classic or Spark Connect."""
    return isinstance(spark, SparkSession) or is_connect(spark)


def is_dataframe(df: object) -> bool:
    """Whether ``df`` is a DataFrame, classic or Spark Connect (PySpark 3.5's Spark Connect
    DataFrame is no subclass of ``pyspark.sql.DataFrame``; 4.x's is)."""
    return isinstance(df, DataFrame) or (type(df).__module__.startswith("pyspark.sql.connect")
                                         and type(df).__name__ == "DataFrame")


def context_of(spark: Any) -> SparkContext | None:
    """The ``SparkContext`` of a classic session (or the context itself), ``None`` for a Spark
    Connect session."""
    if isinstance(spark, SparkContext):
        return spark
    if isinstance(spark, SparkSession):
        return spark.sparkContext
    return None


def parallelism(spark: Any) -> int:
    """How many tasks the session runs at once: a classic session's default parallelism; on Spark
    Connect ``spark.default.parallelism`` if set, else the cores of a ``local[N]`` master, else the
    shuffle partitions (a reasonable split of the work; only the balance depends on it)."""
    sc = context_of(spark)
    if sc is not None:
        return int(sc.defaultParallelism)
    conf = spark.conf
    configured = conf.get("spark.default.parallelism", None)
    if configured:
        return max(1, int(configured))
    master = conf.get("spark.master", None) or ""
    local = re.fullmatch(r"local\[(\d+)(,\s*\d+)?\]", master.strip())
    if local:
        return max(1, int(local.group(1)))
    return max(1, int(conf.get("spark.sql.shuffle.partitions", "200") or "200"))


def local_checkpoint(df: DataFrame, eager: bool) -> DataFrame:
    """``df.localCheckpoint(eager=eager)`` on a session of either kind, whatever the depth of its plan.

    A Spark Connect client copies the plan into its checkpoint command, and that copy refuses a
    plan nested deeper than protobuf's decoding limit (``DecodeError: ... Exceeded
    upb_DecodeOptions_MaxDepth``, from about 50 chained DataFrame calls: a query composed of many
    operators, a running query reading another's output), although the same plan runs as a query.
    On Connect the plan is therefore registered as a temporary view first, on the server, and the
    checkpoint reads the view: a plan one level deep. The view is dropped at once; the checkpoint
    holds the plan the server analysed."""
    if not is_connect(df.sparkSession):
        return df.localCheckpoint(eager=eager)
    view = f"streamql_checkpoint_{uuid.uuid4().hex}"
    df.createOrReplaceTempView(view)
    try:
        return df.sparkSession.table(view).localCheckpoint(eager=eager)
    finally:
        df.sparkSession.catalog.dropTempView(view)


def with_stable_partitions(df: DataFrame) -> DataFrame:
    """``df``, materialised once on the server (``localCheckpoint``) if it is a Spark Connect
    DataFrame that reads rows sent by the client (``createDataFrame`` of local data); else ``df``
    itself.

    The arrival-order scan numbers an input's rows by their Spark partition and their position in
    it (``monotonically_increasing_id``), in several jobs, and needs every job to see the same
    partitions. A file or table source has them; rows sent by a Connect client do not: Spark
    Connect runs some plans over such a relation in one partition and others in several. A
    checkpoint fixes them (one small job: the data came from the client)."""
    if is_connect(df.sparkSession) and _reads_local_relation(getattr(df, "_plan", None)):
        if getattr(type(df), "localCheckpoint", None) is None:  # 3.5's raises NOT_IMPLEMENTED from __getattr__
            # PySpark 3.5's Spark Connect DataFrame has no localCheckpoint: one partition, the
            # rows in the order the client sent them, in every plan (rows sent by a client are few)
            return df.coalesce(1)
        return local_checkpoint(df, eager=True)
    return df


def plan_nodes(plan: object) -> Iterator[object]:
    """The nodes of a Spark Connect logical plan (``pyspark.sql.connect.plan``), each once."""
    seen: set[int] = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        # a plan node of the client (``_root_plan_id`` from PySpark 4.0, ``_plan_id`` in 3.5)
        if node is None or id(node) in seen or not (hasattr(node, "_root_plan_id") or hasattr(node, "_plan_id")):
            continue
        seen.add(id(node))
        yield node
        for value in vars(node).values():
            stack.extend(value if isinstance(value, (list, tuple)) else [value])


def _reads_local_relation(plan: object) -> bool:
    """Whether a Spark Connect logical plan (``pyspark.sql.connect.plan``) reads a relation of
    rows sent by the client."""
    return any("LocalRelation" in type(node).__name__ for node in plan_nodes(plan))


__all__ = ["AnySession", "context_of", "is_connect", "is_session", "parallelism", "plan_nodes", "with_stable_partitions"]
