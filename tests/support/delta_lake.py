"""Delta Lake's jars and settings for the delta group's sessions (tests/delta_lake: the test
session of its conftest and the crash job's)."""
from __future__ import annotations

import glob
import os

#: where ``tests/delta_lake/run.sh`` copies the jars (STREAMQL_DELTA_JARS: another directory)
JARS = os.environ.get("STREAMQL_DELTA_JARS", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                          "delta_lake", ".jars"))

#: the settings that make a session read and write Delta tables (docs/kafka-and-delta.md)
DELTA_SETTINGS: dict[str, bool | float | int | str | None] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # the tables here have a few files: their snapshots in 2 partitions, not Delta's 50
    "spark.databricks.delta.snapshotPartitions": "2",
}


def delta_jars() -> str:
    """The jars, comma-separated (``spark.jars``); a clear failure when they were not fetched."""
    jars = sorted(glob.glob(os.path.join(JARS, "*.jar")))
    if not any(os.path.basename(j).startswith("delta-spark_") for j in jars):
        raise RuntimeError(f"no Delta Lake jars in {JARS}: run the delta group with tests/delta_lake/run.sh, which "
                           "fetches them (mvn -f tests/delta_lake/pom.xml dependency:copy-dependencies)")
    return ",".join(jars)
