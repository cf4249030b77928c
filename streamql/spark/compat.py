"""The PySpark that streamql finds: streamql brings no Spark of its own (``pip install streamql``
installs none; ``streamql[spark]`` brings ``pyspark``), so it runs on the ``pyspark`` module that
is there — the ``pyspark`` distribution 3.5 or 4.x, ``pyspark-client`` (Spark Connect only) or
Databricks Connect — and handles what differs between their versions (docs/compatibility.md)."""
from __future__ import annotations

import functools
import importlib.util
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, ParamSpec, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import Column

P = ParamSpec("P")
R = TypeVar("R")

#: the oldest Spark version streamql runs on, and the first it does not
OLDEST = (3, 5)
TOO_NEW = (5, 0)

_INSTALL = ("pip install 'streamql[spark]' for local Spark (it brings pyspark>=3.5,<5); with Spark Connect only, "
            "pip install pyspark-client; with Databricks Connect, pip install databricks-connect (and no pyspark "
            "beside it); on a Databricks cluster, Spark is already there (docs/compatibility.md)")


def require_pyspark(what: str) -> None:
    """Raises ``ImportError`` naming the ``streamql[spark]`` extra and its alternatives when no
    ``pyspark`` module can be imported, or when its version is not one streamql supports."""
    if importlib.util.find_spec("pyspark") is None:
        raise ImportError(f"{what} runs queries on Spark and needs a pyspark module, and none is installed: "
                          f"{_INSTALL}. The reference evaluator (streamql.reference) needs no Spark.",
                          name="pyspark")
    version = pyspark_version()
    if not OLDEST <= version < TOO_NEW:
        import pyspark

        raise ImportError(f"{what}: streamql runs on PySpark 3.5 to 4.x; this pyspark module is "
                          f"{pyspark.__version__} ({pyspark.__file__}): {_INSTALL}", name="pyspark")


@cache
def pyspark_version() -> tuple[int, int]:
    """The installed ``pyspark`` module's version, as (major, minor): ``pyspark.__version__``
    (``pyspark-client`` and Databricks Connect set it too: Databricks Connect 16 says 3.5.x)."""
    import pyspark

    parts = pyspark.__version__.split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


def connect_server_settings(config: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a local Spark Connect server of this PySpark needs beyond Spark's settings: PySpark 3.5
    does not bundle the server, so ``spark.jars.packages`` names its package
    (``org.apache.spark:spark-connect_2.12`` of the same version, which Spark fetches from Maven
    Central once and keeps in ``~/.ivy2``) unless ``config`` already hands Spark a
    ``spark-connect`` jar or package; 4.x bundles it."""
    if pyspark_version() >= (4, 0):
        return {}
    given = (config or {}).get("spark.jars", "") + "," + (config or {}).get("spark.jars.packages", "")
    if "spark-connect" in given:
        return {}
    import pyspark

    return {"spark.jars.packages": f"org.apache.spark:spark-connect_2.12:{pyspark.__version__}"}


ANSI = "spark.sql.ansi.enabled"


@contextmanager
def ansi_mode(spark: Any) -> Iterator[None]:
    """The ANSI mode streamql makes and runs its plans in, whatever the session's: on Spark 4, ANSI
    mode (its default), so a 64-bit overflow in a payload expression or an aggregate is an error,
    never a wrapped-around value, also where a user turned it off; on Spark 3.5, without it (its
    default): 3.5's optimizer folds constant branches that are never taken and fails on their
    overflow in ANSI mode, so there streamql checks overflows in its own expressions
    (``checks_overflow_itself``). Spark fixes the mode of an expression when it is made (classic)
    or when the plan is analysed (Spark Connect), so the setting holds while streamql makes and
    runs its plans; the session's own setting is put back once the call returns."""
    wanted = "false" if checks_overflow_itself() else "true"
    before = spark.conf.get(ANSI, None)
    if (before or "").strip().lower() == wanted or (before is None and wanted == "false"):
        yield
        return
    spark.conf.set(ANSI, wanted)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(ANSI)
        else:
            spark.conf.set(ANSI, before)


def in_ansi_mode(method: Callable[P, R]) -> Callable[P, R]:
    """A ``Binder`` method run in ``ansi_mode`` of the binder's session."""
    @functools.wraps(method)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        with ansi_mode(args[0]._spark):  # type: ignore[attr-defined]
            return method(*args, **kwargs)
    return wrapped


#: the range of a 64-bit long, Spark's integer payload type
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def checks_overflow_itself() -> bool:
    """Whether streamql checks 64-bit overflows in its own expressions: on Spark 3.5, whose plans it
    runs without ANSI mode (``ansi_mode``), where Spark would wrap an overflowing long around."""
    return pyspark_version() < (4, 0)


def checked_long(exact: Column, value: Column, what: str) -> Column:
    """``value`` (a long), or a Spark error naming ``what`` when ``exact`` (the same computed in
    ``decimal(38,0)``, where two longs never overflow) is outside a long's range."""
    from pyspark.sql import functions as F

    inside = exact.isNull() | ((exact >= F.lit(LONG_MIN)) & (exact <= F.lit(LONG_MAX)))
    return F.when(inside, value).otherwise(F.raise_error(F.lit(f"[ARITHMETIC_OVERFLOW] long overflow in {what}")))


if TYPE_CHECKING:
    from pyspark import SparkContext as SparkContext
else:
    try:
        from pyspark import SparkContext
    except ImportError:  # pyspark-client: Spark Connect only, no SparkContext (and no classic session)
        class SparkContext:
            """Stands in for ``pyspark.SparkContext`` where ``pyspark-client`` has none: nothing
            is an instance of it."""
