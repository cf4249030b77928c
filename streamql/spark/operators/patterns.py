"""``followed_by`` and ``not_followed_by`` on Spark (docs/architecture.md#rules-of-execution-on-spark): the
semantics are ``streamql.reference.patterns``, row for row and flag for flag.

A left event's partners are the right events for which ``on`` holds that start in
``(start, start + within)`` (``within`` absent: any time after the start).

**The earliest partner per key, no pairs.** When ``on`` is equality keys (``joins.equality_keys``)
and conditions of one payload alone (``as_of.split_on``) — the pattern one writes by hand with a
``lead`` over the key's order — each side is filtered by its own conditions and the two are stacked
into one frame, windowed per key (the group keys of enclosing ``group_apply``s, null-safe, and the
equality keys, never null) and ordered by start *descending*, left rows before right rows at one
start: a running minimum of the right starts over the rows before a left row is the earliest right
start strictly after it (``_sq_next``; a running frame from the first row, which Spark keeps
incrementally — a frame to the last row would be recomputed per row). Then

- ``followed_by`` (default mode): a right row's ``_sq_next`` is its own start, and a second window
  over (key, ``_sq_next``) — which the first one's partitioning already serves, so it adds no
  shuffle — collects the right rows there: the tie of earliest partners, each once;
- ``not_followed_by``: a left row is absent when ``_sq_next`` is null or at or after its start plus
  ``within``; the left events that cannot have a partner (a null key, a failed condition of their
  own) are absent too.

**Pairs, otherwise.** A condition of both payloads makes "the earliest *matching* partner" depend on
the left event, ``all_matches`` wants every partner, and without an equality key there is no key to
window by: then the pairs come from the temporal join's pair finder (``joins.overlapping_pairs``),
the left event standing for the times its partners may start, ``[start + 1, start + within)``
(to ``INFINITY`` without ``within``), and each right event for its start alone: an equi-join on the
keys, or on time buckets without keys (never one partition). The default mode keeps, per left event
(all its columns, as ``spark.joins`` identifies one: identical left events each keep the same
pairs), the pairs at the least partner start; ``not_followed_by`` keeps the left events with no pair
(a left anti-join). Without ``within`` and without a key every later right event is a candidate:
quadratic, as the definition.

**Stability** (docs/decisions.md, "Patterns (issue 26)"): a match is stable when both heads are and,
in the default mode, its partner starts at or before the right CTI; an absence when the left head is and
the right CTI is at or after ``start + within``.
"""
from __future__ import annotations

from functools import reduce
from typing import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.expr.nodes import Expr
from streamql.query import patterns
from streamql.query.joins import greatest_finite_cti
from streamql.spark.base.columns import CLOSED, END, FLOOR, HEAD, START
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.operators.as_of import split_on
from streamql.spark.operators.flow import LIFETIME, Flow, by_name, compile_node, no_floor, shifted
from streamql.spark.operators.joins import R_HEAD, R_PAYLOAD, R_START, overlapping_pairs, pair_field
from streamql.time import INFINITY_MICROS, shift

# the stacked frame: a row's time and side (left rows first at one start, in descending order),
# the left event, the right head and payload, the earliest right start after a left row, the right
# rows there
_AT, _SIDE, _LEFT, _RIGHT, _NEXT, _PARTNERS, _PARTNER = (
    "_sq_at", "_sq_side", "_sq_left", "_sq_right", "_sq_next", "_sq_partners", "_sq_partner")
_RIGHT_SIDE, _LEFT_SIDE = 0, 1
#: the left event's own lifetime beside the times its partners may start (the pairs' lifetime)
_OWN = ("_sq_own_start", "_sq_own_end", "_sq_own_closed", "_sq_own_floor")
#: the least partner start of a left event (the pairs)
_EARLIEST = "_sq_earliest"

Pattern = patterns.FollowedBy | patterns.NotFollowedBy


def _key(i: int) -> str:
    return f"_sq_pattern_key{i}"


def _fields(node: Pattern, side: int) -> list[str]:
    return [f.name for f in (node.left if side == 0 else node.right).schema.fields]


def _all(conditions: list[Expr]) -> Column:
    """Whether every one of ``conditions`` (of one payload, its fields top-level columns) is true."""
    columns = [F.coalesce(compile_expr(c, by_name), F.lit(False)) for c in conditions]
    return reduce(lambda a, b: a & b, columns, F.lit(True))


def _stackable(node: Pattern) -> bool:
    """Whether the earliest partner can be found per key by one sort: ``on`` has an equality key and
    no condition of both payloads (and, for ``followed_by``, the default mode)."""
    keys, _, _, both = split_on(node.on)
    every = isinstance(node, patterns.FollowedBy) and node.all_matches
    return bool(keys) and not both and not every


def _keyed(node: Pattern, flow: Flow, side: int) -> tuple[DataFrame, Column, list[str]]:
    """One side's events with their equality keys as columns, whether each can have a partner (or
    be one: its keys are not null and it passes its side's own conditions of ``on``), and the
    names of the columns that make a key (the group keys first)."""
    keys, left_only, right_only, _ = split_on(node.on)
    values = [compile_expr(pair[side], by_name).alias(_key(i)) for i, pair in enumerate(keys)]
    frame = flow.frame.select("*", *values)
    eligible = reduce(lambda a, b: a & b, [F.col(_key(i)).isNotNull() for i in range(len(keys))],
                      _all(left_only if side == 0 else right_only))
    return frame, eligible, [*flow.keys, *[_key(i) for i in range(len(keys))]]


def _until(within: int | None, start: Column) -> Column:
    """Where a left event's partners must start before (INFINITY: no bound)."""
    return F.lit(INFINITY_MICROS) if within is None else shifted(start, within)


def _stacked(node: Pattern, left: Flow, right: Flow) -> DataFrame:
    """The stacked frame, with every left row's earliest partner start (``_sq_next``: null when it has
    none, or none before its start plus ``within``) and every right row's own start there."""
    lfields, rfields = _fields(node, 0), _fields(node, 1)
    lframe, leligible, per_key = _keyed(node, left, 0)
    rframe, religible, _ = _keyed(node, right, 1)
    lrows = lframe.filter(leligible).select(*per_key, F.col(START).alias(_AT), F.lit(_LEFT_SIDE).alias(_SIDE),
                                             F.struct(*LIFETIME, *lfields).alias(_LEFT))
    rrows = rframe.filter(religible).select(
        *per_key, F.col(START).alias(_AT), F.lit(_RIGHT_SIDE).alias(_SIDE),
        F.struct(F.col(HEAD).alias("head"), F.struct(*rfields).alias("payload")).alias(_RIGHT))
    both = lrows.unionByName(rrows, allowMissingColumns=True)
    # descending: the rows before a left row are the later ones; left rows first at one start, so
    # a right row at the left row's own start is not among them
    later = Window.partitionBy(*per_key).orderBy(F.col(_AT).desc(), F.col(_SIDE).desc()).rowsBetween(
        Window.unboundedPreceding, -1)
    is_right = F.col(_SIDE) == F.lit(_RIGHT_SIDE)
    # the window computed once, then read twice (an expression using it twice would compute it twice)
    both = both.select("*", F.min(F.when(is_right, F.col(_AT))).over(later).alias(_NEXT))
    earliest = F.col(_NEXT)
    nxt = F.when(is_right, F.col(_AT)).when(earliest < _until(node.within, F.col(_AT)), earliest)
    return both.withColumn(_NEXT, nxt)


def _stacked_partners(node: patterns.FollowedBy, left: Flow, right: Flow) -> DataFrame:
    """Every left event (its head, keys and payload fields under their names) with each of its
    earliest partners (``_sq_right_start``, ``_sq_right_head``, ``_sq_right_payload``), by the
    stacked sort."""
    both = _stacked(node, left, right).filter(F.col(_NEXT).isNotNull())
    per_key = [c for c in both.columns if c not in (_AT, _SIDE, _LEFT, _RIGHT, _NEXT)]
    # the second window's partitioning refines the first's: Spark sorts, it does not shuffle again
    tie = Window.partitionBy(*per_key, _NEXT)
    both = both.select("*", F.collect_list(_RIGHT).over(tie).alias(_PARTNERS))
    rows = both.filter(F.col(_SIDE) == F.lit(_LEFT_SIDE)).select(
        *left.keys, f"{_LEFT}.*", _NEXT, F.explode(_PARTNERS).alias(_PARTNER))
    return rows.select(HEAD, *left.keys, *_fields(node, 0), F.col(_NEXT).alias(R_START),
                       F.col(f"{_PARTNER}.head").alias(R_HEAD), F.col(f"{_PARTNER}.payload").alias(R_PAYLOAD))


def _reaching(node: Pattern, left: Flow) -> Flow:
    """The left events as the times their partners may start, ``[start + 1, start + within)``, each
    with its own lifetime beside it (``_sq_own_*``)."""
    frame = left.frame.select(
        (F.col(START) + F.lit(1)).alias(START), _until(node.within, F.col(START)).alias(END),
        F.lit(True).alias(CLOSED), F.col(HEAD), no_floor(), *left.keys, *_fields(node, 0),
        *[F.col(c).alias(own) for c, own in zip((START, END, CLOSED, FLOOR), _OWN)])
    return Flow(frame, left.cti, left.finite_cti, left.keys, left.reached)


def _pairs(node: Pattern, reaching: Flow, right: Flow) -> DataFrame:
    """Every left event (the columns of ``reaching``) with each of its partners."""
    nonempty = Flow(reaching.frame.filter(F.col(START) < F.col(END)), reaching.cti, reaching.finite_cti,
                    reaching.keys, reaching.reached)
    return overlapping_pairs(nonempty, right, [*_fields(node, 0), *_OWN], _fields(node, 1), node.on,
                             right_starts_only=True)


def _identity(node: Pattern, flow: Flow) -> list[str]:
    """The columns that tell a left event in ``_reaching``'s frame (identical events share them)."""
    return [*LIFETIME, *flow.keys, *_fields(node, 0), *_OWN]


def _point(at: Column, head: Column, keys: tuple[str, ...], payload: list[Column]) -> list[Column]:
    """The columns of a point event at ``at`` (stable once its head is)."""
    return [at.alias(START), shifted(at, 1).alias(END), head.alias(CLOSED), head.alias(HEAD), no_floor(),
            *[F.col(k) for k in keys], *payload]


@compile_node.register
def _followed_by(node: patterns.FollowedBy, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    assert left.keys == right.keys, "both inputs of a multi-stream operator come from one group"
    if _stackable(node):
        matches = _stacked_partners(node, left, right)
    else:
        reaching = _reaching(node, left)
        matches = _pairs(node, reaching, right)
        if not node.all_matches:
            earliest = F.min(R_START).over(Window.partitionBy(*_identity(node, reaching)))
            matches = matches.select("*", earliest.alias(_EARLIEST)).filter(F.col(R_START) == F.col(_EARLIEST))
    head = F.col(HEAD) & F.col(R_HEAD)
    if not node.all_matches:
        # no earlier partner can still come or change: the right CTI reached the partner's start
        head = head & (F.lit(False) if right.cti is None else F.col(R_START) <= F.lit(right.cti))
    payload = [c.alias(name) for name, c in construct_columns(node.projection, pair_field)]
    out = matches.select(*_point(F.col(R_START), head, left.keys, payload))
    ctis = (left.cti, right.cti)
    finite, reached = greatest_finite_cti(ctis, (left.finite_cti, right.finite_cti), (left.reached, right.reached))
    return Flow(out, node.output_cti(ctis), finite, left.keys, reached)


@compile_node.register
def _not_followed_by(node: patterns.NotFollowedBy, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    assert left.keys == right.keys, "both inputs of a multi-stream operator come from one group"
    fields = _fields(node, 0)
    if _stackable(node):
        stacked = _stacked(node, left, right)
        alone = stacked.filter((F.col(_SIDE) == F.lit(_LEFT_SIDE)) & F.col(_NEXT).isNull())
        absent = alone.select(*left.keys, f"{_LEFT}.*").select(F.col(START), F.col(HEAD), *left.keys, *fields)
        # the left events that can have no partner at all (a null key, a condition of their own)
        lframe, eligible, _ = _keyed(node, left, 0)
        absent = absent.unionByName(lframe.filter(~eligible).select(START, HEAD, *left.keys, *fields))
    else:
        reaching = _reaching(node, left)
        identity = _identity(node, reaching)
        # the pairs' copy of the identity under other names: the anti-join compares by name
        partnered = _pairs(node, reaching, right).select(
            *[F.col(c).alias(f"_sq_partnered{i}") for i, c in enumerate(identity)]).distinct()
        same = [F.col(c).eqNullSafe(F.col(f"_sq_partnered{i}")) for i, c in enumerate(identity)]
        alone = reaching.frame.join(partnered, reduce(lambda a, b: a & b, same), "left_anti")
        absent = alone.select(F.col(_OWN[0]).alias(START), F.col(HEAD), *left.keys, *fields)
    at = shifted(F.col(START), node.within)
    # no partner can still come or change before the left start plus within
    head = F.col(HEAD) & (F.lit(False) if right.cti is None else at <= F.lit(right.cti))
    out = absent.filter(at < F.lit(INFINITY_MICROS)).select(*_point(at, head, left.keys, [F.col(f) for f in fields]))
    # the left CTI moves by within, then the lesser of the two (``NotFollowedBy.output_cti``)
    moved = (_moved(left.cti, node.within), right.cti)
    finite, reached = greatest_finite_cti(moved, (_moved(left.finite_cti, node.within), right.finite_cti),
                                          (left.reached, right.reached))
    return Flow(out, node.output_cti((left.cti, right.cti)), finite, left.keys, reached)


def _moved(cti: int | None, by: int) -> int | None:
    return None if cti is None else shift(cti, by)
