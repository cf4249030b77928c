"""examples/kafka_live.py runs as documented against the group's broker: a quiet partition holds
the CTI back until a CTI record arrives in it, the live run releases what the batch run over the
topic releases, and the late reading's record names its partition and offset."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from support.kafka_broker import Broker

pytestmark = pytest.mark.kafka

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_kafka_example_runs_against_a_broker(broker: Broker, connector: list[str]) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "kafka_live.py"), "--bootstrap", broker.bootstrap,
                           "--jars", ",".join(connector)], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    rounds = [line for line in lines if line.startswith("round ")]
    assert len(rounds) == 3, done.stdout
    # round 1: partitions 0-2 only, partition 3 quiet: no CTI, nothing released
    assert rounds[0].startswith("round 1: 36 records") and rounds[0].endswith(
        "input CTI none (partitions 0 08:05:00, 1 08:05:00, 2 08:05:00, 3 none), released 0"), rounds[0]
    # round 2: a CTI record in partition 3 moves the input's CTI to it (08:04): windows released
    assert "input CTI 08:04:00 (partitions 0 08:05:00, 1 08:05:00, 2 08:05:00, 3 08:04:00)" in rounds[1], rounds[1]
    assert not rounds[1].endswith("released 0"), rounds[1]
    assert "input CTI 08:07:00 (partitions 0 08:07:00, 1 08:07:00, 2 08:07:00, 3 08:07:00)" in rounds[2], rounds[2]
    assert any(line.startswith("live == batch: ") for line in lines), done.stdout
    assert [line for line in lines if line.startswith("late: ")] == [
        "late: partition 1 offset 18 dropped, m5 at 08:06:00 < CTI 08:07:00"], done.stdout
