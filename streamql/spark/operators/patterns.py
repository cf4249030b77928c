"""``followed_by`` and ``not_followed_by`` on Spark (docs/architecture.md#rules-of-execution-on-spark): the
semantics are ``streamql.reference.patterns``, row for row and flag for flag.

A left event's partners are the right events for which ``on`` holds that start in
``(start, start + within)`` (``within`` absent: any time after the start).

**The earliest partner per key, no pairs.** When ``on`` is equality keys (``joins.equality_keys``)
and conditions of one payload alone (``as_of.split_on``) — the pattern one writes by hand with a
``lead`` over the key's order — each side's events are flagged by their own conditions and put in
one frame: the two sides stacked, or, for a stream followed by itself (``_same_stream``), the input
alone, each row a left and a right event at once. The frame is windowed per key (the group keys of
enclosing ``group_apply``s, null-safe, and the equality keys, never null for an eligible event) and
ordered by start *descending*: one shuffle and one sort. A RANGE frame from the first row to the
rows one tick later than a row holds the rows that start strictly after it (not those at its own
start, which a ROWS frame would count), and grows incrementally (``_later``). Then

- ``followed_by`` (default mode): a first window gathers the right rows at each start (a RANGE
  frame of the row's own start), a second one on the same window — Spark neither shuffles nor
  sorts again — takes, over ``_later``, the gathered rows of the earliest start that has any: the
  tie of earliest partners, each once;
- ``not_followed_by``: the least right start over ``_later``; a left row is absent when there is
  none or it is at or after its start plus ``within``. The left events that cannot have a partner
  (a null key, a failed condition of their own) are absent too: they stay in the frame (one scan
  of the left input), each in a window of its own (``_sq_spread``).

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
the right CTI is at or after ``start + within``. Inside ``group_apply`` after a count or session
window the right CTI is the row's group's (``Flow.row_cti``, the column ``_sq_right_cti``), and the
output gives each group its own CTI (``flow.least_group_ctis``), as the reference, which runs the
sub-query once per group.
"""
from __future__ import annotations

from functools import reduce
from typing import Mapping

import attrs
from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from streamql.expr.nodes import Binary as BinaryExpr
from streamql.expr.nodes import Call, Construct, Expr, GetField, Param, Unary
from streamql.query import patterns
from streamql.spark.base.columns import CLOSED, END, FLOOR, HEAD, START
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.operators.as_of import split_on
from streamql.spark.operators.flow import (LIFETIME, Cti, Flow, by_name, cti_literal, compile_node, horizon,
                                           least_group_ctis, no_floor, shifted)
from streamql.spark.operators.joins import R_CTI, R_HEAD, R_PAYLOAD, R_START, overlapping_pairs, pair_field
from streamql.time import INFINITY_MICROS, shift

# the stacked frame: whether a row is an eligible left / right event, the right event (head and
# payload; a left event's head and fields are top-level columns), a window of its own for an
# ineligible left event (spread), the right rows at a row's start (peers), the earliest right start
# after it and the right rows there
_IS_LEFT, _IS_RIGHT, _RIGHT, _SPREAD, _PEERS, _NEXT, _PARTNER = (
    "_sq_is_left", "_sq_is_right", "_sq_right", "_sq_spread", "_sq_peers", "_sq_next", "_sq_partner")
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


def _same_stream(node: Pattern) -> bool:
    """Whether ``node`` follows a stream by itself with equality keys that read the same expression
    of either event (``a.account == b.account``): then a row is a left and a right event at once,
    and the per-key sort needs no union."""
    keys, _, _, _ = split_on(node.on)
    return node.left == node.right and all(_as_left(right) == left for left, right in keys)


def _as_left(expr: Expr) -> Expr:
    """``expr`` reading the first argument of ``on`` where it reads the second."""
    if isinstance(expr, Param):
        return attrs.evolve(expr, index=0)
    if isinstance(expr, GetField):
        return attrs.evolve(expr, base=_as_left(expr.base))
    if isinstance(expr, Unary):
        return attrs.evolve(expr, operand=_as_left(expr.operand))
    if isinstance(expr, BinaryExpr):
        return attrs.evolve(expr, left=_as_left(expr.left), right=_as_left(expr.right))
    if isinstance(expr, (Call, Construct)):
        return attrs.evolve(expr, args=tuple(_as_left(a) for a in expr.args))
    return expr


def _keyed(node: Pattern, flow: Flow, side: int) -> tuple[DataFrame, Column]:
    """One side's events with their equality keys as columns, and whether each can have a partner
    (or be one: its keys are not null and it passes its side's own conditions of ``on``)."""
    keys, left_only, right_only, _ = split_on(node.on)
    values = [compile_expr(pair[side], by_name).alias(_key(i)) for i, pair in enumerate(keys)]
    frame = flow.frame.select("*", *values)
    eligible = reduce(lambda a, b: a & b, [F.col(_key(i)).isNotNull() for i in range(len(keys))],
                      _all(left_only if side == 0 else right_only))
    return frame, eligible


def _per_key(node: Pattern, flow: Flow) -> list[str]:
    """The columns that make a key of the stacked frame: the group keys, then the equality keys."""
    return [*flow.keys, *[_key(i) for i in range(len(split_on(node.on)[0]))]]


@attrs.frozen
class _Stacked:
    """Both inputs in one frame, one row per event (a left and a right event at once when a stream
    is followed by itself), windowed per key (``per_key``, then ``_sq_spread``) in descending order
    of start. A left event's head and fields are columns under their names; ``right``: a right
    event's (``head`` and ``payload``); ``of_left``: whether a row is a left event (eligible or not)."""

    frame: DataFrame
    per_key: list[str]
    right: Column
    of_left: Column

    def window(self) -> WindowSpec:
        return Window.partitionBy(*self.per_key, _SPREAD).orderBy(F.col(START).desc())


def _stacked(node: Pattern, left: Flow, right: Flow, *, every_left: bool) -> _Stacked:
    """The stacked frame of the eligible left and right events, with the ineligible left events too
    when ``every_left`` (``not_followed_by`` reports them): each of those in a window of its own
    (``_sq_spread`` its start; null for every other row), as a null key would gather them all in one.
    An event starting at ``INFINITY`` has no partner and is none (nothing starts after it), and its
    absence would be at ``INFINITY``: it is left out, so a start plus one never overflows."""
    lfields, rfields = _fields(node, 0), _fields(node, 1)
    per_key = _per_key(node, left)
    finite = F.col(START) < F.lit(INFINITY_MICROS)
    lframe, leligible = _keyed(node, left, 0)
    if _same_stream(node):
        _, religible = _keyed(node, right, 1)
        rows = lframe.select(*per_key, START, HEAD, *lfields, leligible.alias(_IS_LEFT), religible.alias(_IS_RIGHT))
        wanted = F.col(_IS_LEFT) | F.col(_IS_RIGHT)
        rows = rows.filter(finite & (F.lit(True) if every_left else wanted)).withColumn(
            _SPREAD, F.when(~wanted, F.col(START)))
        return _Stacked(rows, per_key, F.struct(F.col(HEAD).alias("head"), F.struct(*rfields).alias("payload")),
                        F.lit(True))
    rframe, religible = _keyed(node, right, 1)
    lrows = lframe.filter(finite & (F.lit(True) if every_left else leligible)).select(
        *per_key, START, HEAD, *lfields, leligible.alias(_IS_LEFT), F.lit(False).alias(_IS_RIGHT),
        F.when(~leligible, F.col(START)).alias(_SPREAD))
    rrows = rframe.filter(finite & religible).select(
        *per_key, START, F.lit(False).alias(_IS_LEFT), F.lit(True).alias(_IS_RIGHT),
        F.lit(None).cast("long").alias(_SPREAD),
        F.struct(F.col(HEAD).alias("head"), F.struct(*rfields).alias("payload")).alias(_RIGHT))
    rows = lrows.unionByName(rrows, allowMissingColumns=True)
    return _Stacked(rows, per_key, F.col(_RIGHT), ~F.col(_IS_RIGHT))


def _later(stacked: _Stacked) -> WindowSpec:
    """Per row, the rows that start after it: in descending order of start, the rows before it
    that start at least one tick later (a RANGE frame: rows at its own start are not among them).
    The frame grows from the first row, which Spark keeps incrementally (a frame to the last row
    would be recomputed per row)."""
    return stacked.window().rangeBetween(Window.unboundedPreceding, -1)


def _stacked_partners(node: patterns.FollowedBy, left: Flow, right: Flow) -> DataFrame:
    """Every left event (its head, keys and payload fields under their names) with each of its
    earliest partners (``_sq_right_start``, ``_sq_right_head``, ``_sq_right_payload``), by the
    stacked sort: a first window gathers the right rows at each start (a RANGE frame of the row's
    own start: its peers), a second one — the same window, so Spark neither shuffles nor sorts
    again — takes the peers of the latest rows before each row that have any (those at the earliest
    right start after it)."""
    stacked = _stacked(node, left, right, every_left=False)
    peers = F.collect_list(F.when(F.col(_IS_RIGHT), stacked.right)).over(stacked.window().rangeBetween(0, 0))
    rows = stacked.frame.select("*", peers.alias(_PEERS))
    there = F.when(F.size(_PEERS) > 0, F.struct(F.col(START).alias("start"), F.col(_PEERS).alias("rows")))
    rows = rows.select("*", F.last(there, ignorenulls=True).over(_later(stacked)).alias(_NEXT))
    close = F.col(f"{_NEXT}.start") < _until(node.within, F.col(START))
    rows = rows.filter(F.col(_IS_LEFT) & close).select(
        HEAD, *left.keys, *_fields(node, 0), F.col(f"{_NEXT}.start").alias(R_START),
        F.explode(f"{_NEXT}.rows").alias(_PARTNER))
    return rows.select(HEAD, *left.keys, *_fields(node, 0), R_START,
                       F.col(f"{_PARTNER}.head").alias(R_HEAD), F.col(f"{_PARTNER}.payload").alias(R_PAYLOAD))


def _until(within: int | None, start: Column) -> Column:
    """Where a left event's partners must start before (INFINITY: no bound)."""
    return F.lit(INFINITY_MICROS) if within is None else shifted(start, within)


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


def _right_ctis(right: Flow, rows: DataFrame) -> DataFrame:
    """``rows`` (carrying the group keys) with their group's CTI in the right input as
    ``_sq_right_cti`` where the right input's groups' CTIs differ (the pairs carry it already)."""
    return rows if R_CTI in rows.columns else right.with_group_ctis(rows, R_CTI)


def _at_or_before(t: Column, cti: Cti) -> Column:
    """Whether ``t`` is at or before ``cti`` (a stream's CTI or each row's group's; none yet: false)."""
    return F.lit(False) if cti is None else F.coalesce(t <= cti_literal(cti), F.lit(False))


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
        # no earlier partner can still come or change: the right CTI (the row's group's) reached
        # the partner's start
        matches = _right_ctis(right, matches)
        head = head & _at_or_before(F.col(R_START), right.row_cti(R_CTI))
    payload = [c.alias(name) for name, c in construct_columns(node.projection, pair_field)]
    out = matches.select(*_point(F.col(R_START), head, left.keys, payload))
    finite, reached, inputs = horizon([left, right])
    # each group's CTI: the least of its inputs' (join's rule)
    return Flow(out, node.output_cti((left.cti, right.cti)), finite, left.keys, reached,
                least_group_ctis(node, [left, right]), reached_by=inputs)


@compile_node.register
def _not_followed_by(node: patterns.NotFollowedBy, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    assert left.keys == right.keys, "both inputs of a multi-stream operator come from one group"
    fields = _fields(node, 0)
    if _stackable(node):
        # one window: a left row is absent when no right row starts after it before its start plus within
        stacked = _stacked(node, left, right, every_left=True)
        earliest = F.min(F.when(F.col(_IS_RIGHT), F.col(START))).over(_later(stacked))
        rows = stacked.frame.select("*", earliest.alias(_NEXT))
        met = F.col(_IS_LEFT) & (F.col(_NEXT) < _until(node.within, F.col(START)))
        alone = rows.filter(stacked.of_left & ~F.coalesce(met, F.lit(False)))
        absent = alone.select(START, HEAD, *left.keys, *fields)
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
    # no partner can still come or change before the left start plus within: the right CTI (the
    # row's group's) reached it
    absent = _right_ctis(right, absent.filter(at < F.lit(INFINITY_MICROS)))
    head = F.col(HEAD) & _at_or_before(at, right.row_cti(R_CTI))
    out = absent.select(*_point(at, head, left.keys, [F.col(f) for f in fields]))
    # the left CTI moves by within, then the lesser of the two (``NotFollowedBy.output_cti``); per
    # group the same, the left group's CTI moved by within
    finite, reached, inputs = horizon([left, right], (_moved(left.cti, node.within), right.cti),
                                      (_moved(left.finite_cti, node.within), right.finite_cti))
    within = node.within
    lgroups = None if left.group_ctis is None else left.group_ctis.moved(
        lambda c: shifted(c, within), shift(left.group_ctis.default, within))
    groups = least_group_ctis(node, [left, right], [lgroups, right.group_ctis])
    return Flow(out, node.output_cti((left.cti, right.cti)), finite, left.keys, reached, groups, reached_by=inputs)


def _moved(cti: int | None, by: int) -> int | None:
    return None if cti is None else shift(cti, by)
