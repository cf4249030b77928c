"""A real Apache Kafka broker for the Kafka test group and the Kafka benchmark row: Kafka's own jars
from Maven Central (``tests/kafka/pom.xml``), fetched once into ``.cache/jars/`` (git-ignored) by
Maven, and a single-node KRaft broker (broker and controller in one JVM) on loopback ports, its
storage formatted by Kafka's ``StorageTool`` and its logs in a temporary directory.

    python tests/support/kafka_broker.py jars [SPARK_VERSION]   # fetches (or finds) the jars, prints their dirs
    python tests/support/kafka_broker.py serve                  # runs a broker until Ctrl-C, prints its address

Spark's Kafka connector (``spark-sql-kafka-0-10_2.13`` of the running Spark version, without what
PySpark's own jars already hold) is fetched the same way, for a session's ``spark.jars``."""
from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "tests" / "kafka" / "pom.xml"
CACHE = ROOT / ".cache" / "jars"
#: the broker's Kafka version (``kafka.version`` in tests/kafka/pom.xml says the same)
KAFKA_VERSION = "4.1.1"
#: the file that marks a cache directory as complete (Maven copied every jar)
COMPLETE = ".complete"


class JarsUnavailable(RuntimeError):
    """Maven could not resolve the jars asked for (not served by Maven Central, or no network)."""


def _fetch(directory: Path, *maven_args: str) -> Path:
    """The jars of ``tests/kafka/pom.xml`` with ``maven_args`` copied into ``directory`` by Maven,
    once: a complete directory is returned as it is. Maven writes into a temporary directory
    beside it, renamed when complete, so that an interrupted fetch leaves nothing half done."""
    if (directory / COMPLETE).exists():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        done = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), *maven_args,
                               "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            errors = [line.split("[ERROR] ", 1)[1] for line in (done.stdout + done.stderr).splitlines()
                      if "[ERROR] " in line and len(line.split("[ERROR] ", 1)[1]) > 1]
            # "... Could not resolve dependencies for project <this pom>: <artifact> was not found in
            # <repository> ... -> [Help 1]": the artifact and why
            why = (errors[0].split(" -> ")[0].split(":pom:1: ")[-1].split(" during a previous attempt")[0]
                   if errors else f"exit status {done.returncode}")
            raise JarsUnavailable(f"Maven could not fetch the jars of {POM.relative_to(ROOT)} "
                                  f"({' '.join(maven_args)}): {why}")
        (staging / COMPLETE).write_text(" ".join(maven_args) + "\n")
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def broker_jars() -> Path:
    """The directory of Kafka's broker jars (``org.apache.kafka:kafka_2.13`` and its dependencies)."""
    return _fetch(CACHE / f"kafka-broker-{KAFKA_VERSION}", "-P", "broker", f"-Dkafka.version={KAFKA_VERSION}")


def connector_jars(spark_version: str) -> list[str]:
    """The jars to put on ``spark.jars`` for Spark's Kafka source and sink of ``spark_version``
    (``spark-sql-kafka-0-10_2.13``, its token provider, ``kafka-clients``, ``commons-pool2``);
    ``JarsUnavailable`` when Maven Central serves no connector of that version."""
    directory = _fetch(CACHE / f"spark-kafka-{spark_version}", "-P", "spark-connector",
                       f"-Dspark.version={spark_version}")
    return sorted(str(p) for p in directory.glob("*.jar"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Broker:
    """A single-node KRaft broker in a JVM of its own (``with Broker() as broker: broker.bootstrap``).

    ``num.partitions`` is 4: a topic that a producer writes first is created with four partitions.
    The JVM's heap is small (``-Xmx512m``); its output goes to ``server.log`` in its directory."""

    def __init__(self, partitions: int = 4, directory: str | None = None) -> None:
        self.partitions = partitions
        self._own_directory = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="streamql-kafka-"))
        self.port = free_port()
        self.controller_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _properties(self) -> Path:
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.directory / "logs"),
            "num.partitions": str(self.partitions),
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.enable": "false",
        }
        path = self.directory / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def _java(self, *args: str) -> list[str]:
        classpath = os.path.join(str(broker_jars()), "*")
        return ["java", "-Xms64m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Djava.awt.headless=true", "-cp", classpath, *args]

    def start(self, timeout: float = 120.0) -> Broker:
        properties = self._properties()
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        formatted = subprocess.run(self._java("kafka.tools.StorageTool", "format", "-t", cluster, "-c",
                                              str(properties)), capture_output=True, text=True)
        if formatted.returncode != 0:
            raise RuntimeError(f"Kafka's StorageTool format failed: {formatted.stdout}{formatted.stderr}")
        log = open(self.directory / "server.log", "wb")
        self.process = subprocess.Popen(self._java("kafka.Kafka", str(properties)), stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited ({self.process.returncode}): "
                                   f"{(self.directory / 'server.log').read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the Kafka broker did not listen on {self.bootstrap} within {timeout:.0f} s")

    def stop(self) -> None:
        """Stops the broker (SIGTERM, then SIGKILL after 30 s) and removes its directory."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    if argv[:1] == ["jars"]:
        began = time.monotonic()
        print(broker_jars())
        if len(argv) > 1:
            print(os.path.dirname(connector_jars(argv[1])[0]))
        print(f"({time.monotonic() - began:.1f} s)", file=sys.stderr)
        return 0
    if argv[:1] == ["serve"]:
        with Broker() as broker:
            print(f"Kafka broker at {broker.bootstrap} (Ctrl-C stops it)", flush=True)
            try:
                while broker.process is not None and broker.process.poll() is None:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
