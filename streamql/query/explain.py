"""``Stream.explain()``: a query tree as text — each operator with its arguments, the payload type it
outputs and the CTI propagation rule that applies to it
(docs/ctis-and-release.md#cti-propagation-through-operators).

>>> print(usage.explain())  # doctest: +SKIP
alter_duration(0:03:00) -> Usage
│   CTI: the input CTI
└── select(Usage(meter=e.meter, kilowatts=(e.consumption / 1000))) -> Usage
    │   CTI: the input CTI
    └── where((e.consumption > 0)) -> Reading
        │   CTI: the input CTI
        └── input 'readings' (POINT) -> Reading
                CTI: its CTI rows, generation or import
"""
from __future__ import annotations

from datetime import timedelta
from functools import singledispatch
from typing import Mapping

from streamql.expr.nodes import Literal
from streamql.query import as_of, esper, joins, nodes, patterns, windows
from streamql.time import INFINITY_MICROS

_INPUT_CTI = "the input CTI"
_LEAST_CTI = "the least of the inputs' CTIs"


def explain(node: nodes.Node, numbers: Mapping[int, int] | None = None) -> str:
    """The tree of ``node`` as text, the output operator first and its sources below it.
    ``numbers`` (by ``id`` of a node) prefixes operators with ``[n]``."""
    lines: list[str] = []
    _render(node, lines, "", "", "", numbers or {})
    return "\n".join(lines)


def operators(node: nodes.Node) -> list[nodes.Node]:
    """The operators of a tree in the order ``explain`` shows them (a node, then its sources;
    a ``group_apply``'s sub-query after its source)."""
    found = [node]
    for source in node.sources:
        found += operators(source)
    if isinstance(node, windows.GroupApply):
        found += operators(node.apply)
    return found


def _render(node: nodes.Node, lines: list[str], label: str, first: str, rest: str, numbers: Mapping[int, int]
            ) -> None:
    title, cti = describe(node), cti_rule(node)
    number = f"[{numbers[id(node)]}] " if id(node) in numbers else ""
    lines.append(f"{first}{label}{number}{title} -> {node.schema.name}")
    children: list[tuple[str, nodes.Node]] = [("", s) for s in node.sources]
    if isinstance(node, windows.GroupApply):
        children.append(("apply: ", node.apply))
    lines.append(f"{rest}{'│' if children else ' '}   CTI: {cti}")
    for i, (child_label, child) in enumerate(children):
        last = i == len(children) - 1
        _render(child, lines, child_label, rest + ("└── " if last else "├── "), rest + ("    " if last else "│   "),
                numbers)


def _micros(us: int) -> str:
    return "INFINITY" if us == INFINITY_MICROS else str(timedelta(microseconds=us))


@singledispatch
def describe(node: nodes.Node) -> str:
    """One operator as its fluent call, with its arguments shown as expressions."""
    return type(node).__name__


@describe.register
def _input(node: nodes.Input) -> str:
    return f"input {node.name!r} ({node.shape.name})"


@describe.register
def _where(node: nodes.Where) -> str:
    return f"where({node.predicate.show()})"


@describe.register
def _select(node: nodes.Select) -> str:
    return f"select({node.projection.show()})"


@describe.register
def _alter_duration(node: nodes.AlterDuration) -> str:
    duration = node.duration
    shown = str(duration.value) if isinstance(duration, Literal) else duration.show()
    return f"alter_duration({shown})"


@describe.register
def _alter_lifetime(node: nodes.AlterLifetime) -> str:
    if node.duration is None:
        return f"shift({node.start_shift})"
    return f"alter_lifetime(start_shift={node.start_shift}, duration={node.duration})"


@describe.register
def _to_point(node: nodes.ToPoint) -> str:
    return "to_point()"


def _windows_call(node: windows.WindowOperator) -> str:
    """The calls that form a window operator's windows: ``group_by(...)`` and the window."""
    spec = node.window
    if isinstance(spec, windows.SnapshotWindow):
        call = "snapshot_window()"
    elif isinstance(spec, windows.HoppingWindow):
        call = (f"tumbling_window({_micros(spec.size)})" if spec.size == spec.hop
                else f"hopping_window({_micros(spec.size)}, {_micros(spec.hop)})")
    elif isinstance(spec, windows.SessionWindow):
        limit = "" if spec.max_duration is None else f", max_duration={_micros(spec.max_duration)}"
        call = f"session_window({_micros(spec.gap)}{limit})"
    else:
        assert isinstance(spec, windows.CountWindow)
        call = f"count_window({spec.n})"
    return call if node.key is None else f"group_by({node.key.show()}).{call}"


@describe.register
def _window(node: windows.WindowAggregate) -> str:
    return f"{_windows_call(node)}.select({node.projection.show()})"


@describe.register
def _top_k(node: windows.TopK) -> str:
    order = "" if node.descending else ", descending=False"
    return f"{_windows_call(node)}.top_k({node.k}, by={node.by.show()}, select={node.projection.show()}{order})"


@describe.register
def _group_apply(node: windows.GroupApply) -> str:
    return f"group_apply(key={node.key.show()}, result={node.result.show()})"


@describe.register
def _group_source(node: windows.GroupSource) -> str:
    return "the group's stream"


@describe.register
def _join(node: joins.Join) -> str:
    on = "None" if node.on is None else node.on.show()
    return f"join(on={on}, select={node.projection.show()})"


@describe.register
def _anti_join(node: joins.AntiJoin) -> str:
    return f"anti_join(on={'None' if node.on is None else node.on.show()})"


@describe.register
def _clip(node: joins.Clip) -> str:
    return f"clip(on={node.on.show()})"


@describe.register
def _union(node: joins.Union) -> str:
    return f"union of {len(node.inputs)}"


@describe.register
def _as_of_join(node: as_of.AsOfJoin) -> str:
    within = "" if node.within is None else f", within={_micros(node.within)}"
    return f"as_of_join(on={node.on.show()}, select={node.projection.show()}{within})"


@describe.register
def _to_signal(node: as_of.ToSignal) -> str:
    return f"to_signal({node.key.show()})"


@describe.register
def _followed_by(node: patterns.FollowedBy) -> str:
    within = "" if node.within is None else f", within={_micros(node.within)}"
    every = ", all_matches=True" if node.all_matches else ""
    return f"followed_by(on={node.on.show()}, select={node.projection.show()}{within}{every})"


@describe.register
def _not_followed_by(node: patterns.NotFollowedBy) -> str:
    return f"not_followed_by(on={node.on.show()}, within={_micros(node.within)})"


@describe.register
def _keep_last(node: esper.KeepLast) -> str:
    return f"keep_last({node.n})"


@describe.register
def _time_batch(node: esper.TimeBatch) -> str:
    return f"time_batch({_micros(node.size)})"


@describe.register
def _length_batch(node: esper.LengthBatch) -> str:
    return f"length_batch({node.n})"


def cti_rule(node: nodes.Node) -> str:
    """The CTI propagation rule that applies to ``node``, in words
    (docs/ctis-and-release.md#cti-propagation-through-operators)."""
    if isinstance(node, nodes.Input):
        return "its CTI rows, generation or import"
    if isinstance(node, windows.GroupSource):
        return "the CTI of the grouped stream (every group sees the same CTIs)"
    if isinstance(node, nodes.AlterLifetime):
        return f"the input CTI moved by {node.start_shift}"
    if isinstance(node, patterns.NotFollowedBy):
        return f"the lesser of the left CTI moved by {timedelta(microseconds=node.within)} and the right CTI"
    if isinstance(node, (joins.Binary, joins.Union)):
        return _LEAST_CTI
    if isinstance(node, esper.TimeBatch):
        return "the end of the batch holding the input CTI"
    if isinstance(node, windows.GroupApply):
        return "the sub-query's rule applied to the input CTI, least over the groups"
    if isinstance(node, windows.WindowOperator) and not isinstance(node.window, windows.SnapshotWindow):
        if isinstance(node.window, windows.CountWindow):
            return "the first start of the earliest count window not yet stable, or the input CTI if earlier"
        if isinstance(node.window, windows.SessionWindow):
            return "the start of the earliest session not yet stable, or the input CTI if earlier"
        return "the start of the earliest window not yet stable, or the input CTI if earlier"
    return _INPUT_CTI
