"""``Binder.explain``: the query tree, then the Spark physical plan of the bound query with every
plan line named by the streamql operator it implements.

Spark's optimizer fuses neighbouring operators (a ``where`` after a ``select`` becomes one
``Project``/``Filter``), so operators are found by *provenance*: each operator's own sub-query is
planned by itself, and a line of the whole plan belongs to the first operator, sources before the
operators that read them, whose own plan holds the same line (attribute ids, code-generation
stage numbers and plan ids aside). A line that only the fused plan has belongs to the operator
whose plan fused it; the lines above the output operator are the release rule
(docs/ctis-and-release.md#stability-and-the-release-rule).
"""
from __future__ import annotations

import contextlib
import io
import re
from typing import Mapping

from pyspark.sql import DataFrame

from streamql.query import nodes, windows
from streamql.query.explain import describe, explain, operators
from streamql.spark.operators.flow import Flow, compile_node

RELEASE = "release"
#: plan lines are cut to this many characters (a Project over many columns runs to thousands)
WIDTH = 150
_IDS = re.compile(r"#\d+L?|\[plan_id=\d+\]|\*\(\d+\) |isFinalPlan=\w+")
_TREE = re.compile(r"^[\s:|+\-]*")


def plan_lines(df: DataFrame) -> list[str]:
    """The physical plan of ``df`` as ``DataFrame.explain()`` prints it, one operator a line."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        df.explain()
    lines = printed.getvalue().splitlines()
    return [line for line in lines[1:] if line.strip()]  # below "== Physical Plan =="


def normal(line: str) -> str:
    """A plan line without its tree drawing and the ids that differ from one planning to the next."""
    return _IDS.sub("", _TREE.sub("", line)).strip()


def short_name(node: nodes.Node) -> str:
    """An operator as the gutter of the plan names it: its fluent method."""
    if isinstance(node, nodes.Input):
        return f"input {node.name!r}"
    if isinstance(node, windows.WindowOperator):
        spec = node.window
        if isinstance(spec, windows.HoppingWindow):
            name = "tumbling_window" if spec.size == spec.hop else "hopping_window"
        elif isinstance(spec, windows.SessionWindow):
            name = "session_window"
        else:
            name = "snapshot_window" if isinstance(spec, windows.SnapshotWindow) else "count_window"
        return f"{name}.top_k" if isinstance(node, windows.TopK) else name
    return describe(node).split("(")[0].split(" ")[0]


def items(key: str) -> tuple[str, frozenset[str]]:
    """A normalized plan line as its operator and the leaf items of its arguments — projected
    columns, conjuncts of a condition — so that a line whose columns were pruned by a later
    operator still matches the line it came from."""
    op, _, rest = key.partition(" ")
    leaves: set[str] = set()
    pending = [rest]
    while pending:
        part = _unwrap(pending.pop())
        split = _split_top(part)
        if len(split) == 1:
            if part:
                leaves.add(part)
        else:
            pending += split
    return op, frozenset(leaves)


def _unwrap(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] in "([" and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _closing(text: str, at: int) -> int:
    depth = 0
    for i in range(at, len(text)):
        if text[i] in "([":
            depth += 1
        elif text[i] in ")]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas and ``AND``s outside parentheses and brackets."""
    parts, depth, begin, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and (text.startswith(", ", i) or text.startswith(" AND ", i)):
            parts.append(text[begin:i])
            i += 2 if text[i] == "," else 5
            begin = i
            continue
        i += 1
    parts.append(text[begin:])
    return [p for p in (p.strip() for p in parts) if p]


def explain_bound(root: nodes.Node, flows: Mapping[str, Flow], released: DataFrame, output: str) -> str:
    """The text of ``Binder.explain``: the numbered tree, then ``released``'s physical plan with
    each line named by its operator."""
    shown = operators(root)
    numbers: dict[int, int] = {}
    for node in shown:  # a sub-query used twice is one operator: one number
        numbers.setdefault(id(node), len(numbers) + 1)
    inside_groups = {id(n) for node in shown if isinstance(node, windows.GroupApply) for n in operators(node.apply)}
    # sources before the operators that read them: the deepest operator holding a line owns it
    owners = list({id(n): n for n in reversed(shown) if id(n) not in inside_groups}.values())
    own = [(f"[{numbers[id(n)]}] {short_name(n)}", [items(normal(line)) for line in plan_lines(compile_node(n, flows).frame)])
           for n in owners]
    named = [(_owner(items(normal(line)), own), line) for line in plan_lines(released)]
    width = max(len(label) for label, _ in named)
    lines = ["== streamql query ==", explain(root, numbers), "",
             f"== Spark physical plan ({output} output); each line names the streamql operator it implements ==",
             *(f"{label:<{width}} │ {_cut(line)}" for label, line in named)]
    return "\n".join(lines)


def _owner(line: tuple[str, frozenset[str]], own: list[tuple[str, list[tuple[str, frozenset[str]]]]]) -> str:
    """The first operator (sources first) with a line of the same kind holding all of ``line``'s
    items; a line no single operator holds is a fusion: the operators that hold most of its items,
    and ``release`` for items none holds."""
    op, leaves = line
    if op == "AdaptiveSparkPlan":
        return "spark"
    for label, lines in own:
        if any(o == op and leaves <= held for o, held in lines):
            return label
    fused, left = [], set(leaves)
    while left:
        best = max(((label, left & held) for label, lines in own for o, held in lines if o == op),
                   key=lambda found: len(found[1]), default=("", set()))
        if not best[1]:
            break
        fused.append(best[0])
        left -= best[1]
    if left or not fused:
        fused.append(RELEASE)
    return " + ".join(dict.fromkeys(fused))


def _cut(line: str) -> str:
    return line if len(line) <= WIDTH else line[:WIDTH - 1] + "…"
