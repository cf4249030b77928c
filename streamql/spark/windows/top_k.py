"""Top-k per window on Spark (docs/top-k.md): the semantics are ``streamql.reference.windows.ranked``.

Every window kind already gathers its windows' members in one place for user-defined aggregates;
``top_k`` rides on that gathering. Each event becomes one *member* value,
``struct(f, b, p)``: ``b`` the event's ``by`` value, ``p`` the payload fields the ``select`` reads,
and ``f`` a flag that puts null ``b`` values last — so that the struct order (Spark's, for
``sort_array``) is the rank order: descending, ``f = b is not null`` sorted descending; ascending,
``f = b is null`` sorted ascending. The windows are formed with the internal aggregate
``MEMBERS`` (the array of a window's member values), and then, per window, natively:

1. sort the members (``sort_array``);
2. keep the first ``k`` and those that tie with the ``k``-th (ties are next to it once sorted);
3. a kept member's rank is the first position of its ``(f, b)`` in the sorted order
   (``array_position``: one plus the number of members before it with another ``(f, b)``, all of
   which rank strictly before it); it scans at most ``k`` positions;
4. explode the kept members into output rows with the window's lifetime and stability.

No Python runs: sorting a window costs ``n log n`` comparisons of its members, the rest ``k`` per
kept member.

>>> compile_node(TopK(source, HoppingWindow(60, 60), None, 3, by, True, projection), env)  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from streamql.expr.nodes import Aggregate, Rank
from streamql.payload import Kind, ValueType
from streamql.query import windows
from streamql.spark.base.aggregates import MEMBERS, result_name, value_name
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.base.expressions import compile_expr, construct_columns
from streamql.spark.operators.flow import LIFETIME, Flow, by_name, compile_node, no_floor
from streamql.spark.windows.grouping import formed_windows, window_rows

#: a window's members in rank order; their ``(f, b)`` order keys; one kept member with its rank
SORTED, ORDER, KEPT = "_sq_sorted", "_sq_order", "_sq_kept"
#: the largest array index Spark has (arrays hold fewer elements)
_MAX_INDEX = 2**31 - 2


def read_fields(node: windows.TopK) -> list[str]:
    """The payload fields ``select`` reads, in payload order (at least one: a struct needs a field)."""
    read: set[str] = set()

    def record(index: int, name: str) -> Column:
        read.add(name)
        return F.col(name)

    compile_expr(node.projection, record, {Rank(ValueType(Kind.INT)): F.lit(0)})
    names = [f.name for f in node.source.schema.fields]
    return [n for n in names if n in read] or names[:1]


def member(node: windows.TopK, fields: list[str]) -> Column:
    """An event's member value ``struct(f, b, p)`` (the module's text)."""
    b = compile_expr(node.by, by_name)
    flag = b.isNotNull() if node.descending else b.isNull()
    return F.struct(flag.alias("f"), b.alias("b"), F.struct(*[F.col(n) for n in fields]).alias("p"))


def order_key(x: Column) -> Column:
    return F.struct(x["f"].alias("f"), x["b"].alias("b"))


@compile_node.register
def _top_k(node: windows.TopK, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    rows, keys = window_rows(node, source)
    fields = read_fields(node)
    frame = rows.select(*LIFETIME, *keys, member(node, fields).alias(value_name(0)))
    # a marker for the window kinds: gather value_name(0) per window (its arg only says it has one)
    members = Aggregate(ValueType(Kind.INT), MEMBERS, node.by)
    formed, cti, finite, groups = formed_windows(node, source, frame, keys, [members])
    ordered = formed.select(START, END, CLOSED, HEAD, *source.keys,
                            F.sort_array(F.col(result_name(0)), asc=not node.descending).alias(SORTED))
    ordered = ordered.select("*", F.transform(F.col(SORTED), order_key).alias(ORDER))
    k = min(node.k, _MAX_INDEX + 1)
    kth = F.get(F.col(SORTED), k - 1)  # null when the window has fewer members

    def kept(x: Column, i: Column) -> Column:
        # sorted, the members tying with the k-th follow it; a short window keeps everything
        return (i < F.lit(k)) | ((x["f"] == kth["f"]) & x["b"].eqNullSafe(kth["b"]))

    def ranked(x: Column) -> Column:
        # array_position by name: F.array_position takes a Column value from Spark 4.0 only
        return F.struct(x["p"].alias("p"), F.call_function("array_position", F.col(ORDER), order_key(x)).alias("rank"))

    exploded = ordered.select(START, END, CLOSED, HEAD, *source.keys,
                              F.explode(F.transform(F.filter(F.col(SORTED), kept), ranked)).alias(KEPT))
    payload = construct_columns(node.projection, lambda index, name: F.col(KEPT)["p"][name],
                                {Rank(ValueType(Kind.INT)): F.col(KEPT)["rank"]})
    # an output event has no floor of its own: the stream's CTI bounds its unstable end (as a window's)
    out = exploded.select(START, END, CLOSED, HEAD, no_floor(), *source.keys, *[c.alias(n) for n, c in payload])
    return Flow(out, cti, finite, source.keys, source.reached, groups, reached_by=source.reached_by)
