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
  time").

``STREAMQL_TEST_JVM`` replaces these options, to measure others.
"""
from __future__ import annotations

import os

TEST_JVM_OPTIONS = os.environ.get("STREAMQL_TEST_JVM", "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m")
