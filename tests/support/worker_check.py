"""Child processes for the worker-check tests (tests/spark/test_workers.py, tests/cluster/test_shipping.py):
an interpreter whose Python workers cannot import streamql, and ``workers_job.py`` run from a
scratch directory with an environment that points at neither the project nor a worker interpreter."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from support.jvm import TEST_JVM_OPTIONS

JOB = Path(__file__).resolve().parent / "workers_job.py"


def interpreter_without_streamql(directory: Path) -> Path:
    """A worker interpreter that imports pyarrow, pandas and pyspark but not streamql: this one with
    ``-S`` (no site-packages, so no ``.pth`` file installs the editable streamql's finder) and the
    site-packages directory on PYTHONPATH. Skips the test where that still imports streamql (a
    non-editable install)."""
    wrapper = directory / "python-without-streamql"
    site = sysconfig.get_paths()["purelib"]
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    probe = subprocess.run([str(wrapper), "-c", "import pyarrow, pandas, pyspark\ntry:\n import streamql\n"
                            "except ModuleNotFoundError:\n print('without streamql')"],
                           cwd=directory, env=child_env(), capture_output=True, text=True, timeout=60)
    if probe.stdout.strip() != "without streamql":
        pytest.skip(f"cannot make an interpreter without streamql here: {probe.stdout!r} {probe.stderr[-500:]!r}")
    return wrapper


def child_env(**extra: str) -> dict[str, str]:
    """This environment without what points Python at the project or at a worker interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    # the child's JVM with the test JVMs' options (support/jvm.py: the first JIT tier only; 24 s
    # against 29 s for the local_session job, idle): what the jobs check does not depend on them
    env.setdefault("JAVA_TOOL_OPTIONS", TEST_JVM_OPTIONS)
    return {**env, **extra}


def run_job(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 240) -> dict[str, str]:
    """Runs the job; returns its ``key=value`` lines, and the ``BindingError`` message under "error"."""
    try:
        done = subprocess.run([sys.executable, str(JOB), *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the job did not finish in {exc.timeout} s:\n{exc.stdout!r}\n{exc.stderr!r}")
    report = f"stdout:\n{done.stdout}\nstderr (end):\n{done.stderr[-4000:]}"
    assert done.returncode == 0, report
    values = {"report": report}
    printed = done.stdout
    if "BindingError:\n" in printed:
        before, rest = printed.split("BindingError:\n", 1)
        values["error"], after = rest.split("\nafter=", 1)
        printed = before + "after=" + after
    values.update(word.partition("=")[::2] for word in printed.split() if "=" in word)
    return values
