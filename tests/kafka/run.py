"""Runs the Kafka test group (tests/kafka, marker ``kafka``) in a pytest process of its own:

    .venv/bin/python tests/kafka/run.py [PYTEST ARGS]

It fetches Kafka's broker jars and Spark's Kafka connector once into ``.cache/jars/`` (Maven, with
tests/kafka/pom.xml; the tests' fixtures start and stop the broker). The connector is the running
PySpark's version when Maven Central serves it; when it does not (a PySpark newer than the newest
``spark-sql-kafka-0-10_2.13`` there), the group runs on the newest version it serves,
``FALLBACK``, in a virtual environment of that version, ``.venv-pyspark-X.Y`` (made here if
absent), and says so."""
from __future__ import annotations

import subprocess
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support.kafka_broker import JarsUnavailable, broker_jars, connector_jars  # noqa: E402

#: the newest ``org.apache.spark:spark-sql-kafka-0-10_2.13`` Maven Central served on 2026-11-28
#: (4.3.0, the PySpark this project pins, is not served)
FALLBACK = "4.2.0"


def requirements() -> list[str]:
    """streamql's dependencies and test extras but PySpark (the venv brings its own)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    return sorted({r for r in wanted if not r.replace("_", "-").lower().startswith("pyspark")})


def venv_for(version: str) -> Path:
    """``.venv-pyspark-X.Y`` with PySpark ``version``, streamql (this tree, editable, without its
    PySpark pin) and the test dependencies; made or completed here."""
    minor = ".".join(version.split(".")[:2])
    venv = ROOT / f".venv-pyspark-{minor}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"pyspark[connect]=={version}", *requirements()], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    return python


def main(args: list[str]) -> int:
    began = time.monotonic()
    broker_jars()
    running = metadata.version("pyspark")
    python = Path(sys.executable)
    try:
        connector_jars(running)
    except JarsUnavailable as exc:
        print(f"tests/kafka/run.py: Maven Central serves no Spark Kafka connector {running} ({exc}); "
              f"the Kafka group runs on PySpark {FALLBACK}, the newest whose connector it serves", flush=True)
        connector_jars(FALLBACK)
        python = venv_for(FALLBACK)
    print(f"tests/kafka/run.py: jars and environment ready in {time.monotonic() - began:.0f} s", flush=True)
    command = [str(python), "-m", "pytest", "-q", "-n", "0", "-m", "kafka", "tests/kafka", *args]
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
