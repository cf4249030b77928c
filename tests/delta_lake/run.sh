#!/usr/bin/env bash
# The delta group (docs/kafka-and-delta.md, "Delta Lake"): Delta Lake 4.4.0 supports PySpark up to
# 4.2.0 (delta-spark's own requirement, pyspark<=4.2.0), so the group runs in a virtual environment
# of its own, .venv-pyspark-4.2 (streamql and its test requirements from pyproject.toml, with
# PySpark 4.2.0 and delta-spark 4.4.0), made if absent; Delta's jars come from Maven Central
# (tests/delta_lake/pom.xml) into tests/delta_lake/.jars, fetched if absent; then one pytest process
# with those jars in its session (tests/delta_lake/conftest.py). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=.venv-pyspark-4.2
PINS=("pyspark[connect]==4.2.0" "delta-spark==4.4.0")
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import delta, pyspark; assert pyspark.__version__ == "4.2.0"' 2>/dev/null; then
    python3 -m venv "$VENV"
    # pyproject's requirements less its PySpark pin (>=4.3), with the PySpark Delta supports
    python3 - > "$VENV/requirements.txt" <<'PY'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
    if not requirement.startswith("pyspark"):
        print(requirement)
PY
    "$VENV/bin/pip" install -q -r "$VENV/requirements.txt" "${PINS[@]}"
    "$VENV/bin/pip" install -q --no-deps -e .
fi
if ! ls tests/delta_lake/.jars/delta-spark_*.jar >/dev/null 2>&1; then
    mvn -q -B -f tests/delta_lake/pom.xml dependency:copy-dependencies
fi
exec "$VENV/bin/python" -m pytest -q -n 0 -m delta tests/delta_lake "$@"
