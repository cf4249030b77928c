"""Distribution checks on physical plans (docs/architecture.md#rules-of-execution-on-spark): a bound
query's plan never collapses the data into one partition and never pairs rows without an equi-join
key."""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

#: operators of a plan that gather every row in one partition or pair rows without a key
FORBIDDEN = ("SinglePartition", "CartesianProduct", "BroadcastNestedLoopJoin")


def physical_plan(df: DataFrame) -> str:
    """The physical plan of ``df`` as Spark prints it (after a ``collect``, with adaptive execution:
    the plan that ran)."""
    plan: Any = df._jdf.queryExecution().executedPlan()
    return str(plan.toString())


def assert_distributed(plan: str, of: str | None = None, also: tuple[str, ...] = ()) -> None:
    """Asserts that ``plan`` holds none of the ``FORBIDDEN`` operators, nor any of ``also``; ``of``
    names the query in the message.

    >>> assert_distributed(physical_plan(binder.to_dataframe(q)), of="the tumbling query")  # doctest: +SKIP
    """
    where = "the plan" if of is None else f"the plan of {of}"
    for operator in (*FORBIDDEN, *also):
        assert operator not in plan, f"{operator} in {where}:\n{plan}"
