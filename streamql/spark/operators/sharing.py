"""Queries compiled together (``Binder.run_many``, ``write_many``): what they share is computed once.

- Sub-queries they share (equal nodes: a common prefix) compile once
  (``operators.compiled_once``): every query gets the very same DataFrame, and plan-time jobs run
  once.
- A stream that several of them read besides through the filter index (below) is cached after
  its first use, when it is an input: the input's rows are read and its scan's decisions applied
  once, not once per query.
- **The filter index** (Esper's answer to many statements over one stream): when several queries
  apply different filters (``where``) to one shared stream, one pass evaluates every predicate and
  tags each event with the predicates it satisfies (an event that several satisfy is copied once
  per predicate, one that none satisfies is gone). Predicates that compare one expression with
  constants (``e.meter == "m1"``, ``e.meter == "m2"``, ...) are one hash lookup per event, not one
  comparison per predicate. The tagged events are cached, sorted by tag within each partition, so
  that each filter reads only its own events: the cache's statistics per batch of rows let it skip
  the rest.
- **Grouped by the index**: queries that are the same chain of one-input operators over different
  filters of one index (``where(meter == m_i)`` then a window, for many ``m_i``) run as one query
  grouped by the tag — the tag is a group key, as ``group_apply``'s — and each takes its own
  group's events. It needs a CTI that the chain computes from the input CTI alone (no count
  window): then every group's CTI is each query's.

Each filter of the index has exactly the events of ``source.filter(predicate)``, and a group of
the grouped chain exactly the events the chain gives over that filter alone, so every query
releases what it releases alone.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import attrs
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamql.expr.nodes import Binary, Expr, Literal
from streamql.payload import Kind
from streamql.query import nodes
from streamql.query.windows import GroupSource
from streamql.spark.base.expressions import compile_expr
from streamql.spark.operators.flow import GROUP, Flow, by_name, compile_node, compiled_as, compiled_once

#: the column of the filter index that holds the number of the ``where`` an event is tagged for
TAG = "_sq_where"


@attrs.define
class Shared:
    """What ``compiled_together`` did: the frames it cached (for the caller to release once the
    queries ran) and, for each query grouped by an index, the flow that holds its events with the
    other queries' of its group (``TAG`` says whose) and its tag."""

    persisted: list[DataFrame] = attrs.field(factory=list)
    grouped: dict[nodes.Node, tuple[Flow, int]] = attrs.field(factory=dict)


@contextmanager
def compiled_together(roots: Sequence[nodes.Node], env: Mapping[str, Flow]) -> Iterator[Shared]:
    """Inside it, ``compile_node(root, env)`` compiles each of ``roots`` with the work they share done
    once (the module's docstring)."""
    with compiled_once():
        shared = Shared()
        persisted = shared.persisted
        groups = _where_groups(roots)
        indexed: set[nodes.Node] = set()
        # a shared stream below another one's index is compiled (indexed) first
        for source, wheres in sorted(groups.items(), key=lambda g: _height(g[0])):
            if len(wheres) < 2:
                continue
            try:
                flow = compile_node(source, env)
            except Exception:  # compiling the queries raises it again, naming them
                continue
            index = _index(source, wheres, flow, env)
            persisted.append(index)
            indexed.add(source)
            _grouped(roots, wheres, flow, index, env, shared)
        for node, readers in _readers(roots, indexed).items():
            if isinstance(node, nodes.Input) and len(readers) > 1 and node.name in env:
                persisted.append(env[node.name].frame.persist(StorageLevel.MEMORY_AND_DISK))
        yield shared


def _index(source: nodes.Node, wheres: list[nodes.Where], flow: Flow, env: Mapping[str, Flow]) -> DataFrame:
    """The filter index of ``wheres`` over ``source`` (compiled to ``flow``): each ``where`` compiles
    to its share of it. Returns the cached index."""
    tagged = flow.frame.select("*", F.explode(_tags(wheres)).alias(TAG))
    index = tagged.sortWithinPartitions(TAG).persist(StorageLevel.MEMORY_AND_DISK)
    for number, where in enumerate(wheres):
        compiled_as(where, env, flow.derived(where, index.filter(F.col(TAG) == F.lit(number)).drop(TAG)))
    return index


def _tags(wheres: list[nodes.Where]) -> Column:
    """The numbers of the ``wheres`` an event satisfies (an array: empty for none)."""
    # expression -> constant value -> (the constant, the wheres comparing the expression with it)
    constants: dict[Expr, dict[Any, tuple[Literal, list[int]]]] = {}
    others: list[Column] = []
    for number, where in enumerate(wheres):
        equality = _equality(where.predicate)
        if equality is None:
            others.append(F.when(F.coalesce(compile_expr(where.predicate, by_name), F.lit(False)), F.lit(number)))
        else:
            compared, constant = equality
            constants.setdefault(compared, {}).setdefault(constant.value, (constant, []))[1].append(number)
    parts = []
    for compared, values in constants.items():
        lookup = F.create_map(*[c for constant, tags in values.values()
                                for c in (compile_expr(constant, by_name), F.array(*[F.lit(t) for t in tags]))])
        # a null value equals no constant: it satisfies none of them
        parts.append(F.coalesce(F.try_element_at(lookup, compile_expr(compared, by_name)),
                                F.array().cast("array<int>")))
    if others:
        parts.append(F.array_compact(F.array(*others)))
    return parts[0] if len(parts) == 1 else F.concat(*parts)


def _equality(predicate: Expr) -> tuple[Expr, Literal] | None:
    """``predicate`` as (expression, constant) when it is ``expression == constant`` over strings or
    integers (whose equality is a hash lookup's), else None."""
    if not isinstance(predicate, Binary) or predicate.op != "==":
        return None
    for compared, constant in ((predicate.left, predicate.right), (predicate.right, predicate.left)):
        if (isinstance(constant, Literal) and not isinstance(compared, Literal) and constant.value is not None
                and constant.type.kind in (Kind.STR, Kind.INT) and compared.type.kind is constant.type.kind):
            return compared, constant
    return None


def _grouped(roots: Sequence[nodes.Node], wheres: list[nodes.Where], flow: Flow, index: DataFrame,
             env: Mapping[str, Flow], shared: Shared) -> None:
    """Sub-queries that are one chain of one-input operators over different ``wheres`` of ``index``
    (over ``flow``) compile as that chain grouped by the tag — the longest such chains that the
    queries read."""
    groups: dict[nodes.Node, set[tuple[nodes.Node, int]]] = {}  # chain -> (sub-query, where's number)
    numbered: dict[nodes.Node, int] = {where: number for number, where in enumerate(wheres)}
    for node in _nodes(roots):
        found = _chain(node, numbered)
        if found is not None:
            groups.setdefault(found[0], set()).add((node, found[1]))
    eligible = {chain: members for chain, members in groups.items()
                if len({number for _, number in members}) > 1 and not chain.cti_depends_on_data}
    covered = {node for members in eligible.values() for node, _ in members}
    readers = _readers(roots, set())
    for chain, members in eligible.items():
        # a chain whose sub-queries only longer grouped chains read is not needed
        if all(isinstance(r, nodes.Node) and r in covered for node, _ in members for r in readers[node]):
            continue
        numbers = sorted({number for _, number in members})
        events = index if len(numbers) == len(wheres) else index.filter(F.col(TAG).isin(numbers))
        base = flow.derived(wheres[numbers[0]], events)  # a where's CTIs are its source's
        try:
            group = Flow(events, base.cti, base.finite_cti, flow.keys + (TAG,), base.reached,
                         reached_by=base.reached_by)
            out = compile_node(chain, {**env, GROUP: group})
        except Exception:  # compiling the queries raises it again, naming them
            continue
        if TAG not in out.frame.columns:
            continue
        # every sub-query reads its own group from the cache, sorted by tag for the cache to skip the rest
        grouped = out.frame.sortWithinPartitions(TAG).persist(StorageLevel.MEMORY_AND_DISK)
        shared.persisted.append(grouped)
        together = Flow(grouped, out.cti, out.finite_cti, out.keys, out.reached, reached_by=out.reached_by)
        for node, number in members:
            compiled_as(node, env, Flow(grouped.filter(F.col(TAG) == F.lit(number)).drop(TAG), out.cti,
                                        out.finite_cti, flow.keys, out.reached, reached_by=out.reached_by))
            shared.grouped[node] = (together, number)


def _chain(node: nodes.Node, wheres: Mapping[nodes.Node, int]) -> tuple[nodes.Node, int] | None:
    """``node`` as a chain of one-input operators over one of ``wheres`` (the chain with a
    ``GroupSource`` in the where's place, and the where's number), or None."""
    above: list[nodes.Unary] = []
    while node not in wheres:
        if not isinstance(node, nodes.Unary):
            return None
        above.append(node)
        node = node.source
    where = wheres[node]
    if not above:
        return None  # the where itself: the index has it
    chain: nodes.Node = GroupSource(node.schema, node.may_be_open)
    for unary in reversed(above):
        chain = attrs.evolve(unary, source=chain)
    return chain, where


def _where_groups(roots: Sequence[nodes.Node]) -> dict[nodes.Node, list[nodes.Where]]:
    """The distinct ``where``s over each stream, in the queries outside ``group_apply`` sub-queries
    (which compile in an environment of their own)."""
    groups: dict[nodes.Node, list[nodes.Where]] = {}
    for node in _nodes(roots):
        if isinstance(node, nodes.Where):
            wheres = groups.setdefault(node.source, [])
            if node not in wheres:
                wheres.append(node)
    return groups


def _readers(roots: Sequence[nodes.Node], indexed: set[nodes.Node]) -> dict[nodes.Node, set[object]]:
    """What reads each node's output: the distinct nodes over it (the ``where``s of an index count
    as one reader, the index) and the queries it is the whole of."""
    readers: dict[nodes.Node, set[object]] = {}
    for number, root in enumerate(roots):
        readers.setdefault(root, set()).add(("query", number))
    for node in _nodes(roots):
        for source in node.sources:
            reader: object = ("index", source) if isinstance(node, nodes.Where) and source in indexed else node
            readers.setdefault(source, set()).add(reader)
    return readers


def _nodes(roots: Sequence[nodes.Node]) -> list[nodes.Node]:
    """Every distinct node of the queries (through ``sources``), each once."""
    seen: dict[nodes.Node, None] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = None
        stack.extend(node.sources)
    return list(seen)


def _height(node: nodes.Node, known: dict[nodes.Node, int] | None = None) -> int:
    """The length of the longest path from ``node`` down to an input."""
    known = {} if known is None else known
    if node not in known:
        known[node] = 1 + max((_height(s, known) for s in node.sources), default=0)
    return known[node]


__all__ = ["TAG", "Shared", "compiled_together"]
