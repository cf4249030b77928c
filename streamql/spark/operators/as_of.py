"""``as_of_join`` and ``to_signal`` on Spark (docs/architecture.md#rules-of-execution-on-spark): the semantics are
``streamql.reference.as_of``, row for row and flag for flag.

**as_of_join: one sort per key, no pairs.** The conjuncts of ``on`` split into equality keys
``a(l) == b(r)`` (``joins.equality_keys``; there is at least one), conditions of the left payload
alone, conditions of the right payload alone, and conditions of both. Without conditions of both,
each side is filtered by its own conditions (a left event failing its own has no partner), and
the two sides are stacked into one frame (left rows carry the left event, right rows the right
head and payload) and windowed per key (the group keys of enclosing ``group_apply``s, null-safe, and
the equality keys, never null — SQL's ``=`` never matches null, as the reference's ``is True``):

1. ordered by start, right rows before left rows at one start, a running maximum of the right
   starts gives every left row the latest right start at or before its own (``_sq_as_of``);
2. a second window over (key, that start) — which the first one's partitioning already serves,
   so it adds no shuffle — collects the right rows there: all of a tie, each partner once.

Each left row then becomes one output row per partner. This is the as-of join one writes by hand
over the union of both sides; the stacked frame is shuffled once, by key. A condition of both
payloads makes "the latest *matching* right event" depend on the left event, which a running
maximum cannot carry: then the sides meet by an equi-join on the keys with the right start at
or before the left one (and within reach), the condition filters the pairs, and a window per left
event (all its columns, as ``spark.joins`` identifies one) keeps the pairs at the latest start —
quadratic per key, as every right event of the key up to the left start is a candidate.

**to_signal**: per (group keys, key), ordered by start, ``lead`` finds the next row's start; a row
followed by one at the same start has none, and a window over (key, start) gives every event of a
tie the next start after it. Among the events at that next start the ones with a stable head
order first, so that the ``lead`` also says whether the end is made by a stable start.
"""
from __future__ import annotations

from functools import reduce
from typing import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.expr.nodes import Expr
from streamql.query import as_of
from streamql.query.joins import conjuncts, equality_key, params_read
from streamql.spark.base.columns import CLOSED, END, FLOOR, HEAD, START
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.operators.joins import L_CTI, R_CTI, R_HEAD, R_PAYLOAD, R_START, pair_field
from streamql.spark.operators.flow import (GROUP_CTI, LIFETIME, Flow, by_name, compile_node, cti_literal, end_floor,
                                           horizon, least_group_ctis)
from streamql.time import INFINITY_MICROS

# the stacked frame: a row's time and side (right rows first at one start), the left event, the
# right head and payload, the latest right start up to a left row and the right rows there
_AT, _SIDE, _LEFT, _RIGHT, _AS_OF, _PARTNERS, _PARTNER = (
    "_sq_at", "_sq_side", "_sq_left", "_sq_right", "_sq_as_of", "_sq_partners", "_sq_partner")
_RIGHT_SIDE, _LEFT_SIDE = 0, 1
#: the latest matching right start of a left event (an ``on`` with conditions of both payloads)
_LATEST = "_sq_latest"
#: to_signal: the signal's key, and the next start of the key (with whether its head is stable)
_SIGNAL_KEY, _NEXT = "_sq_signal_key", "_sq_next"


def _key(i: int) -> str:
    return f"_sq_as_of_key{i}"


def _all(conditions: list[Expr]) -> Column:
    """Whether every one of ``conditions`` (of one payload, its fields top-level columns) is true."""
    columns = [F.coalesce(compile_expr(c, by_name), F.lit(False)) for c in conditions]
    return reduce(lambda a, b: a & b, columns, F.lit(True))


def _fields(node: as_of.AsOfJoin, side: int) -> list[str]:
    return [f.name for f in (node.left if side == 0 else node.right).schema.fields]


def split_on(on: Expr) -> tuple[list[tuple[Expr, Expr]], list[Expr], list[Expr], list[Expr]]:
    """``on``'s conjuncts as (equality keys, conditions of the left payload alone, of the right
    payload alone, of both). A condition of neither payload (a constant) counts as the left's.

    >>> split_on(trace(lambda t, q: (t.sym == q.sym) & (q.bid > 0) & (q.bid < t.limit), ...))  # doctest: +SKIP
    ([(t.sym, q.sym)], [], [(q.bid > 0)], [(q.bid < t.limit)])
    """
    keys: list[tuple[Expr, Expr]] = []
    left: list[Expr] = []
    right: list[Expr] = []
    both: list[Expr] = []
    for c in conjuncts(on):
        key = equality_key(c)
        reads = params_read(c)
        if key is not None:
            keys.append(key)
        elif reads <= {0}:
            left.append(c)
        elif reads == {1}:
            right.append(c)
        else:
            both.append(c)
    return keys, left, right, both


def keyed(node: as_of.AsOfJoin, flow: Flow, side: int) -> tuple[DataFrame, list[str]]:
    """The events of one side (0: left, 1: right) that pass that side's own conditions of ``on``,
    with their equality keys as columns (rows with a null key dropped: they match nothing), and
    the names of the columns that make a key (the group keys first).

    >>> frame, keys = keyed(node, compile_node(node.right, env), 1)  # doctest: +SKIP
    >>> keys  # doctest: +SKIP
    ['_sq_as_of_key0']
    """
    keys, left_only, right_only, _ = split_on(node.on)
    values = [compile_expr(pair[side], by_name).alias(_key(i)) for i, pair in enumerate(keys)]
    frame = flow.frame.filter(_all(left_only if side == 0 else right_only)).select("*", *values)
    frame = frame.filter(reduce(lambda a, b: a & b, [F.col(_key(i)).isNotNull() for i in range(len(keys))]))
    return frame, [*flow.keys, *[_key(i) for i in range(len(keys))]]


def _stacked_partners(node: as_of.AsOfJoin, left: Flow, right: Flow) -> DataFrame:
    """Every left event (its columns under their names) with each of its partners (``_sq_as_of``:
    their start; ``_sq_right_head``, ``_sq_right_payload``), by the stacked sort: for an ``on``
    without conditions of both payloads."""
    lfields, rfields = _fields(node, 0), _fields(node, 1)
    group = list(left.keys)
    lframe, per_key = keyed(node, left, 0)
    rframe, _ = keyed(node, right, 1)
    lrows = lframe.select(*per_key, F.col(START).alias(_AT), F.lit(_LEFT_SIDE).alias(_SIDE),
                          F.struct(*LIFETIME, *lfields).alias(_LEFT))
    rrows = rframe.select(*per_key, F.col(START).alias(_AT), F.lit(_RIGHT_SIDE).alias(_SIDE),
                          F.struct(F.col(HEAD).alias("head"), F.struct(*rfields).alias("payload")).alias(_RIGHT))
    both = lrows.unionByName(rrows, allowMissingColumns=True)
    running = Window.partitionBy(*per_key).orderBy(_AT, _SIDE).rowsBetween(Window.unboundedPreceding,
                                                                           Window.currentRow)
    latest = F.max(F.when(F.col(_SIDE) == F.lit(_RIGHT_SIDE), F.col(_AT))).over(running)
    both = both.select("*", latest.alias(_AS_OF))
    # left rows without a partner in reach take no part in the second window
    reach = F.col(_AS_OF).isNotNull()
    if node.within is not None:
        reach = reach & (F.col(_AS_OF) >= F.col(_AT) - F.lit(node.within))
    both = both.filter((F.col(_SIDE) == F.lit(_RIGHT_SIDE)) | reach)
    # the second window's partitioning refines the first's: Spark sorts, it does not shuffle again
    tie = Window.partitionBy(*per_key, _AS_OF)
    both = both.select("*", F.collect_list(_RIGHT).over(tie).alias(_PARTNERS))
    rows = both.filter(F.col(_SIDE) == F.lit(_LEFT_SIDE)).select(
        *group, f"{_LEFT}.*", _AS_OF, F.explode(_PARTNERS).alias(_PARTNER))
    return rows.select(*LIFETIME, *group, *lfields, F.col(_AS_OF), F.col(f"{_PARTNER}.head").alias(R_HEAD),
                       F.col(f"{_PARTNER}.payload").alias(R_PAYLOAD))


def _joined_partners(node: as_of.AsOfJoin, left: Flow, right: Flow) -> DataFrame:
    """``_stacked_partners`` by an equi-join on the keys and a window per left event: for an ``on``
    with conditions of both payloads."""
    both = split_on(node.on)[3]
    lfields, rfields = _fields(node, 0), _fields(node, 1)
    group = list(left.keys)
    lframe, per_key = keyed(node, left, 0)
    rframe, _ = keyed(node, right, 1)
    lframe = lframe.select(*LIFETIME, *lfields, *per_key)
    rkey = [f"_sq_right{k}" for k in per_key]
    rframe = rframe.select(F.col(START).alias(R_START), F.col(HEAD).alias(R_HEAD),
                           *[F.col(k).alias(r) for k, r in zip(per_key, rkey)], F.struct(*rfields).alias(R_PAYLOAD))
    # group keys compare null-safe (null keys are a group); the equality keys are never null
    met = [F.col(k).eqNullSafe(F.col(r)) for k, r in zip(per_key, rkey)]
    met.append(F.col(R_START) <= F.col(START))
    if node.within is not None:
        met.append(F.col(R_START) >= F.col(START) - F.lit(node.within))
    pairs = lframe.join(rframe, reduce(lambda a, b: a & b, met), "inner")
    pairs = pairs.filter(reduce(lambda a, b: a & b, [F.coalesce(compile_expr(c, pair_field), F.lit(False))
                                                     for c in both]))
    # identical left events share a partition: each copy keeps its pairs at the latest start
    identity = [*LIFETIME, *group, *lfields]
    latest = F.max(R_START).over(Window.partitionBy(*identity)).alias(_LATEST)
    pairs = pairs.select("*", latest).filter(F.col(R_START) == F.col(_LATEST))
    return pairs.select(*LIFETIME, *group, *lfields, F.col(R_START).alias(_AS_OF), R_HEAD, R_PAYLOAD)


@compile_node.register
def _as_of_join(node: as_of.AsOfJoin, env: Mapping[str, Flow]) -> Flow:
    left, right = compile_node(node.left, env), compile_node(node.right, env)
    assert left.keys == right.keys, "both inputs of a multi-stream operator come from one group"
    if split_on(node.on)[3]:
        partners = _joined_partners(node, left, right)
    else:
        partners = _stacked_partners(node, left, right)
    # inside group_apply, the CTIs of the left event's group
    partners = right.with_group_ctis(left.with_group_ctis(partners, L_CTI), R_CTI)
    rcti = right.row_cti(R_CTI)
    # the partner is final once no right event can come or change between its start and the left
    # start: the right CTI passed the left start, or the two starts are one
    settled = F.col(_AS_OF) == F.col(START)
    if rcti is not None:
        settled = settled | F.coalesce(F.col(START) < cti_literal(rcti), F.lit(False))
    head = F.col(HEAD) & F.col(R_HEAD) & settled
    closed = head & F.col(CLOSED)
    floor = F.when(~closed, end_floor(left.row_cti(L_CTI)))
    payload = construct_columns(node.projection, pair_field)
    out = partners.select(START, END, closed.alias(CLOSED), head.alias(HEAD), floor.alias(FLOOR), *left.keys,
                          *[c.alias(name) for name, c in payload])
    finite, reached, inputs = horizon([left, right])
    return Flow(out, node.output_cti((left.cti, right.cti)), finite, left.keys, reached,
                least_group_ctis(node, [left, right]), reached_by=inputs)


@compile_node.register
def _to_signal(node: as_of.ToSignal, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    fields = [f.name for f in node.schema.fields]
    # inside group_apply, each row's group's CTI (GROUP_CTI) where the groups' differ
    frame = source.with_group_ctis(source.frame).select("*", compile_expr(node.key, by_name).alias(_SIGNAL_KEY))
    per_key = [*source.keys, _SIGNAL_KEY]
    # stable heads first among equal starts: the lead into a start says whether any there is stable
    ordered = Window.partitionBy(*per_key).orderBy(F.col(START), F.col(HEAD).desc())
    following = F.lead(F.struct(F.col(START).alias("at"), F.col(HEAD).alias("head"))).over(ordered)
    frame = frame.select("*", F.when(following["at"] > F.col(START), following).alias(_NEXT))
    # only the last event of a tie sees the next start: the tie shares it
    frame = frame.select(*[c for c in frame.columns if c != _NEXT],
                         F.max(_NEXT).over(Window.partitionBy(*per_key, START)).alias(_NEXT))
    nxt = F.col(_NEXT)
    end = F.coalesce(nxt["at"], F.lit(INFINITY_MICROS))
    cti = source.cti
    if source.group_ctis is not None:
        # each group's own CTI (finite or INFINITY)
        own = F.col(GROUP_CTI)
        made = nxt.isNotNull() & ((nxt["at"] < own) | ((nxt["at"] == own) & nxt["head"]))
        closed: Column = F.col(HEAD) & F.coalesce((own == F.lit(INFINITY_MICROS)) | made, F.lit(False))
    elif cti is None:
        closed = F.lit(False)
    elif cti == INFINITY_MICROS:
        closed = F.col(HEAD)  # no event can come any more
    else:
        closed = F.col(HEAD) & nxt.isNotNull() & (
            (nxt["at"] < F.lit(cti)) | ((nxt["at"] == F.lit(cti)) & nxt["head"]))
    out = frame.select(F.col(START), end.alias(END), closed.alias(CLOSED), F.col(HEAD),
                       F.lit(None).cast("long").alias(FLOOR), *source.keys, *fields)
    return source.derived(node, out)
