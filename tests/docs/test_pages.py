"""Every documentation page's examples are executed: every ``python`` block of a page runs in one namespace,
in order (in a scratch directory: examples may write files; with ``docs/`` on the import path, for the
shared ``doc_helpers``), and a ``text`` block right after one is exactly what that block prints. Blocks
inside an admonition (a collapsed "Setup", indented) count too, without their indent."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md") if "```python" in p.read_text())
#: a fenced block, at the start of a line or indented (inside an admonition): indent, language, code
BLOCK = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^\1```[ \t]*$", re.S | re.M)


def blocks(page: str) -> list[tuple[str, str, bool]]:
    """(language, code, whether it follows the block before it with nothing but blank lines between):
    a ``text`` block is a python block's output only right after it."""
    text = (DOCS / page).read_text()
    found: list[tuple[str, str, bool]] = []
    end = None
    for m in BLOCK.finditer(text):
        indent = len(m.group(1))
        code = "".join(line[indent:] for line in m.group(3).splitlines(keepends=True))
        found.append((m.group(2), code, end is not None and not text[end:m.start()].strip()))
        end = m.end()
    return found


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_print_what_the_page_shows(page: str, tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(DOCS))  # the pages import doc_helpers
    # dataclasses look their module up in sys.modules: the page's code runs as a module of its own
    module = types.ModuleType(f"docs_{page.replace('-', '_').replace('.', '_')}")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    found = blocks(page)
    checked = 0
    for i, (language, code, _) in enumerate(found):
        if language != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{page} block {i}", "exec"), namespace)  # noqa: S102 - the page's own example
        if i + 1 < len(found) and found[i + 1][0] == "text" and found[i + 1][2]:
            assert printed.getvalue().rstrip() == found[i + 1][1].rstrip(), f"{page} block {i}"
            checked += 1
    assert checked > 0
