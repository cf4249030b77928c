"""keep_last, time_batch and length_batch on Spark: the semantics are ``streamql.reference.esper``.

``keep_last(n)`` and ``length_batch(n)`` place every event in the order of its group (the keys of
enclosing ``group_apply``s): start, then payload fields in order (nulls first, NaN greatest — how
Spark sorts them), then end. ``count_window.numbering`` numbers that order (``ORDINAL``): per group,
or, for an ungrouped stream, per range of start times (cut at approximate quantiles; all events of
one start share a range) offset by the counts of the ranges before — never a sort of the whole data
set in one partition. What an event needs from a later one then travels by number:

- ``keep_last``: event ``i`` ends at the start of event ``i + n``. In a group, ``lead(n)`` over the
  numbering's own window finds it (no further shuffle or sort); ungrouped, event ``i + n`` sends a
  *notice* numbered ``i`` and one shuffle by number brings each event and its notice together.
- ``length_batch``: batch ``k`` holds the events numbered ``k*n .. k*n+n-1``. Every event goes to its
  batch, and the last event of each batch also sends a notice to the batch before it: one shuffle
  by (group, batch) gives a batch its size, last start and heads, and the next batch's last start.
  A streaming run that dropped the first events of a group (``streamql.spark.streaming.retention``) numbers
  the rest from the group's *offset*, the count it dropped mod ``n`` (``batch_offsets``).

An end at exactly the CTI is stable when as many events with stable heads start at or before it
as the order needs to reach the event making the end (``reference.esper._reached``): per event,
whether the stable heads after it at its start outnumber or equal the unstable ones up to it
(``HEADS``), read at the event making the end.

``time_batch`` is a projection.

>>> withdrawals.keep_last(5)  # doctest: +SKIP
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from functools import reduce
from types import MappingProxyType
from typing import Iterator, Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streamql.query import esper
from streamql.spark.windows.count import ORDINAL, numbering
from streamql.spark.base.columns import CLOSED, END, HEAD, START
from streamql.spark.operators.flow import Flow, compile_node, shifted
from streamql.time import INFINITY_MICROS

#: whether an end at the event's start, made by it, stays there whatever the unstable heads at that start do
HEADS = "_sq_heads"
#: the start of the event (or batch) that ends an event's lifetime, and its ``HEADS``
_UNTIL, _UNTIL_HEADS = "_sq_until", "_sq_until_heads"
#: notices: whether a row is one, the number it meets its receiver under, what it carries
_IS_NOTICE, _MEET, _SENT = "_sq_is_notice", "_sq_meet", "_sq_sent"
#: a length batch's offset of a group: how many of the group's first source events a streaming run
#: dropped, mod ``n``
DROPPED = "_sq_dropped"
#: the offsets of the length batches whose dropped events a streaming run counts (``batch_offsets``)
_OFFSETS: ContextVar[Mapping[esper.LengthBatch, DataFrame | None]] = ContextVar(
    "streamql_batch_offsets", default=MappingProxyType({}))


@contextmanager
def batch_offsets(offsets: Mapping[esper.LengthBatch, DataFrame | None]) -> Iterator[None]:
    """Within it, every ``length_batch`` node in ``offsets`` numbers each group's events from the
    group's offset: a frame of the source's key columns and ``DROPPED`` (a group missing from it,
    or ``None`` for the frame, counts from 0). A streaming run's step compiles its plan and
    computes its retention floors in it; ``counts_dropped`` tells the retention rule which nodes
    it may drop the first events of.

    >>> with batch_offsets({node: offsets}):  # doctest: +SKIP
    ...     flow = compile_node(query, env)
    """
    token = _OFFSETS.set(MappingProxyType(dict(offsets)))
    try:
        yield
    finally:
        _OFFSETS.reset(token)


def counts_dropped(node: esper.LengthBatch) -> bool:
    """Whether the run counts the events dropped from ``node``'s source (``batch_offsets``)."""
    return node in _OFFSETS.get()


def offsets_of(node: esper.LengthBatch) -> DataFrame | None:
    """``node``'s offsets (``batch_offsets``), None where it has none."""
    return _OFFSETS.get().get(node)


def with_offset(rows: DataFrame, keys: tuple[str, ...], offsets: DataFrame | None) -> DataFrame:
    """``rows`` with their group's offset (``DROPPED``, 0 for a group without one) beside them: a
    broadcast join by the keys (null is a group), or for an ungrouped stream its one value."""
    if offsets is None:
        return rows.withColumn(DROPPED, F.lit(0).cast("long"))
    if not keys:
        only = offsets.first()  # one row at most
        return rows.withColumn(DROPPED, F.lit(0 if only is None else int(only[DROPPED])).cast("long"))
    renamed = offsets.select(*[F.col(k).alias(f"_sq_o_{k}") for k in keys], DROPPED)
    same = reduce(Column.__and__, [F.col(k).eqNullSafe(F.col(f"_sq_o_{k}")) for k in keys])
    joined = rows.join(F.broadcast(renamed), same, "left").drop(*[f"_sq_o_{k}" for k in keys])
    return joined.withColumn(DROPPED, F.coalesce(F.col(DROPPED), F.lit(0)).cast("long"))


def ranked(source: Flow, fields: list[str]) -> tuple[DataFrame, list[Column]]:
    """The events of ``source`` numbered (``ORDINAL``) in the order of each group of its keys —
    start, payload ``fields`` (nulls first, NaN greatest), end — with their ``HEADS``; and that
    order as sort columns."""
    # the input's own end stability never matters: its lifetime is replaced
    frame = source.frame.select(START, END, HEAD, *source.keys, *fields)
    # the head last: rows tied on everything else then agree on HEADS however the tie is broken
    ties = [*[F.col(f).asc_nulls_first() for f in fields], F.col(END).asc(), F.col(HEAD).desc()]
    numbered, partition = numbering(frame, source.keys, ties, source.starts)
    order = [F.col(START).asc(), *ties]
    # An end at the CTI t, made by the i-th event of the order, stays at t while at least i events
    # with stable heads start at or before t (reference.esper._reached). Every event before t has
    # one, so: the events at t after the maker with stable heads are at least as many as those at t
    # up to it without. The numbering's partition (the keys or the range) holds all events of a
    # start, in order: the window by start within it adds no shuffle
    at_start = Window.partitionBy(*partition, START).orderBy(*order)
    so_far = at_start.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    after = at_start.rowsBetween(1, Window.unboundedFollowing)
    unstable_so_far = F.count(F.when(~F.col(HEAD), F.lit(1))).over(so_far)
    stable_after = F.coalesce(F.count(F.when(F.col(HEAD), F.lit(1))).over(after), F.lit(0))
    heads = stable_after >= unstable_so_far
    ranked = numbered.select(START, END, HEAD, *source.keys, *fields, ORDINAL, heads.alias(HEADS))
    return ranked, order


def _with_notices(rows: DataFrame, keys: tuple[str, ...], own: Column, notice: Column, sends: Column | None) -> DataFrame:
    """``rows`` under their ``own`` number (``_MEET``) and, for the rows that ``sends``, a notice
    under the ``notice`` number carrying their start and ``HEADS`` (``_SENT``), with no other
    values: partitioned by the keys and ``_MEET``, a row meets the notices sent to it."""
    twice = F.array(F.lit(False), F.lit(True)) if sends is None else \
        F.when(sends, F.array(F.lit(False), F.lit(True))).otherwise(F.array(F.lit(False)))
    both = rows.select("*", F.explode(twice).alias(_IS_NOTICE))
    is_notice = F.col(_IS_NOTICE)
    carried = [F.when(~is_notice, F.col(c)).alias(c) for c in rows.columns if c not in keys]
    return both.select(*keys, *carried, _IS_NOTICE, F.when(is_notice, notice).otherwise(own).alias(_MEET),
                       F.when(is_notice, F.struct(F.col(START).alias("start"), F.col(HEADS).alias("heads")))
                       .alias(_SENT))


def _reached(until: Column, until_heads: Column, cti: Column) -> Column:
    """Whether an end at ``until`` (made by an event with ``until_heads``) is final given a finite
    CTI: it passes the CTI, or reaches it and is made by stable heads (null for no end)."""
    return (until < cti) | ((until == cti) & until_heads)


def _flags(head: Column, start: Column, until: Column, until_heads: Column,
           cti: int | None | Column) -> tuple[Column, Column]:
    """(closed, head) of an output event starting at ``start`` whose inputs' heads are ``head``
    and which ends at ``until`` (null: never, so far). ``cti``: the stream's, or each row's
    group's (``Flow.cti_column``: finite)."""
    if cti is None:
        return F.lit(False), F.lit(False)
    if isinstance(cti, int) and cti == INFINITY_MICROS:
        return F.lit(True), F.lit(True)
    cti = F.lit(cti) if isinstance(cti, int) else cti
    stable_head = head & (start < cti)
    closed = stable_head & until.isNotNull() & F.coalesce(_reached(until, until_heads, cti), F.lit(False))
    return closed, stable_head


def _cti_of(source: Flow) -> int | None | Column:
    """The CTI the flags read: each row's group's inside ``group_apply`` after a count or session
    window (``source.with_group_ctis`` joined it), else the stream's."""
    column = source.cti_column()
    return source.cti if column is None else column


def _fields(node: esper.KeepLast | esper.LengthBatch | esper.TimeBatch) -> list[str]:
    return [f.name for f in node.schema.fields]


@compile_node.register
def _keep_last(node: esper.KeepLast, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    keys, fields, n = source.keys, _fields(node), node.n
    events, order = ranked(source, fields)
    if keys:
        # the numbering's window: rows already partitioned by the keys and sorted in order
        later = Window.partitionBy(*keys).orderBy(*order)
        looked = events.select("*", F.lead(START, n).over(later).alias(_UNTIL),
                               F.lead(HEADS, n).over(later).alias(_UNTIL_HEADS))
    else:
        met = _with_notices(events, keys, F.col(ORDINAL), F.col(ORDINAL) - F.lit(n), None)
        sent = F.max(F.col(_SENT)).over(Window.partitionBy(_MEET))  # at most one notice per number
        looked = met.select("*", sent["start"].alias(_UNTIL), sent["heads"].alias(_UNTIL_HEADS)).filter(
            ~F.col(_IS_NOTICE))
    until = F.col(_UNTIL)
    looked = source.with_group_ctis(looked)
    closed, head = _flags(F.col(HEAD), F.col(START), until, F.col(_UNTIL_HEADS), _cti_of(source))
    end = F.coalesce(until, F.lit(INFINITY_MICROS))
    # n later events starting with it leave the event an empty lifetime: it is removed
    out = looked.filter(end > F.col(START)).select(START, end.alias(END), closed.alias(CLOSED), head.alias(HEAD),
                                                   *keys, *fields)
    return source.derived(node, out)


@compile_node.register
def _length_batch(node: esper.LengthBatch, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    keys, fields, n = source.keys, _fields(node), node.n
    events, _ = ranked(source, fields)
    if counts_dropped(node):
        # a streaming run dropped the first events of each group: the others keep their numbers
        events = with_offset(events, keys, offsets_of(node))
        events = events.withColumn(ORDINAL, F.col(ORDINAL) + F.col(DROPPED)).drop(DROPPED)
    batch = F.expr(f"{ORDINAL} div {n}")
    is_last = F.col(ORDINAL) % F.lit(n) == F.lit(n - 1)
    # the last event of batch k + 1 exists only when that batch is full: its notice ends batch k
    met = _with_notices(events, keys, batch, batch - F.lit(1), is_last)
    in_batch, own = Window.partitionBy(*keys, _MEET), ~F.col(_IS_NOTICE)
    batches = met.select(
        "*", F.count(F.when(own, F.lit(1))).over(in_batch).alias("_sq_size"),
        F.max(F.when(own, F.col(START))).over(in_batch).alias("_sq_last"),
        F.min(F.when(own, F.col(HEAD))).over(in_batch).alias("_sq_all_heads"),
        F.max(F.col(_SENT)).over(in_batch).alias("_sq_next"))
    # a batch that never fills is not output
    full = source.with_group_ctis(batches.filter(own & (F.col("_sq_size") == F.lit(n))))
    start, until = F.col("_sq_last"), F.col("_sq_next")["start"]
    closed, head = _flags(F.col("_sq_all_heads"), start, until, F.col("_sq_next")["heads"], _cti_of(source))
    end = F.coalesce(until, F.lit(INFINITY_MICROS))
    # the next batch filling at the same instant leaves this one an empty lifetime
    out = full.filter(end > start).select(start.alias(START), end.alias(END), closed.alias(CLOSED),
                                          head.alias(HEAD), *keys, *fields)
    return source.derived(node, out)


@compile_node.register
def _time_batch(node: esper.TimeBatch, env: Mapping[str, Flow]) -> Flow:
    source = compile_node(node.source, env)
    size = node.size
    # an event starting at INFINITY has no batch that ends (and t - pmod(t) + size would overflow)
    frame = source.frame.filter(F.col(START) < F.lit(INFINITY_MICROS))
    batch_start = F.col(START) - F.pmod(F.col(START), F.lit(size))  # floor to a multiple of size
    start = shifted(batch_start, size)
    # the lifetime follows from the start alone: stable once the start and payload are
    out = frame.select(start.alias(START), F.col(HEAD), *source.keys, *_fields(node))
    out = out.filter(F.col(START) < F.lit(INFINITY_MICROS)).select(
        START, shifted(F.col(START), size).alias(END), F.col(HEAD).alias(CLOSED), HEAD, *source.keys, *_fields(node))
    return source.derived(node, out)
