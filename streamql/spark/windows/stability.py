"""When a formed window is stable on Spark: the rule hopping, count and session windows share.

A window is stable (``CLOSED`` and ``HEAD``) once the CTI reaches its end: nothing that arrives
later can start before the CTI, so nothing can join the window (docs/ctis-and-release.md).
Snapshot windows and the Esper-style windows, whose stability also hangs on what makes a
boundary, have their own rules.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from streamql.spark.operators.flow import GROUP_CTI
from streamql.time import INFINITY_MICROS


def stable_once_cti_reaches(end: Column, cti: int | None, by_group: bool) -> Column:
    """Whether the window ending at ``end`` is stable: ``end <= CTI``. The CTI is ``cti``, or with
    ``by_group`` (inside ``group_apply``) each row's own group's CTI, the ``GROUP_CTI`` column the
    rows then hold; no CTI yet means nothing is stable, a CTI of INFINITY that everything is.

    >>> stable_once_cti_reaches(F.col(END), 40, by_group=False)  # doctest: +SKIP
    Column<'(_sq_end <= 40)'>
    """
    if by_group:
        return end <= F.col(GROUP_CTI)
    if cti is None:
        return F.lit(False)
    if cti == INFINITY_MICROS:
        return F.lit(True)
    return end <= F.lit(cti)
