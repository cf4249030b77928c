"""The JVM options of every Spark session the tests start: the session fixture's (tests/conftest.py),
the Kafka and Delta Lake groups', and the jobs the tests run in child processes.

- ``-XX:TieredStopAtLevel=1``: the first JIT tier only. A test run plans thousands of small queries
  once each, and the optimizing compiler's work does not pay off (a third less CPU for the Spark
  property tests here).
- ``-XX:ReservedCodeCacheSize=256m``: with the first tier only, the JVM reserves the code cache of a
  JVM without tiered compilation, 48 MB. The default tier compiles 60-64 MB of code in each of its
  two JVMs, so a 48 MB cache runs full: the JVM then sweeps it without pause, throws compiled
  methods away and interprets them again. The default tier took 805 s with 48 MB and 720 s with
  256 MB, one run after the other on an idle machine (docs/decisions.md, "Continuous integration's
  time"). With both tiers (C2) and this cache the default tier took 653.0 s against 662.0 s
  for the first tier alone (G1 in both, the same day): inside the spread.
- ``-XX:+UseParallelGC``: the throughput collector instead of G1. The test JVMs want throughput,
  not short pauses, and G1's write barriers and concurrent threads cost CPU on two busy cores. The
  default tier took 610.7 s and 636.8 s with it, 662.0 s with G1 (idle, the same day, one run
  after the other; docs/decisions.md, "Continuous integration's time").

``STREAMQL_TEST_JVM`` replaces these options, to measure others.

The session's driver has a 4 GB heap (``TEST_DRIVER_MEMORY``). A default-tier JVM keeps 450-850 MB
live at its end: with 2 GB, G1 (the collector then) started a concurrent cycle 200-240 times a run
(49 s of CPU over the two JVMs), and with 4 GB 10-36 times (4 s). The default tier took 686.9 s
against 720.4 s with 2 GB, the JVMs' CPU 777 s against 855 s (idle, one run after the other).
"""
from __future__ import annotations

import os

TEST_JVM_OPTIONS = os.environ.get("STREAMQL_TEST_JVM",
                                  "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC")
#: the heap of the sessions' driver JVM (``spark.driver.memory``)
TEST_DRIVER_MEMORY = "4g"
