"""Snapshot windows on Spark: a sweep over each group's sorted event endpoints
(docs/snapshot-windows.md#snapshot-windows-on-spark).

The semantics are ``streamql.reference.windows.snapshot`` and ``aggregate``: one output row per
interval between consecutive distinct endpoints (starts and ends, ``INFINITY`` included) of a
group's events in which some event is alive; adjacent equal values are not merged. An event alive
in an interval covers all of it, so its lifetime clipped to the interval is the interval itself.

The sweep runs per *sweep partition* — a group's key values, or a range of the timeline when the
window is ungrouped — as one chain of operators over one shuffle of *endpoint rows*:

1. Every event becomes a start row (``+1`` alive, ``+value`` ...) and an end row (the same with
   ``-``). Window functions over the rows ordered by time index the distinct times 0, 1, 2, ...
   (interval ``k`` is ``[t_k, t_{k+1})``) and give the running sums of the deltas: at ``t_k``
   they are ``count``, ``sum`` and ``avg`` over the events alive in interval ``k``. A running
   count of non-null values makes all-null intervals null.
2. ``min`` and ``max`` cannot be undone at an end. The intervals ``[i, j)`` an event covers are
   cut into the O(log) aligned blocks of a segment tree (its canonical cover); min/max are taken
   per block by a window over (partition, level, block), which every interval also visits once per
   level with its ancestor ``(L, k >> L)``. Nothing is paired without a key, and no event is
   spread over all the intervals it covers.
3. User-defined aggregates need every member's value: their events are spread over the intervals
   they cover and each interval's values are folded (``aggregates.fold_user_aggregate``);
   ``top_k`` takes an interval's values as they are gathered (``aggregates.MEMBERS``).
4. One aggregation per (partition, interval) gathers the interval, its min/max and its members.

An ungrouped window still uses every core: *borders* (approximate quantiles of the starts) cut the
timeline into ranges, each event becomes one *piece* per range it overlaps (clipped to the range),
and each range is swept as if it were a group. A piece's deltas are exact within its range, so
running sums need nothing from other ranges. A border that is no endpoint of any event cuts one
snapshot interval in two; the stitch keeps the part that starts at a real endpoint and gives it
the end of the whole interval: the next real endpoint, possibly ranges further on. For that each
range sends its earliest real endpoint to every earlier range (at most ranges² tiny rows) in a
second, output-sized shuffle.

Floating-point sums are running sums: they equal the reference's left-to-right sums exactly when
every partial sum is exact (values such as small multiples of 0.25). NaN and the infinities are
counted apart from the finite values, so that one of them only affects the intervals its event is
alive in, as in the reference. Integer and decimal running sums are exact, but a partial sum may
overflow (an error in ANSI mode) where the alive events' own sum would not.

The borders come from the sketches of the starts that the arrival-order scan made, where the
operators since the input keep or move starts predictably (``Flow.starts``); elsewhere choosing
them costs one pass over the input (``approxQuantile``) when the plan is built.

>>> formed = snapshot_windows(frame, ("_sq_key0",), aggregates, cti)  # doctest: +SKIP
>>> formed.columns  # doctest: +SKIP
['_sq_start', '_sq_end', '_sq_closed', '_sq_head', '_sq_key0', '_sq_agg0']
"""
from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamql.expr.nodes import Aggregate
from streamql.spark.base.aggregates import MEMBERS, fold_user_aggregate, gathers, result_name, transferable, \
    value_name
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.base.sketches import Sketches
from streamql.spark.base.sketches import quantiles as sketched_quantiles
from streamql.spark.operators.flow import GROUP_CTI, GroupCtis
from streamql.spark.runtime.connect import parallelism as session_parallelism
from streamql.spark.runtime.phases import phase
from streamql.time import INFINITY_MICROS, MAX_MICROS

#: the sweep partition: ``struct(keys)`` for a grouped window, the range's index for an ungrouped one
PART = "_sq_part"
#: ranges per slot of the default parallelism for an ungrouped window: a few per core even the load
RANGES_PER_CORE = 4

# pieces: the event clipped to its range, whether its start / end is the event's own (not a
# border), whether that own start / end lies on a border of its range, the event's ranges
_PIECE_START, _PIECE_END = "_sq_piece_start", "_sq_piece_end"
_OWN_START, _OWN_END = "_sq_own_start", "_sq_own_end"
_START_ON_BORDER, _END_ON_BORDER = "_sq_start_on_border", "_sq_end_on_border"
_FIRST_RANGE, _LAST_RANGE = "_sq_first_range", "_sq_last_range"

# endpoint rows: an endpoint is *real* when some event starts or ends there (not just a border),
# *stable* when what makes it a boundary is stable (docs/ctis-and-release.md#stability-and-the-release-rule);
# ``_AT`` columns hold the value for all rows of the same time; the last row of each time stands for its endpoint
_ROLE, _TIME, _INDEX = "_sq_role", "_sq_time", "_sq_index"
_REAL, _STABLE, _REAL_AT, _STABLE_AT = "_sq_real", "_sq_stable", "_sq_real_at", "_sq_stable_at"
_LAST_AT = "_sq_last_at"
_ALIVE = "_sq_alive"
_NEXT_TIME, _NEXT_REAL, _NEXT_STABLE = "_sq_next_time", "_sq_next_real", "_sq_next_stable"
_FIRST_REAL = "_sq_first_real"
#: the intervals [from, to) a piece covers; the highest level of a cover in the partition
_FROM, _TO, _TOP_LEVEL = "_sq_from", "_sq_to", "_sq_top_level"

# items: what an endpoint row contributes to an output interval (see ``_items``)
_ITEM, _KIND, _AT, _LEVEL, _BLOCK = "_sq_item", "kind", "at", "level", "block"
_INTERVAL, _COVER, _MEMBER, _NOTICE = 0, 1, 2, 3
_NOTICE_AT = -1
#: what an item carries besides itself: the interval's endpoint columns (on one item per interval),
#: the piece's values (on cover and member items), a range's earliest real endpoint (on a notice)
_PAYLOAD, _VALUES = "_sq_payload", "_sq_values"

# output intervals: whether the group is an interval, its members, the stitch, the end
_IS_INTERVAL, _MEMBERS, _NOTICE_OF, _TARGET, _BEYOND = (
    "_sq_is_interval", "_sq_members", "_sq_notice", "_sq_target", "_sq_beyond")
_UNTIL, _UNTIL_STABLE = "_sq_until", "_sq_until_stable"

# roles of endpoint rows: a piece's start and end, and copies of an event's own start (end) lying
# on its range's low (high) border into the previous (next) range, so that both ranges see that
# the border is a real endpoint and whether it is stable
_STARTS, _ENDS, _START_INTO_PREVIOUS, _END_INTO_NEXT = 0, 1, 2, 3

_LONG_MIN = -(2**63)


def snapshot_windows(frame: DataFrame, keys: tuple[str, ...], aggregates: Sequence[Aggregate],
                     cti: int | None, group_ctis: GroupCtis | None = None, starts: Sketches | None = None
                     ) -> DataFrame:
    """One row per snapshot interval in which an event is alive, per group of ``keys``.

    ``frame`` holds ``_sq_start``, ``_sq_end``, ``_sq_closed``, ``_sq_head``, the ``keys`` and each
    aggregate's argument (``aggregates.value_name``); the result holds each interval's lifetime and
    stability flags, the ``keys`` and each aggregate's value (``aggregates.result_name``). Without
    keys the timeline is cut into ranges, ``RANGES_PER_CORE`` per slot of the default parallelism.
    ``group_ctis``: inside ``group_apply``, each group's own CTI (``cti`` is then the least of them);
    ``starts``: sketches of the starts, for the borders (``range_borders``).
    """
    if not keys:
        parallelism = session_parallelism(frame.sparkSession)
        return snapshot_over_ranges(frame, aggregates, cti, range_borders(frame, RANGES_PER_CORE * parallelism,
                                                                                    starts))
    # one column partitions the sweep — the key itself, or a struct of several: null key fields
    # compare equal in both, so nulls are a group of their own in windows and aggregations alike
    # (a single key stays as it is: sorting and hashing a struct costs more)
    single = len(keys) == 1
    pieces = frame.select(
        (F.col(keys[0]) if single else F.struct(*keys)).alias(PART), *_event_columns(aggregates),
        F.col(START).alias(_PIECE_START), F.col(END).alias(_PIECE_END),
        F.lit(True).alias(_OWN_START), F.lit(True).alias(_OWN_END))
    formed = _sweep(pieces, frame, aggregates, cti, borders=None, stable_ends=group_ctis is not None)
    key_columns = [F.col(PART).alias(keys[0])] if single else [F.col(PART)[k].alias(k) for k in keys]
    results = [result_name(i) for i in range(len(aggregates))]
    if group_ctis is None:
        return formed.select(START, END, CLOSED, HEAD, *key_columns, *results)
    # each interval's flags with its own group's CTI (the reference runs the sub-query per group)
    own = group_ctis.joined(formed.select(START, END, _UNTIL_STABLE, *key_columns, *results))
    group_cti, until = F.col(GROUP_CTI), F.col(END)
    closed = (until < group_cti) | ((until == group_cti) & F.col(_UNTIL_STABLE))
    return own.select(START, END, closed.alias(CLOSED), (F.col(START) < group_cti).alias(HEAD), *keys, *results)


def range_borders(frame: DataFrame, ranges: int, starts: Sketches | None = None) -> list[int]:
    """Up to ``ranges - 1`` increasing finite times cutting the timeline into ranges of about as many
    event starts each: approximate quantiles from ``starts``, sketches of the starts that the
    arrival-order scan made (no job), else from one pass over ``frame``, computed now."""
    if ranges <= 1:
        return []
    probabilities = [k / ranges for k in range(1, ranges)]
    quantiles: Sequence[float | None]
    if starts is not None:
        quantiles = sketched_quantiles(starts, probabilities)
    else:
        with phase("range borders"):
            quantiles = frame.approxQuantile(START, probabilities, 1 / (4 * ranges))
    # doubles come back: any finite longs will do as borders (INFINITY is an endpoint, not a border)
    return sorted({min(max(int(q), _LONG_MIN + 1), MAX_MICROS) for q in quantiles if q is not None})


def snapshot_over_ranges(frame: DataFrame, aggregates: Sequence[Aggregate], cti: int | None,
                         borders: Sequence[int]) -> DataFrame:
    """The ungrouped snapshot windows of ``frame``, swept per range between ``borders`` (finite
    times; any choice gives the same result, the borders only decide how the work is spread)."""
    borders = sorted(set(borders))
    part = F.col(PART)
    low, high = _range_low(part, borders), _range_high(part, borders)
    events = frame.select(*_event_columns(aggregates), range_of(F.col(START), borders).alias(_FIRST_RANGE),
                          # the range of the event's last instant: an end on a border is in the range before it
                          range_of(F.col(END) - F.lit(1), borders).alias(_LAST_RANGE))
    spread = events.select("*", F.explode(F.sequence(F.col(_FIRST_RANGE), F.col(_LAST_RANGE))).alias(PART))
    own_start, own_end = part == F.col(_FIRST_RANGE), part == F.col(_LAST_RANGE)
    pieces = spread.select(
        PART, *_event_columns(aggregates),
        F.greatest(F.col(START), low).alias(_PIECE_START), F.least(F.col(END), high).alias(_PIECE_END),
        own_start.alias(_OWN_START), own_end.alias(_OWN_END),
        (own_start & (part > 0) & (F.col(START) == low)).alias(_START_ON_BORDER),
        (own_end & (part < len(borders)) & (F.col(END) == high)).alias(_END_ON_BORDER))
    formed = _sweep(pieces, frame, aggregates, cti, borders=borders)
    return formed.select(START, END, CLOSED, HEAD, *[result_name(i) for i in range(len(aggregates))])


# --- ranges of the timeline --------------------------------------------------------------------

def range_of(t: Column, borders: Sequence[int]) -> Column:
    """The index of the range holding ``t`` — how many borders are ``<= t`` — as a binary search
    of nested CASEs over the literal borders: O(log) comparisons per row."""
    def search(low: int, high: int) -> Column:  # the index lies in [low, high]
        if low == high:
            return F.lit(low)
        middle = (low + high + 1) // 2
        return F.when(t >= F.lit(borders[middle - 1]), search(middle, high)).otherwise(search(low, middle - 1))
    return search(0, len(borders))


def _range_low(part: Column, borders: Sequence[int]) -> Column:
    """The first time of range ``part`` (the least long for the first range)."""
    return F.element_at(F.array(*[F.lit(b) for b in [_LONG_MIN, *borders]]), part + 1)


def _range_high(part: Column, borders: Sequence[int]) -> Column:
    """The time just after range ``part`` (``INFINITY`` for the last range, which also holds it)."""
    return F.element_at(F.array(*[F.lit(b) for b in [*borders, INFINITY_MICROS]]), part + 1)


# --- the sweep ---------------------------------------------------------------------------------

def _event_columns(aggregates: Sequence[Aggregate]) -> list[str]:
    """The event columns a sweep reads besides its partition and the piece's lifetime."""
    return [START, END, CLOSED, HEAD] + [value_name(i) for i, a in enumerate(aggregates) if a.arg is not None]


def _sweep(pieces: DataFrame, frame: DataFrame, aggregates: Sequence[Aggregate], cti: int | None,
           borders: Sequence[int] | None, stable_ends: bool = False) -> DataFrame:
    """The snapshot intervals of ``pieces`` per ``PART``: ``PART``, the lifetime, the flags and the
    aggregates; ``borders`` when the partitions are ranges of the timeline, to be stitched.
    ``stable_ends``: also whether each interval's end is a stable boundary (``_UNTIL_STABLE``)."""
    types = {value_name(i): frame.schema[value_name(i)].dataType for i, a in enumerate(aggregates)
             if a.arg is not None}
    tallies = _tallies(aggregates, types)
    extremes = [i for i, a in enumerate(aggregates) if a.fn in ("min", "max")]
    users = [i for i, a in enumerate(aggregates) if gathers(a)]
    values = [value_name(i) for i in extremes + users]
    ranged = borders is not None
    indexed = bool(extremes or users)
    stability = ranged or stable_ends or (cti is not None and cti != INFINITY_MICROS)
    if not ranged:
        # shuffle the pieces, not their twice as many endpoint rows: the rows made after the
        # exchange stay in the partition of their piece, which the sweep's windows need
        pieces = pieces.repartition(PART)
    rows = _swept(_endpoint_rows(pieces, aggregates, tallies, ranged), tallies, values, ranged, indexed, stability)
    if not indexed and not ranged:
        # running sums alone: the last row of each interval's start time holds all of it
        intervals = rows.filter(_owned(borders)).select(
            "*", F.col(_NEXT_TIME).alias(_UNTIL), F.col(_NEXT_STABLE).alias(_UNTIL_STABLE))
    else:
        if indexed:
            rows = _with_covers(rows, with_levels=bool(extremes))
        items = _itemized(rows, _owned(borders), tallies, aggregates, values, ranged)
        if extremes:
            items = _with_extremes(items, aggregates, extremes)
        intervals = _gathered(items, tallies, aggregates, extremes, users, ranged)
        if ranged:
            intervals = _stitched(intervals)
        else:
            intervals = intervals.filter(_IS_INTERVAL).select(
                "*", F.col(_NEXT_TIME).alias(_UNTIL), F.col(_NEXT_STABLE).alias(_UNTIL_STABLE))
    return intervals.select(
        PART, F.col(_TIME).alias(START), F.col(_UNTIL).alias(END), _closed(cti).alias(CLOSED),
        _head(cti).alias(HEAD), *[_result(i, a, types).alias(result_name(i)) for i, a in enumerate(aggregates)],
        *([F.col(_UNTIL_STABLE)] if stable_ends else []))


def _owned(borders: Sequence[int] | None) -> Column:
    """Whether an endpoint row starts an output interval: the last row of a real endpoint at which
    some event is alive and after which another endpoint follows."""
    owned = F.col(_LAST_AT) & F.col(_REAL_AT) & (F.col(_ALIVE) > 0) & F.col(_NEXT_TIME).isNotNull()
    if borders is None:
        return owned
    # an interval belongs to the range its start lies in; a range's low border is an endpoint
    # there when pieces start on it, but an interval starts there only if the border is real
    return owned & (F.col(_TIME) < _range_high(F.col(PART), borders))


def _itemized(rows: DataFrame, owned: Column, tallies: dict[str, tuple[Column, T.DataType]],
              aggregates: Sequence[Aggregate], values: list[str], ranged: bool) -> DataFrame:
    """The items of the endpoint rows (``_items``), narrowed to what each kind needs: an interval has
    an item per tree level and only one of them carries its columns; only cover and member items
    carry values; only notices carry the range's earliest real endpoint."""
    exploded = rows.select("*", F.explode(_items(owned, aggregates, ranged)).alias(_ITEM))
    item = F.col(_ITEM)
    carrier = (item[_KIND] == _INTERVAL) & (item[_LEVEL].isNull() | (item[_LEVEL] == 0))
    carried = [F.when(carrier, F.struct(*_interval_columns(tallies))).alias(_PAYLOAD)]
    if values:
        carried.append(F.when(item[_KIND].isin(_COVER, _MEMBER), F.struct(*values)).alias(_VALUES))
    if ranged:
        carried.append(F.when(item[_KIND] == _NOTICE, F.col(_FIRST_REAL)).alias(_NOTICE_OF))
    return exploded.select(PART, _ITEM, *carried)


def _with_extremes(items: DataFrame, aggregates: Sequence[Aggregate], extremes: list[int]) -> DataFrame:
    """The interval items with the min/max of their ancestor block: a window over each block of the
    tree holds its cover items and the interval items visiting it (no shuffle: by ``PART``)."""
    item = F.col(_ITEM)
    block = Window.partitionBy(PART, item[_LEVEL], item[_BLOCK])
    covering = item[_KIND] == _COVER
    with_blocks = items.select("*", *[
        _extreme(aggregates[i].fn, F.when(covering, F.col(_VALUES)[value_name(i)])).over(block).alias(_extreme_name(i))
        for i in extremes])
    return with_blocks.filter(~covering)


def _tallies(aggregates: Sequence[Aggregate], types: dict[str, T.DataType]) -> dict[str, tuple[Column, T.DataType]]:
    """What an event adds to each running sum while it is alive: 1 to the alive count; for every
    sum and avg its non-null count and its value — for doubles, the finite value, and NaN, +inf and
    -inf counted apart, since a running sum could never take them off again."""
    long = T.LongType()
    tallies: dict[str, tuple[Column, T.DataType]] = {_ALIVE: (F.lit(1), long)}
    for i, a in enumerate(aggregates):
        if a.fn not in ("sum", "avg"):
            continue
        value, dtype = F.col(value_name(i)), types[value_name(i)]
        if a.arg is not None and a.arg.type.nullable:  # else every alive event has a value
            tallies[_present(i)] = (F.when(value.isNotNull(), 1).otherwise(0), long)
        if isinstance(dtype, T.DoubleType):
            infinite = F.abs(value) == F.lit(float("inf"))
            finite = F.when(value.isNull() | F.isnan(value) | infinite, F.lit(0.0)).otherwise(value)
            tallies[_total(i)] = (finite, dtype)
            tallies[_special(i, "nan")] = (F.when(F.isnan(value), 1).otherwise(0), long)
            tallies[_special(i, "up")] = (F.when(value == F.lit(float("inf")), 1).otherwise(0), long)
            tallies[_special(i, "down")] = (F.when(value == F.lit(float("-inf")), 1).otherwise(0), long)
        else:
            tallies[_total(i)] = (F.coalesce(value, F.lit(0).cast(dtype)), dtype)
    return tallies


def _present(i: int) -> str:
    return f"_sq_present{i}"


def _total(i: int) -> str:
    return f"_sq_total{i}"


def _special(i: int, what: str) -> str:
    return f"_sq_{what}{i}"


def _extreme_name(i: int) -> str:
    return f"_sq_extreme{i}"


def _extreme(fn: str, value: Column) -> Column:
    return F.min(value) if fn == "min" else F.max(value)


def _endpoint_rows(pieces: DataFrame, aggregates: Sequence[Aggregate],
                   tallies: dict[str, tuple[Column, T.DataType]], ranged: bool) -> DataFrame:
    """Each piece as its start row (``+`` tallies; the values of min, max and user aggregates) and
    its end row (``-`` tallies); over ranges also the copies of an event's own endpoint lying on a
    border into the neighbouring range, with no tallies and no piece."""
    role = F.col(_ROLE)
    roles = [_STARTS, _ENDS] + ([_START_INTO_PREVIOUS, _END_INTO_NEXT] if ranged else [])
    rows = pieces.select("*", F.explode(F.array(*[F.lit(r) for r in roles])).alias(_ROLE))
    part = F.col(PART)
    if ranged:
        rows = rows.filter((role <= _ENDS) | ((role == _START_INTO_PREVIOUS) & F.col(_START_ON_BORDER))
                           | ((role == _END_INTO_NEXT) & F.col(_END_ON_BORDER)))
        part = (F.when(role == _START_INTO_PREVIOUS, part - F.lit(1))
                .when(role == _END_INTO_NEXT, part + F.lit(1)).otherwise(part))
    starting = role.isin(_STARTS, _START_INTO_PREVIOUS)
    real = F.when(role == _STARTS, F.col(_OWN_START)).when(role == _ENDS, F.col(_OWN_END)).otherwise(F.lit(True))
    # a boundary is stable when made by the end of a closed event or by the start of an event
    # whose start and payload are stable (docs/ctis-and-release.md#stability-and-the-release-rule)
    stable = real & F.when(starting, F.col(HEAD)).otherwise(F.col(CLOSED))
    of_piece = role <= _ENDS
    columns = [part.alias(PART), role.alias(_ROLE),
               F.when(starting, F.col(_PIECE_START)).otherwise(F.col(_PIECE_END)).alias(_TIME),
               real.alias(_REAL), stable.alias(_STABLE),
               F.when(of_piece, F.col(_PIECE_START)).alias(_PIECE_START),
               F.when(of_piece, F.col(_PIECE_END)).alias(_PIECE_END)]
    for name, (tally, dtype) in tallies.items():
        # a negation, not a multiplication by -1, which would widen a decimal and cut its scale
        signed = F.when(role == _STARTS, tally).when(role == _ENDS, -tally).otherwise(F.lit(0).cast(dtype))
        columns.append(signed.cast(dtype).alias(name))
    for i, a in enumerate(aggregates):
        if a.fn in ("min", "max") or gathers(a):
            columns.append(F.when(role == _STARTS, F.col(value_name(i))).alias(value_name(i)))
    return rows.select(*columns)


def _swept(rows: DataFrame, tallies: dict[str, tuple[Column, T.DataType]], values: list[str],
           ranged: bool, indexed: bool, stability: bool) -> DataFrame:
    """The endpoint rows with, per row, its time's index, the running tallies through its time,
    whether its time is real and stable, whether it is the last row of its time and, on those
    rows, the next endpoint; over ranges also the range's earliest real endpoint. Window
    functions over one shuffle and one sort: the sweep."""
    if not ranged and not indexed:
        return _swept_once(rows, tallies, values, stability)
    in_time = Window.partitionBy(PART).orderBy(_TIME)
    same_time = in_time.rangeBetween(Window.currentRow, Window.currentRow)
    # the tallies are read on the last row of a time only (``_owned``, ``_interval_columns``): there
    # a running sum over the rows so far holds the deltas of every endpoint through that time (a
    # frame of rows, not of times: Spark need not compare the order's values to find its peers)
    through = in_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.select(
        PART, _ROLE, _TIME, _PIECE_START, _PIECE_END, *values,
        *([(F.dense_rank().over(in_time) - F.lit(1)).alias(_INDEX)] if indexed or ranged else []),
        # without ranges every endpoint is real; with a CTI of INFINITY (or none) no boundary's
        # stability decides anything: then the flags are constants, not windows
        (F.bool_or(_REAL).over(same_time) if ranged else F.lit(True)).alias(_REAL_AT),
        (F.bool_or(_STABLE).over(same_time) if stability else F.lit(True)).alias(_STABLE_AT),
        *[F.sum(name).over(through).alias(name) for name in tallies],
        # the next row after the last row of a time is the first row of the next time
        F.lead(_TIME).over(in_time).alias(_NEXT_TIME))
    # the flags' leads read the first window operator's results: a second one, when they are needed
    following = [(F.lead(_REAL_AT).over(in_time) if ranged else F.lit(True)).alias(_NEXT_REAL),
                 (F.lead(_STABLE_AT).over(in_time) if stability else F.lit(True)).alias(_NEXT_STABLE)]
    rows = rows.select("*", *following).withColumn(_LAST_AT, _last_at())
    if not ranged:
        return rows
    # a min over (time, unstable) prefers a stable entry at the same time: a boundary is stable if
    # anything making it is
    earliest = F.when(F.col(_REAL_AT), F.struct(F.col(_TIME).alias("time"), (~F.col(_STABLE_AT)).alias("unstable")))
    return rows.select("*", F.min(earliest).over(Window.partitionBy(PART)).alias(_FIRST_REAL))


def _swept_once(rows: DataFrame, tallies: dict[str, tuple[Column, T.DataType]], values: list[str],
                stability: bool) -> DataFrame:
    """``_swept`` of a grouped sweep with running sums alone (no index, no ranges), in one window
    operator: ordered by time and, within a time, stable rows first, the row after the last row of
    a time is the first row of the next time, stable if any row of its time is — the lead of the
    stability itself is the next endpoint's, with no window over the rows of a time before it."""
    order = Window.partitionBy(PART).orderBy(F.col(_TIME), F.col(_STABLE).desc()) if stability \
        else Window.partitionBy(PART).orderBy(_TIME)
    through = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.select(
        PART, _ROLE, _TIME, _PIECE_START, _PIECE_END, *values,
        F.lit(True).alias(_REAL_AT),  # without ranges every endpoint is real
        *[F.sum(name).over(through).alias(name) for name in tallies],
        F.lead(_TIME).over(order).alias(_NEXT_TIME),
        F.lit(True).alias(_NEXT_REAL),
        (F.lead(_STABLE).over(order) if stability else F.lit(True)).alias(_NEXT_STABLE))
    return rows.withColumn(_LAST_AT, _last_at())


def _last_at() -> Column:
    """Whether an endpoint row is the last row of its time (the next row's time is another)."""
    return F.col(_NEXT_TIME).isNull() | (F.col(_NEXT_TIME) != F.col(_TIME))


def _with_covers(rows: DataFrame, with_levels: bool) -> DataFrame:
    """The endpoint rows with the intervals ``[from, to)`` their piece covers (the indices of its
    start and end rows) and, ``with_levels``, the highest segment-tree level that any piece's cover
    reaches in the partition: no interval needs an ancestor above it."""
    same_piece = Window.partitionBy(PART, _PIECE_START, _PIECE_END)
    rows = rows.select("*", F.min(F.when(F.col(_ROLE) == _STARTS, F.col(_INDEX))).over(same_piece).alias(_FROM),
                       F.max(F.when(F.col(_ROLE) == _ENDS, F.col(_INDEX))).over(same_piece).alias(_TO))
    if not with_levels:
        return rows
    top = F.max(F.when(F.col(_ROLE) == _STARTS, _cover_levels())).over(Window.partitionBy(PART))
    return rows.select("*", F.coalesce(top, F.lit(0)).alias(_TOP_LEVEL))


def _cover_levels() -> Column:
    """The highest level of a piece's canonical cover, or one more: ``l < r`` at level ``L`` needs
    ``2^L <= j - i``, and a rounding of log2 can only add a level."""
    return F.ceil(F.log2(F.col(_TO) - F.col(_FROM))).cast("int")


def _interval_columns(tallies: dict[str, tuple[Column, T.DataType]]) -> list[str]:
    """The columns an output interval takes from the last row of its start time."""
    return [_TIME, _NEXT_TIME, _NEXT_REAL, _NEXT_STABLE, *tallies]


def _items(owned: Column, aggregates: Sequence[Aggregate], ranged: bool) -> Column:
    """What an endpoint row contributes, as an array of items ``struct(kind, at, level, block)``:

    - ``_INTERVAL`` at ``k``: the last row of the time starting output interval ``k`` (``owned``),
      once per ancestor ``(level, block)`` in the segment tree when there are min/max aggregates;
    - ``_COVER``: a piece's start row, once per block ``(level, block)`` of its canonical cover;
    - ``_MEMBER`` at ``k``: a piece's start row, once per interval it covers (user aggregates);
    - ``_NOTICE``: over ranges, one row per range carrying its earliest real endpoint."""
    none = F.array().cast(T.ArrayType(_ITEM_TYPE))
    index, start = F.col(_INDEX), F.col(_ROLE) == _STARTS
    with_extremes = any(a.fn in ("min", "max") for a in aggregates)
    if with_extremes:
        levels = F.sequence(F.lit(0), F.col(_TOP_LEVEL))
        intervals = F.transform(levels, lambda level: _item(_INTERVAL, index, level,
                                                            F.floor(index / F.pow(F.lit(2.0), level))))
    else:
        intervals = F.array(_item(_INTERVAL, index))
    parts = [F.when(owned, intervals).otherwise(none)]
    if with_extremes:
        parts.append(F.when(start, _cover()).otherwise(none))
    if any(gathers(a) for a in aggregates):
        covered = F.sequence(F.col(_FROM), F.col(_TO) - F.lit(1))
        parts.append(F.when(start, F.transform(covered, lambda k: _item(_MEMBER, k))).otherwise(none))
    if ranged:
        first = F.col(_LAST_AT) & (index == 0) & F.col(_FIRST_REAL).isNotNull()
        parts.append(F.when(first, F.array(_item(_NOTICE, F.lit(_NOTICE_AT)))).otherwise(none))
    return F.concat(*parts) if len(parts) > 1 else parts[0]


_ITEM_TYPE = T.StructType([T.StructField(_KIND, T.IntegerType()), T.StructField(_AT, T.IntegerType()),
                           T.StructField(_LEVEL, T.IntegerType()), T.StructField(_BLOCK, T.LongType())])


def _item(kind: int, at: Column | None = None, level: Column | None = None, block: Column | None = None) -> Column:
    """One item: ``struct(kind, at, level, block)`` with nulls for what the kind does not use."""
    fields = ((_AT, at, "int"), (_LEVEL, level, "int"), (_BLOCK, block, "long"))
    return F.struct(F.lit(kind).alias(_KIND), *[(F.lit(None) if c is None else c).cast(t).alias(name)
                                               for name, c, t in fields])


def _cover() -> Column:
    """The canonical cover of a piece's intervals ``[i, j)`` as ``_COVER`` items: at level ``L``,
    with ``l = ceil(i / 2^L)`` and ``r = floor(j / 2^L)``, block ``l`` if ``l < r`` and ``l`` is
    odd, block ``r - 1`` if ``l < r`` and ``r`` is odd (block ``b`` of level ``L`` holds the
    intervals ``[b * 2^L, (b + 1) * 2^L)``). Divisions by powers of two are exact in doubles."""
    first, last = F.col(_FROM), F.col(_TO)
    levels = F.sequence(F.lit(0), _cover_levels())

    def at_level(level: Column) -> Column:
        size = F.pow(F.lit(2.0), level)
        low, high = F.ceil(first / size), F.floor(last / size)
        sides = F.array(F.when((low < high) & (low % 2 == 1), _item(_COVER, None, level, low)),
                        F.when((low < high) & (high % 2 == 1), _item(_COVER, None, level, high - 1)))
        return F.filter(sides, lambda b: b.isNotNull())
    return F.flatten(F.transform(levels, at_level))


def _gathered(items: DataFrame, tallies: dict[str, tuple[Column, T.DataType]], aggregates: Sequence[Aggregate],
              extremes: list[int], users: list[int], ranged: bool) -> DataFrame:
    """One row per (partition, interval index) from the items: the interval's columns (from the
    item carrying them), its min/max over its ancestors, its members' values, and per range the
    notice of its earliest real endpoint (at index ``_NOTICE_AT``). No shuffle: the items are
    still partitioned by ``PART``."""
    kind = F.col(_ITEM)[_KIND]
    interval = kind == _INTERVAL
    # one item per interval carries its columns, none of which is null: first() finds them
    columns = [F.bool_or(interval).alias(_IS_INTERVAL),
               *[F.first(F.col(_PAYLOAD)[name], ignorenulls=True).alias(name) for name in _interval_columns(tallies)],
               *[_extreme(aggregates[i].fn, F.when(interval, F.col(_extreme_name(i)))).alias(_extreme_name(i))
                 for i in extremes]]
    if users:
        values = F.struct(*[_gatherable(aggregates[i], F.col(_VALUES)[value_name(i)]).alias(f"v{i}") for i in users])
        # the struct keeps null values, which collect_list would skip
        columns.append(F.collect_list(F.when(kind == _MEMBER, values)).alias(_MEMBERS))
    if ranged:
        # field by field: first() over a struct would turn the hash aggregation into a sort
        columns += [F.first(F.col(_NOTICE_OF)[field], ignorenulls=True).alias(f"{_NOTICE_OF}_{field}")
                    for field in ("time", "unstable")]
    gathered = items.groupBy(PART, F.col(_ITEM)[_AT].alias(_INDEX)).agg(*columns)
    if not ranged:
        return gathered
    time, unstable = F.col(f"{_NOTICE_OF}_time"), F.col(f"{_NOTICE_OF}_unstable")
    notice = F.when(time.isNotNull(), F.struct(time.alias("time"), unstable.alias("unstable")))
    return gathered.select("*", notice.alias(_NOTICE_OF))


def _gatherable(a: Aggregate, value: Column) -> Column:
    """A member's value as gathered: for a user aggregate as Python takes it (``transferable``)."""
    return value if a.fn == MEMBERS else transferable(a, value)


def _stitched(intervals: DataFrame) -> DataFrame:
    """The output intervals of ranges with their true ends: an interval whose next endpoint is its
    range's high border, and that border no real endpoint, lasts until the next real endpoint —
    the earliest real endpoint of the later ranges, which each range's notice sends to every
    earlier range (a shuffle of the output-sized rows, by the range they are for)."""
    notice = F.col(_INDEX) == _NOTICE_AT
    earlier = F.when(F.col(PART) > 0, F.sequence(F.lit(0), F.col(PART) - F.lit(1)))
    targets = F.when(notice, earlier).otherwise(F.array(F.col(PART)))
    sent = intervals.filter(F.col(_IS_INTERVAL) | notice).select("*", F.explode(targets).alias(_TARGET))
    beyond = F.min(F.when(notice, F.col(_NOTICE_OF))).over(Window.partitionBy(_TARGET))
    joined = sent.select("*", beyond.alias(_BEYOND)).filter(F.col(_IS_INTERVAL))
    return joined.select(
        "*", F.when(F.col(_NEXT_REAL), F.col(_NEXT_TIME)).otherwise(F.col(_BEYOND)["time"]).alias(_UNTIL),
        F.when(F.col(_NEXT_REAL), F.col(_NEXT_STABLE)).otherwise(~F.col(_BEYOND)["unstable"]).alias(_UNTIL_STABLE))


def _closed(cti: int | None) -> Column:
    """The interval is stable once the CTI passes its end, or reaches it when the boundary there is."""
    if cti is None:
        return F.lit(False)
    if cti == INFINITY_MICROS:
        return F.lit(True)
    until = F.col(_UNTIL)
    return (until < F.lit(cti)) | ((until == F.lit(cti)) & F.col(_UNTIL_STABLE))


def _head(cti: int | None) -> Column:
    """The interval's start and payload are stable once the CTI is past its start."""
    if cti is None:
        return F.lit(False)
    return F.col(_TIME) < F.lit(cti)


def _result(i: int, a: Aggregate, types: dict[str, T.DataType]) -> Column:
    """The value of aggregate ``i`` over the interval of an output row."""
    if a.fn == "count":
        return F.col(_ALIVE)
    if a.fn in ("min", "max"):
        return F.col(_extreme_name(i))
    if a.fn == "user":
        members = F.transform(F.col(_MEMBERS), lambda m: F.struct(
            F.col(_TIME).alias("s"), F.col(_UNTIL).alias("e"), m[f"v{i}"].alias("v")))
        return fold_user_aggregate(a, members)
    if a.fn == MEMBERS:
        return F.transform(F.col(_MEMBERS), lambda m: m[f"v{i}"])
    present = F.col(_present(i) if a.arg is not None and a.arg.type.nullable else _ALIVE)
    dtype = types[value_name(i)]
    total = F.col(_total(i))
    if isinstance(dtype, T.DoubleType):
        nan, up, down = (F.col(_special(i, w)) for w in ("nan", "up", "down"))
        total = (F.when((nan > 0) | ((up > 0) & (down > 0)), F.lit(float("nan")))
                 .when(up > 0, F.lit(float("inf"))).when(down > 0, F.lit(float("-inf"))).otherwise(total))
    if a.fn == "sum":
        return F.when(present > 0, total).cast(dtype)
    if a.fn == "avg":
        # the divisor is null, not zero, when all values are null: ANSI mode fails a division by zero
        return total.cast("double") / F.when(present > 0, present).cast("double")
    raise ValueError(f"unknown aggregate {a.fn!r}")
