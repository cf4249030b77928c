"""Count windows on Spark: windows over ``n`` consecutive distinct start times per group.

The distinct start times of each group are numbered in order (``ordinal``). Window ``i`` holds
the start times numbered ``i .. i+n-1``. Built-in aggregates never expand an event into its ``n``
windows: per start time the events are aggregated once, and a window's value combines a suffix
of one block of ``n`` start times with a prefix of the next (van Herk / Gil-Werman), so the work
is linear in the input whatever ``n`` is, and every step is partitioned by (group, block).
User-defined aggregates (and ``top_k``) see their members, so for them each event joins its ``n`` windows.
"""
from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.expr.nodes import Aggregate
from streamql.query.windows import CountWindow
from streamql.spark.base.aggregates import gathers, member_aggregates, result_name, value_name
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.base.sketches import Sketches, quantiles
from streamql.spark.operators.flow import GROUP_CTI, GroupCtis, shifted
from streamql.spark.windows.stability import stable_once_cti_reaches
from streamql.time import INFINITY_MICROS

ORDINAL, BLOCK, LAST_START = "_sq_ordinal", "_sq_block", "_sq_last_start"
#: the range of the timeline an ungrouped ``numbering`` numbers a row in
RANGE = "_sq_range"


def ordinal(starts: DataFrame, keys: tuple[str, ...], sketches: Sketches | None = None) -> DataFrame:
    """Numbers the rows of ``starts`` (distinct ``_sq_start`` per group of ``keys``) 0, 1, ... in
    start order within each group (``numbering`` without ties)."""
    numbered, partition = numbering(starts, keys, sketches=sketches)
    return numbered.drop(*[c for c in partition if c not in keys])


def numbering(rows: DataFrame, keys: tuple[str, ...], ties: Sequence[Column] = (), sketches: Sketches | None = None
              ) -> tuple[DataFrame, tuple[str, ...]]:
    """Numbers the rows of ``rows`` 0, 1, ... (``ORDINAL``) per group of ``keys`` in the order of
    ``_sq_start``, then ``ties``. Without keys the timeline is cut into ranges at quantiles of the
    starts, numbered within each range in parallel and offset by the counts of the ranges before
    it (one small row per range reaches the driver) — never one global sort partition. Rows with
    one start always share a range.

    Returns the numbered rows and the columns the numbering partitioned them by (``keys``, or the
    range column ``RANGE``, which stays in the rows): another window partitioned by those columns
    and ordered the same way follows without another shuffle or sort.

    >>> numbered, partition = numbering(events, (), [F.col("v").asc_nulls_first()])  # doctest: +SKIP
    """
    order = [F.col(START), *ties]
    if keys:
        return rows.withColumn(ORDINAL, F.row_number().over(Window.partitionBy(*keys).orderBy(*order)) - 1), keys
    parts = int(rows.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    probabilities = [i / parts for i in range(1, parts)]
    # the borders from the scan's sketches of the starts (no job), else from a quantile job
    borders: list[int] | list[float] = sorted(set(
        quantiles(sketches, probabilities) if sketches is not None
        else rows.select(F.col(START).cast("double").alias("s")).approxQuantile("s", probabilities, 0.001)))
    start = F.col(START) if sketches is not None else F.col(START).cast("double")
    position = F.lit(0)
    for border in borders:  # the borders are literals: every job numbers the same way
        position = position + F.when(start >= F.lit(border), 1).otherwise(0)
    ranged = rows.withColumn(RANGE, position)
    counts = {row[0]: row[1] for row in ranged.groupBy(RANGE).count().collect()}
    offsets, total = [], 0
    for part in sorted(counts):
        offsets += [F.lit(part), F.lit(total)]
        total += counts[part]
    offset = F.element_at(F.create_map(*offsets), F.col(RANGE)) if offsets else F.lit(0)
    within = F.row_number().over(Window.partitionBy(RANGE).orderBy(*order)) - 1
    return ranged.withColumn(ORDINAL, (offset + within).cast("long")), (RANGE,)


def _combine(fn: str, left: Column, right: Column) -> Column:
    """Two partial aggregates of disjoint sets of events as one (a null partial is an empty set)."""
    if fn in ("count",):
        return left + right
    if fn in ("sum", "nonnull"):
        return F.when(left.isNull(), right).when(right.isNull(), left).otherwise(left + right)
    if fn == "min":
        return F.least(left, right)  # least/greatest skip nulls
    return F.greatest(left, right)


def _partials(aggregates: Sequence[Aggregate]) -> list[tuple[str, str, Column]]:
    """The partial aggregates per start time: (name, combine rule, aggregate column)."""
    partials: list[tuple[str, str, Column]] = []
    for i, a in enumerate(aggregates):
        value = F.col(value_name(i))
        if a.fn == "count":
            partials.append((f"_sq_p{i}", "count", F.count(F.lit(1))))
        elif a.fn in ("sum", "avg"):
            as_sum = value.cast("double") if a.fn == "avg" else value
            partials.append((f"_sq_p{i}", "sum", F.sum(as_sum)))
            partials.append((f"_sq_n{i}", "count", F.count(value)))
        elif a.fn in ("min", "max"):
            partials.append((f"_sq_p{i}", a.fn, F.min(value) if a.fn == "min" else F.max(value)))
    return partials


def count_windows(spec: CountWindow, frame: DataFrame, keys: tuple[str, ...], aggregates: Sequence[Aggregate],
                  cti: int | None, group_keys: tuple[str, ...] = (), group_ctis: GroupCtis | None = None,
                  starts: Sketches | None = None) -> tuple[DataFrame, int | None, GroupCtis | None]:
    """One row per filled count window per group of ``keys`` (lifetime, stability, keys,
    aggregates), and the output CTI: the start of the earliest window that is not yet stable over
    all groups, or the input CTI if that is earlier (INFINITY stays INFINITY); and, inside
    ``group_apply`` (``group_keys``: its key columns), the same per group of ``group_keys`` —
    from each group's own input CTI where ``group_ctis`` gives them (``cti`` is then the least)."""
    n = spec.n
    partials = _partials(aggregates)
    per_start = frame.groupBy(*keys, START).agg(*[c.alias(name) for name, _, c in partials]) if partials \
        else frame.select(*keys, START).distinct()
    numbered = ordinal(per_start, keys, starts).withColumn(BLOCK, F.floor(F.col(ORDINAL) / F.lit(n)).cast("long"))
    block = Window.partitionBy(*keys, BLOCK).orderBy(ORDINAL)
    prefix = block.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    suffix = block.rowsBetween(Window.currentRow, Window.unboundedFollowing)
    scanned = numbered
    for name, rule, _ in partials:
        fn = {"count": F.sum, "sum": F.sum, "min": F.min, "max": F.max}[rule]
        scanned = (scanned.withColumn(f"{name}_pre", fn(name).over(prefix))
                   .withColumn(f"{name}_suf", fn(name).over(suffix)))
    # window i = starts i .. i+n-1: the suffix of i's block, plus the prefix of the next block up to
    # i+n-1 unless i begins a block (then the window is exactly that block)
    last = scanned.select(*[F.col(k).alias(f"_sq_l_{k}") for k in keys], F.col(ORDINAL).alias("_sq_l_ordinal"),
                          F.col(START).alias(LAST_START),
                          *[F.col(f"{name}_pre").alias(f"{name}_last") for name, _, _ in partials])
    windows = scanned.join(last, _same_group(keys, "_sq_l_", F.col(ORDINAL) + F.lit(n - 1) == F.col("_sq_l_ordinal")))
    aligned = F.col(ORDINAL) % F.lit(n) == 0
    values: dict[str, Column] = {}
    for name, rule, _ in partials:
        combined = _combine(rule, F.col(f"{name}_suf"), F.col(f"{name}_last"))
        values[name] = F.when(aligned, F.col(f"{name}_suf")).otherwise(combined)
    results = []
    for i, a in enumerate(aggregates):
        if a.fn == "count" or a.fn in ("min", "max"):
            results.append(values[f"_sq_p{i}"].alias(result_name(i)))
        elif a.fn in ("sum", "avg"):
            nonnull = values[f"_sq_n{i}"]
            total = F.when(nonnull > 0, values[f"_sq_p{i}"])
            results.append((total / nonnull if a.fn == "avg" else total).alias(result_name(i)))
    # a window ends one tick after its last start time: it is stable once the CTI is past that
    start, end = F.col(START), shifted(F.col(LAST_START), 1)
    if group_ctis is not None:
        windows = group_ctis.joined(windows)
    stable = stable_once_cti_reaches(end, cti, by_group=group_ctis is not None)
    formed = windows.select(start.alias(START), end.alias(END), stable.alias(CLOSED),
                            stable.alias(HEAD), *keys, LAST_START, ORDINAL, *results)
    user = [(i, a) for i, a in enumerate(aggregates) if gathers(a)]
    if user:
        formed = _with_user_aggregates(formed, frame, numbered, keys, user, n)
    formed = formed.drop(LAST_START, ORDINAL)
    least, groups = _output_cti(numbered, keys, n, cti, group_keys, group_ctis)
    return formed, least, groups


def _same_group(keys: tuple[str, ...], prefix: str, condition: Column) -> Column:
    """``condition`` and equal keys (null-safe: null is a group), the right side's keys renamed
    with ``prefix`` so that self-joins stay unambiguous."""
    for k in keys:
        condition = condition & F.col(k).eqNullSafe(F.col(prefix + k))
    return condition


def _with_user_aggregates(formed: DataFrame, frame: DataFrame, numbered: DataFrame, keys: tuple[str, ...],
                          user: list[tuple[int, Aggregate]], n: int) -> DataFrame:
    """User aggregates fold their window's members: each event joins the ``n`` windows holding it."""
    ordinals = numbered.select(*[F.col(k).alias(f"_sq_o_{k}") for k in keys], F.col(START).alias("_sq_o_start"),
                               F.col(ORDINAL).alias("_sq_o_ordinal"))
    members = frame.join(ordinals, _same_group(keys, "_sq_o_", F.col(START) == F.col("_sq_o_start")))
    members = members.withColumn("_sq_member_of", F.explode(F.sequence(
        F.greatest(F.col("_sq_o_ordinal") - F.lit(n - 1), F.lit(0).cast("long")), F.col("_sq_o_ordinal"))))
    windows = formed.select(*[F.col(k).alias(f"_sq_w_{k}") for k in keys], F.col(ORDINAL).alias("_sq_w_ordinal"),
                            F.col(START).alias("_sq_w_start"), shifted(F.col(LAST_START), 1).alias("_sq_w_end"))
    joined = members.join(windows, _same_group(keys, "_sq_w_", F.col("_sq_member_of") == F.col("_sq_w_ordinal")))
    clipped_start = F.greatest(F.col(START), F.col("_sq_w_start"))
    clipped_end = F.least(F.col(END), F.col("_sq_w_end"))
    group = [f"_sq_w_{k}" for k in keys] + ["_sq_w_ordinal"]
    folded = joined.groupBy(*group).agg(*member_aggregates(user, clipped_start, clipped_end))
    out = formed.join(folded, _same_group(keys, "_sq_w_", F.col(ORDINAL) == F.col("_sq_w_ordinal")), "left")
    return out.drop(*group)


def _output_cti(numbered: DataFrame, keys: tuple[str, ...], n: int, cti: int | None,
                group_keys: tuple[str, ...], group_ctis: GroupCtis | None) -> tuple[int | None, GroupCtis | None]:
    """The start of the earliest window, over all groups, that is not yet stable: its last start
    is at or after the CTI, or it has not filled. The CTI itself if that is earlier. With
    ``group_keys``, also per group of them (lazily: a frame the operators after it join)."""
    if cti is None or cti == INFINITY_MICROS:
        return cti, None
    own = F.lit(cti) if group_ctis is None else F.col(GROUP_CTI)  # each row's group's CTI
    early = (numbered if group_ctis is None else group_ctis.joined(numbered)).filter(F.col(START) < own)
    early = early.select(*keys, START, ORDINAL, own.alias(GROUP_CTI))
    later = numbered.select(*[F.col(k).alias(f"_sq_l_{k}") for k in keys], F.col(ORDINAL).alias("_sq_l_ordinal"),
                            F.col(START).alias("_sq_l_start"))
    joined = early.join(later, _same_group(keys, "_sq_l_", F.col(ORDINAL) + F.lit(n - 1) == F.col("_sq_l_ordinal")),
                        "left")
    unstable = joined.filter(F.col("_sq_l_start").isNull() | (F.col("_sq_l_start") >= F.col(GROUP_CTI)))
    earliest = unstable.agg(F.min(START)).first()
    found = earliest[0] if earliest is not None else None
    least = cti if found is None else min(cti, int(found))
    if not group_keys or (found is None and group_ctis is None):
        return least, None
    if group_ctis is not None and group_ctis.keys != group_keys:
        # inside a nested group_apply, the outer groups' CTIs: the flags read them, the output
        # keeps the least (the inner groups' own would need the outer ones as their default)
        return least, None
    # unstable windows start before their group's CTI: a group's earliest is its CTI, else its input CTI
    earliest_per_group = unstable.groupBy(*group_keys).agg(F.min(START).alias(GROUP_CTI))
    if group_ctis is not None:
        earliest_per_group = earliest_per_group.unionByName(group_ctis.frame.select(*group_keys, GROUP_CTI))
        earliest_per_group = earliest_per_group.groupBy(*group_keys).agg(F.min(GROUP_CTI).alias(GROUP_CTI))
        return least, GroupCtis(earliest_per_group, group_ctis.default, group_keys)
    return least, GroupCtis(earliest_per_group, cti, group_keys)
