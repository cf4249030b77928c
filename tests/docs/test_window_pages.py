"""The window and operator pages' examples are executed: every ``python`` block of a page runs in one namespace,
in order, and a ``text`` block right after one is exactly what that block prints."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PAGES = ["windows.md", "snapshot-windows.md", "hopping-windows.md", "tumbling-windows.md", "count-windows.md",
         "grouping.md", "user-aggregates.md", "joins.md", "union.md", "esper-windows.md", "edges.md", "streaming.md"]
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)


def blocks(page: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer((DOCS / page).read_text())]


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_print_what_the_page_shows(page: str) -> None:
    # dataclasses look their module up in sys.modules: the page's code runs as a module of its own
    module = types.ModuleType(f"docs_{page.replace('-', '_').replace('.', '_')}")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    found = blocks(page)
    checked = 0
    for i, (language, code) in enumerate(found):
        if language != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{page} block {i}", "exec"), namespace)  # noqa: S102 - the page's own example
        if i + 1 < len(found) and found[i + 1][0] == "text":
            assert printed.getvalue().rstrip() == found[i + 1][1].rstrip(), f"{page} block {i}"
            checked += 1
    assert checked > 0
