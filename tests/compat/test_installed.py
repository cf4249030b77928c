"""streamql installed beside the user's Spark (docs/compatibility.md): it brings no ``pyspark`` of
its own and never replaces the one it finds. ``.ci/matrix`` installs a pyspark (or
``pyspark-client``, or ``databricks-connect``) into a fresh environment, then streamql, and runs
these tests there with ``STREAMQL_EXPECTED_PYSPARK`` (the version installed before streamql) or
``STREAMQL_DATABRICKS_CONNECT=1``; in the test environment they check the same of the newest
PySpark."""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import streamql as sq
from streamql.spark.compat import pyspark_version

pytestmark = pytest.mark.compat

#: the distributions that provide a ``pyspark`` module
PROVIDERS = ("pyspark", "pyspark-client", "pyspark-connect", "databricks-connect")


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _owner_of_pyspark() -> list[str]:
    """The installed distributions whose files include ``pyspark/__init__.py``."""
    owners = []
    for name in PROVIDERS:
        files = metadata.files(name) if _installed(name) else None
        if files and any(str(f).replace("\\", "/") == "pyspark/__init__.py" for f in files):
            owners.append(name)
    return owners


def test_the_pyspark_installed_before_streamql_is_unchanged() -> None:
    import pyspark

    expected = os.environ.get("STREAMQL_EXPECTED_PYSPARK")
    if expected is None and not os.environ.get("STREAMQL_DATABRICKS_CONNECT"):
        pytest.skip("run by .ci/matrix (STREAMQL_EXPECTED_PYSPARK)")
    if expected is not None:
        assert pyspark.__version__ == expected
    # one distribution provides the pyspark module: streamql added none beside it
    assert len(_owner_of_pyspark()) == 1, _owner_of_pyspark()


def test_streamql_requires_no_pyspark_distribution() -> None:
    requires = metadata.requires("streamql") or []
    plain = [r for r in requires if "extra ==" not in r]
    assert not any(r.replace(" ", "").lower().startswith("pyspark") for r in plain), plain
    spark = [r for r in requires if 'extra == "spark"' in r]
    assert any(r.startswith("pyspark") for r in spark), requires
    # the connect extra brings the Connect client's requirements, not a pyspark of its own
    connect = [r for r in requires if 'extra == "connect"' in r]
    assert connect and not any(r.startswith("pyspark") for r in connect), connect


def test_databricks_connect_keeps_its_own_pyspark_module() -> None:
    if not os.environ.get("STREAMQL_DATABRICKS_CONNECT"):
        pytest.skip("run by .ci/matrix in an environment with databricks-connect")
    assert _installed("pyspark") is None and _installed("pyspark-client") is None
    assert _owner_of_pyspark() == ["databricks-connect"]
    import importlib

    importlib.import_module("databricks.connect").DatabricksSession  # it imports: no workspace to reach here

    assert sq.Binder is not None and sq.local_session is not None  # streamql's Spark side imports on it
    assert pyspark_version() >= (3, 5)


def test_the_spark_entry_points_import_on_this_pyspark() -> None:
    assert (3, 5) <= pyspark_version() < (5, 0)
    assert callable(sq.local_session) and sq.Binder.__name__ == "Binder" and sq.RunningQuery.__name__ == "RunningQuery"


def test_without_pyspark_streamql_imports_and_its_spark_entry_points_name_the_extra(tmp_path: Path) -> None:
    """In a process where no ``pyspark`` module can be found, ``import streamql`` and the reference
    evaluator work; ``sq.Binder`` (and ``import streamql.binder``) raise ``ImportError`` naming
    ``streamql[spark]`` and the alternatives."""
    script = tmp_path / "no_pyspark.py"
    script.write_text(
        "import sys\n"
        "class NoPyspark:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pyspark' or name.startswith('pyspark.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "import importlib.util\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'pyspark' else real(name, *a)\n"
        "sys.meta_path.insert(0, NoPyspark())\n"
        "from dataclasses import dataclass\n"
        "import streamql as sq\n"
        "@dataclass(frozen=True)\n"
        "class P:\n"
        "    v: int\n"
        "src = sq.input('in', P, sq.Shape.POINT)\n"
        "items = [sq.Insert(sq.time.from_micros(1), sq.time.from_micros(2), P(3)), sq.Cti(sq.INFINITY)]\n"
        "r = sq.reference.run(src.where(lambda e: e.v > 1), {'in': sq.reference.ReferenceInput(items, None)})\n"
        "assert len(r.events) == 1, r\n"
        "for what in ('sq.Binder', 'sq.local_session', 'import streamql.binder'):\n"
        "    try:\n"
        "        exec(what if what.startswith('import') else f'{what}')\n"
        "    except ImportError as exc:\n"
        "        print(what, '->', exc)\n"
        "    else:\n"
        "        raise SystemExit(f'{what} imported without pyspark')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    for line in lines:
        assert "pip install 'streamql[spark]'" in line and "pyspark-client" in line and "databricks-connect" in line
