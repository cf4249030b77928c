"""join, anti_join, clip and union on Spark (docs/architecture.md#rules-of-execution-on-spark): the semantics are
``streamql.reference.joins``, row for row and flag for flag.

**Pairs meet by an equi-join, never a cartesian product.** Every pair of overlapping events is
found by one equi-join on the equality keys — the group keys of enclosing ``group_apply``s
(null-safe: all null keys are one group) and the conjuncts ``a == b`` of ``on`` with ``a`` reading
only the left payload and ``b`` only the right one (SQL's ``=`` never matches null, exactly as the
reference's ``is True``) — plus a *time bucket*:

- Buckets come in *levels*: at level ``L`` the timeline is cut at multiples of ``2^(base + L)``
  microseconds (``base`` from the median event duration). An event's *own level* is the least ``L``
  whose buckets are at least as wide as its lifetime, so it overlaps at most two of them: there it
  is *home*. An end that never comes is taken, for bucketing only, at the *horizon*, a time after
  every start of both inputs (every intersection of lifetimes starts before it).
- At each level above its own that the other input uses, an event *probes* the (at most two)
  buckets it overlaps there.
- Two overlapping events meet at the greater of their own levels, where one is home and the other
  home or probing, in every bucket both overlap — and among those in the bucket holding the start
  of their intersection, ``max(start, start')``: that bucket alone keeps the pair (no duplicates).
  A probing event never meets another probing one, so a bucket of long events is not a meeting
  point of every short event of both inputs.

One equi-join on (keys, level, bucket, *meeting*) does it: a right row is home (meeting 0) or a
probe (meeting 1); a left probe meets right homes (0), a left home meets both (it is sent twice).
Each event becomes at most ``2 * (2 + levels)`` rows whatever its length, open events included.
The levels present in each input are read when the plan is built (one small aggregate; two when
an input holds events that never end).

**anti_join and clip** need, per left event, all its matching right events. A left event is
identified by all its columns (lifetime, flags, floor, keys, payload): its pairs and the event
itself go into one window partition — identical left events share it, and each copy gets the same
output, which is what the reference gives them. The pieces of an anti-join are the gaps between
the running maximum of the matches' ends (ordered by start); a clip's cut is their least start.

A right event starting exactly at the left event's end cuts it there too when that end is not
stable but cannot move earlier — it equals the left event's end floor (``operators.end_floor``):
whatever the end becomes, the cut keeps it where it is (``reference.joins._reaches``). For these
two operators such a left event *reaches* one tick past its end, so the pairs hold those right
events as well: a clip takes the least start as before; in an anti-join the right event at the
end opens the last gap itself (its start is the piece's end, its head says whether that end is
made by a stable start), and its end, past the left event's, leaves the left event's own row no
piece.

**Stability and floors** follow the reference flag for flag: a partner is surely alive at ``t``
when ``t`` is its start or before its end floor; a piece's end ``b`` is final when ``b`` is at or
before the right CTI and it is the left event's stable end, or a right event with a stable head
starts there and the left event's end floor is at or after ``b``. An unstable join result's floor
is the least of its partners' end floors; an unstable piece or clipped event's is the least of the
left event's end floor and the right CTI (null if either is unknown).
"""
from __future__ import annotations

from functools import reduce
from typing import Mapping, Sequence

import attrs
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.expr.nodes import Expr
from streamql.query import joins
from streamql.query.joins import equality_keys as equality_keys  # re-exported: the pairs meet on them
from streamql.query.nodes import Node
from streamql.spark.base.columns import FLOOR
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.operators.flow import (LIFETIME, Cti, Flow, compile_node, cti_literal, end_floor, horizon,
                                          least_group_ctis)
from streamql.time import INFINITY_MICROS

# the right event's columns beside the left event's (which keep their names)
R_START, R_END, R_CLOSED, R_HEAD, R_FLOOR, R_PAYLOAD = (
    "_sq_right_start", "_sq_right_end", "_sq_right_closed", "_sq_right_head", "_sq_right_floor", "_sq_right_payload")
#: inside ``group_apply`` after a count or session window: the CTI of the row's group in the left and
#: the right input (``Flow.row_cti``), where that input's groups' CTIs differ
L_CTI, R_CTI = "_sq_left_cti", "_sq_right_cti"
#: how far a left event reaches for its pairs: its end, or one tick past an unstable end at its floor
_REACH = "_sq_reach"
# where a row meets the other input: level, bucket, meeting (0: the right row is home there,
# 1: the right row probes there)
_LEVEL, _BUCKET, _MEETING = "level", "bucket", "meeting"
_LEFT_PLACE, _RIGHT_PLACE = "_sq_left_place", "_sq_right_place"
_HOME, _PROBE = 0, 1
# anti_join and clip: whether a row is the left event itself (1) or one of its pairs (0)
_OWN = "_sq_own"
_COVERED, _LAST, _COPIES, _CUT = "_sq_covered", "_sq_last", "_sq_copies", "_sq_cut"
_PIECE_START, _PIECE_END, _MAKER_HEAD = "_sq_piece_start", "_sq_piece_end", "_sq_maker_head"


def _left_key(i: int) -> str:
    return f"_sq_left_key{i}"


def _right_key(i: int) -> str:
    return f"_sq_right_key{i}"


def _right_group(i: int) -> str:
    return f"_sq_right_group{i}"


def _reads_left(index: int, name: str) -> Column:
    assert index == 0, "a left key reads the left payload only"
    return F.col(name)


def _reads_right(index: int, name: str) -> Column:
    assert index == 1, "a right key reads the right payload only"
    return F.col(name)


def pair_field(index: int, name: str) -> Column:
    """In a row of a pair: the left payload's fields are top-level columns, the right payload's
    are fields of ``_sq_right_payload``."""
    return F.col(name) if index == 0 else F.col(R_PAYLOAD).getField(name)


# --- time buckets ----------------------------------------------------------------------------

@attrs.frozen
class TimeBuckets:
    """How one operator buckets the lifetimes of its two inputs (read from the data when the plan
    is built; any values give the same pairs, they only decide how the work is spread).

    >>> TimeBuckets(base=4, horizon=1000, left_levels=(0, 3), right_levels=(0,))  # doctest: +SKIP
    """

    #: level ``L``'s buckets are ``2^(base + L)`` microseconds wide
    base: int
    #: after every start of both inputs: an end that never comes is taken here, for bucketing only
    horizon: int
    left_levels: tuple[int, ...]
    right_levels: tuple[int, ...]


def _ceil_log2(d: Column) -> Column:
    """The least ``c`` with ``2^c >= d`` for a long ``d >= 1``, exactly: the bit length of ``d - 1``."""
    return F.when(d <= F.lit(1), F.lit(0)).otherwise(F.length(F.bin(d - F.lit(1))))


def _bucketing_end(end: Column, horizon: int) -> Column:
    """The end, or the horizon for an end that never comes (for bucketing only)."""
    return F.when(end == F.lit(INFINITY_MICROS), F.lit(horizon)).otherwise(end)


def _own_level(start: Column, end: Column, buckets: TimeBuckets) -> Column:
    """The least level whose buckets are at least as wide as the (bucketing) lifetime."""
    span = _bucketing_end(end, buckets.horizon) - start
    return F.greatest(F.lit(0), _ceil_log2(span) - F.lit(buckets.base))


def time_buckets(left: DataFrame, right: DataFrame) -> TimeBuckets:
    """Reads the base width, the horizon and the levels present from the lifetimes of both inputs
    (``_sq_start``/``_sq_end`` of ``left``, ``_sq_right_start``/``_sq_right_end`` of ``right``):
    one aggregate job, and a second over the events that never end if there are any."""
    side = "_sq_side"
    both = (left.select(F.lit(0).alias(side), F.col(START).alias("s"), F.col(END).alias("e"))
            .unionByName(right.select(F.lit(1).alias(side), F.col(R_START).alias("s"), F.col(R_END).alias("e"))))
    finite = F.col("e") != F.lit(INFINITY_MICROS)
    # null for an open end: INFINITY minus a start may overflow
    exponent = _ceil_log2(F.when(finite, F.col("e") - F.col("s")))
    row = both.agg(
        F.max("s").alias("latest"),
        F.percentile_approx(exponent, 0.5).alias("median"),
        *[F.collect_set(F.when(finite & (F.col(side) == i), exponent)).alias(f"exponents{i}") for i in (0, 1)],
        *[F.max(F.when(~finite & (F.col(side) == i), 1)).alias(f"open{i}") for i in (0, 1)],
    ).first()
    assert row is not None
    base = int(row["median"]) if row["median"] is not None else 0
    horizon = int(row["latest"]) + 1 if row["latest"] is not None else 1
    levels: list[set[int]] = [{max(0, int(c) - base) for c in row[f"exponents{i}"]} for i in (0, 1)]
    if row["open0"] is not None or row["open1"] is not None:
        draft = TimeBuckets(base, horizon, (), ())
        opened = both.filter(~finite).select(side, _own_level(F.col("s"), F.col("e"), draft).alias("level"))
        for r in opened.distinct().collect():
            levels[int(r[side])].add(int(r["level"]))
    return TimeBuckets(base, horizon, tuple(sorted(levels[0])), tuple(sorted(levels[1])))


def meeting_places(start: Column, end: Column, buckets: TimeBuckets, other_levels: Sequence[int],
            home_meetings: Sequence[int], probe_meeting: int) -> Column:
    """Where an event meets the other input, as an array of ``struct(level, bucket, meeting)``:
    home in the (at most two) buckets of its own level, once per meeting of ``home_meetings``, and
    probing at every level of ``other_levels`` above its own (meeting ``probe_meeting``).

    >>> frame.select(F.explode(meeting_places(F.col("_sq_start"), F.col("_sq_end"), buckets,
    ...                                       buckets.right_levels, (0, 1), 0)))  # doctest: +SKIP
    """
    last = _bucketing_end(end, buckets.horizon) - F.lit(1)
    own = _own_level(start, end, buckets)

    def at(level: Column, meeting: int) -> Column:
        width = F.lit(buckets.base) + level
        # a shift right by a power of two floors, negative times included, with no rounding
        spans = F.array_distinct(F.array(F.call_function("shiftright", start, width),
                                         F.call_function("shiftright", last, width)))
        return F.transform(spans, lambda b: F.struct(level.alias(_LEVEL), b.alias(_BUCKET),
                                                     F.lit(meeting).alias(_MEETING)))

    levels = (F.array(*[F.lit(level) for level in other_levels]) if other_levels
              else F.array().cast("array<int>"))
    probes = F.flatten(F.transform(F.filter(levels, lambda level: level > own), lambda level: at(level, probe_meeting)))
    return F.concat(*[at(own, m) for m in home_meetings], probes)


def overlapping_pairs(left: Flow, right: Flow, fields_left: Sequence[str], fields_right: Sequence[str],
                      on: Expr | None, *, right_starts_only: bool = False, to_unstable_end: bool = False) -> DataFrame:
    """Every pair of a left and a right event whose lifetimes overlap and for which ``on`` holds.

    A row holds the left event's columns under their names (lifetime, flags, floor, keys, payload
    fields) and the right event's as ``_sq_right_start``, ``_sq_right_end``, ``_sq_right_closed``,
    ``_sq_right_head``, ``_sq_right_floor`` and the struct ``_sq_right_payload`` (of the fields
    ``fields_right``), and the pair's group's CTI in either input (``_sq_left_cti``,
    ``_sq_right_cti``) where that input's groups' CTIs differ (``side_ctis``). With
    ``right_starts_only`` a right event stands for its start alone, ``[start, start + 1)``: pairs
    whose left lifetime holds that start. With ``to_unstable_end`` a left event whose end is not
    stable and equals its end floor reaches one tick past it: the right events starting exactly at
    that end pair with it too (they cut it there, ``reference.joins._reaches``).
    """
    assert left.keys == right.keys, "both inputs of a multi-stream operator come from one group"
    keys = equality_keys(on)
    reach = F.col(END)
    if to_unstable_end:
        # INFINITY has no tick after it (and no right event starts there)
        at_floor = (~F.col(CLOSED) & (end_floor(left.row_cti(L_CTI)) == F.col(END))
                    & (F.col(END) < F.lit(INFINITY_MICROS)))
        reach = F.when(at_floor, F.col(END) + F.lit(1)).otherwise(F.col(END))
    lctis, rctis = side_ctis(left, right)
    lframe = left.with_group_ctis(left.frame, L_CTI).select(
        *LIFETIME, *left.keys, *fields_left, *lctis, reach.alias(_REACH),
        *[compile_expr(a, _reads_left).alias(_left_key(i)) for i, (a, _) in enumerate(keys)])
    rend = F.col(START) + F.lit(1) if right_starts_only else F.col(END)
    rframe = right.with_group_ctis(right.frame, R_CTI).select(
        F.col(START).alias(R_START), rend.alias(R_END), F.col(CLOSED).alias(R_CLOSED), F.col(HEAD).alias(R_HEAD),
        F.col(FLOOR).alias(R_FLOOR), *rctis,
        *[F.col(k).alias(_right_group(i)) for i, k in enumerate(right.keys)],
        *[compile_expr(b, _reads_right).alias(_right_key(i)) for i, (_, b) in enumerate(keys)],
        F.struct(*fields_right).alias(R_PAYLOAD))
    pair = [*LIFETIME, *left.keys, *fields_left, *lctis, *rctis, R_START, R_END, R_CLOSED, R_HEAD, R_FLOOR, R_PAYLOAD]
    group_keys = [F.col(k).eqNullSafe(F.col(_right_group(i))) for i, k in enumerate(left.keys)]
    value_keys = [F.col(_left_key(i)) == F.col(_right_key(i)) for i in range(len(keys))]
    overlap = (F.col(START) < F.col(R_END)) & (F.col(R_START) < F.col(_REACH))
    if value_keys:
        # the keys of ``on`` spread the pairs: an equi-join on them and the overlap as its filter,
        # as one writes it by hand (time buckets would only add rows and a pass to size them)
        met = lframe.join(rframe, reduce(lambda a, b: a & b, group_keys + value_keys) & overlap, "inner")
        kept = F.lit(True) if on is None else F.coalesce(compile_expr(on, pair_field), F.lit(False))
        return met.filter(kept).select(*pair)
    # the left events are bucketed by their reach
    buckets = time_buckets(lframe.select(START, F.col(_REACH).alias(END)), rframe)

    # a left home meets right homes and right probes; a left probe meets right homes only
    lplaces = meeting_places(F.col(START), F.col(_REACH), buckets, buckets.right_levels, (_HOME, _PROBE), _HOME)
    rplaces = meeting_places(F.col(R_START), F.col(R_END), buckets, buckets.left_levels, (_HOME,), _PROBE)
    lplaced = lframe.select("*", F.explode(lplaces).alias(_LEFT_PLACE))
    rplaced = rframe.select("*", F.explode(rplaces).alias(_RIGHT_PLACE))
    lplace, rplace = F.col(_LEFT_PLACE), F.col(_RIGHT_PLACE)
    # group keys compare null-safe (null keys are a group)
    conditions = [lplace[f] == rplace[f] for f in (_LEVEL, _BUCKET, _MEETING)] + group_keys
    met = lplaced.join(rplaced, reduce(lambda a, b: a & b, conditions), "inner")

    meets = F.greatest(F.col(START), F.col(R_START))
    level = lplace[_LEVEL]
    # one bucket keeps the pair: the one holding the start of the intersection
    kept = (lplace[_BUCKET] == F.call_function("shiftright", meets, F.lit(buckets.base) + level)) & (
        meets < F.least(F.col(_REACH), F.col(R_END)))
    if on is not None:
        kept = kept & F.coalesce(compile_expr(on, pair_field), F.lit(False))
    return met.filter(kept).select(*pair)


def side_ctis(left: Flow, right: Flow) -> tuple[list[str], list[str]]:
    """The columns of each row's group's CTI in the left and the right input that the rows of a
    two-input operator carry: ``_sq_left_cti`` where the left input's groups' CTIs differ (after a
    count or session window inside ``group_apply``), ``_sq_right_cti`` where the right one's do."""
    return ([] if left.group_ctis is None else [L_CTI]), ([] if right.group_ctis is None else [R_CTI])


# --- stability (streamql.reference.joins) --------------------------------------------------------

def _before(t: Column, cti: Cti) -> Column:
    return F.lit(False) if cti is None else F.coalesce(t < cti_literal(cti), F.lit(False))


def _alive_at(start: Column, floor: Column, t: Column) -> Column:
    """Whether an event (with a stable head) is certain to be alive at ``t``, a time inside its
    lifetime: ``t`` is its start, or its end, whatever it becomes, is after ``t`` (``floor``: its
    ``operators.end_floor``)."""
    return (t == start) | (floor.isNotNull() & (t < floor))


def _least(*times: Column) -> Column:
    """The least of ``times``, or null if any is unknown (``least`` alone would skip the nulls)."""
    unknown = reduce(lambda a, b: a | b, [t.isNull() for t in times])
    return F.when(~unknown, F.least(*times)).cast("long")


def _boundary_final(b: Column, maker_head: Column, left_floor: Column, right_cti: Cti) -> Column:
    """Whether the end ``b`` of a piece of the left event is final (the reference's
    ``_boundary_final``): no right event can still start before it (``b`` is at or before the right
    CTI), and it cannot move later: it is the left event's stable end, or a right event with a
    stable start and payload starts at ``b`` (``maker_head``; false when none does) and the left
    event surely lasts until ``b`` (``left_floor``: its ``operators.end_floor``)."""
    if right_cti is None:
        return F.lit(False)
    own_end = (b == F.col(END)) & F.col(CLOSED)
    made = maker_head & left_floor.isNotNull() & (b <= left_floor)
    return F.coalesce(b <= cti_literal(right_cti), F.lit(False)) & (own_end | made)


def _binary_flow(node: joins.Binary | joins.Union, sources: Sequence[Flow], frame: DataFrame) -> Flow:
    """``frame`` with the least of the sources' CTIs, its greatest finite CTI (``joins.greatest_finite_cti``)
    and, inside ``group_apply``, each group's own: the least of the sources' for the group."""
    finite, reached, inputs = horizon(sources)
    return Flow(frame, node.output_cti(tuple(s.cti for s in sources)), finite, sources[0].keys, reached,
                least_group_ctis(node, sources), reached_by=inputs)


def _fields(node: Node) -> list[str]:
    return [f.name for f in node.schema.fields]


# --- the operators -------------------------------------------------------------------------------

@compile_node.register
def _join(node: joins.Join, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    pairs = overlapping_pairs(left, right, _fields(node.left), _fields(node.right), node.on)
    start, end = F.greatest(F.col(START), F.col(R_START)), F.least(F.col(END), F.col(R_END))
    lstart, lend, lclosed = F.col(START), F.col(END), F.col(CLOSED)
    rstart, rend, rclosed = F.col(R_START), F.col(R_END), F.col(R_CLOSED)
    # each partner's own stream's CTI bounds its unstable end: inside group_apply its group's
    lfloor = end_floor(left.row_cti(L_CTI))
    rfloor = end_floor(right.row_cti(R_CTI), rclosed, rend, F.col(R_FLOOR))
    # the pair exists for good once both heads are stable and both partners surely reach its start
    head = (F.col(HEAD) & F.col(R_HEAD) & _alive_at(lstart, lfloor, start) & _alive_at(rstart, rfloor, start))
    # the end is the lesser end: final when both are, or when one is final and the other surely
    # lasts until it
    closed = head & ((lclosed & rclosed)
                     | (lclosed & _alive_at(rstart, rfloor, lend - F.lit(1)) & (lend <= rend))
                     | (rclosed & _alive_at(lstart, lfloor, rend - F.lit(1)) & (rend <= lend)))
    # an unstable end is the lesser end: at or after the lesser of the partners' floors
    floor = F.when(~closed, _least(lfloor, rfloor))
    payload = construct_columns(node.projection, pair_field)
    out = pairs.select(start.alias(START), end.alias(END), closed.alias(CLOSED), head.alias(HEAD),
                       floor.alias(FLOOR), *left.keys, *[c.alias(name) for name, c in payload])
    return _binary_flow(node, [left, right], out)


def _with_own_rows(left: Flow, right: Flow, pairs: DataFrame, fields: list[str]) -> tuple[DataFrame, list[str]]:
    """The pairs (``_sq_own`` 0) and the left events themselves (``_sq_own`` 1, no right event),
    and the columns that identify a left event (with its group's CTIs, ``side_ctis``: they depend
    on its keys only)."""
    lctis, rctis = side_ctis(left, right)
    identity = [*LIFETIME, *left.keys, *fields, *lctis, *rctis]
    right_columns = [R_START, R_END, R_HEAD]
    rows = pairs.select(*identity, *right_columns, F.lit(0).alias(_OWN))
    types = dict(pairs.dtypes)
    lframe = right.with_group_ctis(left.with_group_ctis(left.frame, L_CTI), R_CTI)
    own = lframe.select(*identity, *[F.lit(None).cast(types[c]).alias(c) for c in right_columns],
                        F.lit(1).alias(_OWN))
    return rows.unionByName(own), identity


@compile_node.register
def _anti_join(node: joins.AntiJoin, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    fields = _fields(node)
    # with the right events at the left event's end that cut it there (the module's docstring)
    pairs = overlapping_pairs(left, right, _fields(node.left), _fields(node.right), node.on, to_unstable_end=True)
    rows, identity = _with_own_rows(left, right, pairs, fields)
    # matches by start, those with a stable head first: the first match at a start makes the gap
    # that ends there, and its head is stable if any such match's is
    event = Window.partitionBy(*identity).orderBy(F.col(R_START).asc_nulls_first(), F.col(R_HEAD).desc())
    before = event.rowsBetween(Window.unboundedPreceding, -1)
    whole = event.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    rows = rows.select("*", F.max(R_END).over(before).alias(_COVERED), F.max(R_END).over(whole).alias(_LAST),
                       F.sum(_OWN).over(whole).cast("int").alias(_COPIES))
    own = F.col(_OWN) == F.lit(1)
    # a match opens a gap from what the matches before it cover up to its start; the left event's
    # own row gives the last piece, from what all matches cover to its end
    covered = F.greatest(F.col(START), F.coalesce(F.col(_COVERED), F.col(START)))
    last = F.greatest(F.col(START), F.coalesce(F.col(_LAST), F.col(START)))
    piece_start = F.when(own, last).otherwise(covered)
    piece_end = F.when(own, F.col(END)).otherwise(F.col(R_START))
    pieces = rows.select(*identity, piece_start.alias(_PIECE_START), piece_end.alias(_PIECE_END),
                         F.when(own, F.lit(False)).otherwise(F.col(R_HEAD)).alias(_MAKER_HEAD),
                         # a gap is found once however many identical left events made the pairs
                         F.when(own, F.lit(1)).otherwise(F.col(_COPIES)).alias(_COPIES))
    pieces = pieces.filter(F.col(_PIECE_START) < F.col(_PIECE_END))
    pieces = pieces.select("*", F.explode(F.array_repeat(F.lit(0), F.col(_COPIES))).alias("_sq_copy"))
    a, b = F.col(_PIECE_START), F.col(_PIECE_END)
    # inside group_apply, the CTIs of the event's group
    lfloor, rcti = end_floor(left.row_cti(L_CTI)), right.row_cti(R_CTI)
    # a piece keeps its start once no later right event can start before it and left surely reaches it
    head = F.col(HEAD) & _before(a, rcti) & _alive_at(F.col(START), lfloor, a)
    closed = head & _boundary_final(b, F.col(_MAKER_HEAD), lfloor, rcti)
    # an end that may still change is cut by a right event starting at or after the right CTI at the earliest
    floor = F.when(~closed, _least(lfloor, cti_literal(rcti)))
    out = pieces.select(a.alias(START), b.alias(END), closed.alias(CLOSED), head.alias(HEAD), floor.alias(FLOOR),
                        *left.keys, *fields)
    return _binary_flow(node, [left, right], out)


@compile_node.register
def _clip(node: joins.Clip, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    fields = _fields(node)
    pairs = overlapping_pairs(left, right, _fields(node.left), _fields(node.right), node.on, right_starts_only=True,
                              to_unstable_end=True)
    # only right events starting strictly after the left event's start cut it (and, at the left
    # event's unstable end, those the module's docstring says)
    pairs = pairs.filter(F.col(R_START) > F.col(START))
    rows, identity = _with_own_rows(left, right, pairs, fields)
    # the least start, stable heads first among equal starts (``false`` orders before ``true``)
    cut = F.min(F.when(F.col(_OWN) == F.lit(0),
                       F.struct(F.col(R_START).alias("at"), (~F.col(R_HEAD)).alias("unstable"))))
    events = rows.select("*", cut.over(Window.partitionBy(*identity)).alias(_CUT)).filter(F.col(_OWN) == F.lit(1))
    end = F.coalesce(F.col(_CUT)["at"], F.col(END))
    maker_head = F.coalesce(~F.col(_CUT)["unstable"], F.lit(False))
    # inside group_apply, the CTIs of the event's group
    lfloor, rcti = end_floor(left.row_cti(L_CTI)), right.row_cti(R_CTI)
    closed = F.col(HEAD) & _boundary_final(end, maker_head, lfloor, rcti)
    floor = F.when(~closed, _least(lfloor, cti_literal(rcti)))
    out = events.select(START, end.alias(END), closed.alias(CLOSED), HEAD, floor.alias(FLOOR), *left.keys, *fields)
    return _binary_flow(node, [left, right], out)


def _bounded(source: Flow) -> DataFrame:
    """``source``'s events with the bound of their stream on their open ends made their own
    (``reference.operators.bounded``): its CTI, or inside ``group_apply`` their group's."""
    column = source.cti_column()
    if column is None:
        return source.frame.withColumn(FLOOR, F.when(~F.col(CLOSED), end_floor(source.cti)))
    frame = source.with_group_ctis(source.frame)
    return frame.withColumn(FLOOR, F.when(~F.col(CLOSED), F.greatest(F.col(FLOOR), column)))


@compile_node.register
def _union(node: joins.Union, env: Mapping[str, Flow]) -> Flow:
    sources = [compile_node(s, env) for s in node.inputs]
    fields = _fields(node)
    # an event keeps the bound its own stream proves (reference.operators.bounded), not the union's
    # lesser CTI: derived events (keep_last's, a window's) have no floor of their own
    frames = [_bounded(s).select(*LIFETIME, *s.keys, *fields) for s in sources]
    flow = _binary_flow(node, sources, reduce(lambda a, b: a.unionByName(b), frames))
    # the union's starts are its inputs' together
    sketched = [s.starts for s in sources if s.starts is not None]
    return flow if len(sketched) < len(sources) else attrs.evolve(flow, starts=tuple(u for s in sketched for u in s))
