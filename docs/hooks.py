"""MkDocs hook: every picture on the site is drawn by the code on its page.

A page's ``python`` blocks — those inside a collapsed "Setup" admonition too, indented — run in
order, in one namespace, in a scratch directory, with ``docs/`` on the import path (for
``doc_helpers``), up to the last block that calls ``savefig(`` — as the tests run them
(tests/docs/test_pages.py) — and every PNG they write there becomes ``images/<name>`` of the site.
A picture may be shown above the code that draws it. Those blocks must not start Spark: the
pictures come from the reference evaluator, and the build stays quick and JVM-free.

``python docs/hooks.py --readme`` redraws the README's picture (docs/images/readme-timeline.png)
from the getting-started page.

The hook also shows the docstrings' doctest examples (``>>>`` lines, in the API reference) as
highlighted Python console blocks rather than as Markdown quotes.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from markdown import Extension, Markdown  # type: ignore[import-untyped]
from markdown.preprocessors import Preprocessor  # type: ignore[import-untyped]
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
#: a fenced block, at the start of a line or indented (inside an admonition): indent, language, code
BLOCK = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^\1```[ \t]*$", re.S | re.M)
README_PICTURE = DOCS / "images" / "readme-timeline.png"
#: a doctest directive, which readers do not need to see
DIRECTIVE = re.compile(r"\s*# doctest: [+-]\w+.*$")


def code_blocks(text: str) -> list[tuple[str, str, int, int]]:
    """The fenced blocks of a page: (language, code without the fence's indent, start, end)."""
    found = []
    for m in BLOCK.finditer(text):
        indent = len(m.group(1))
        code = "".join(line[indent:] for line in m.group(3).splitlines(keepends=True))
        found.append((m.group(2), code, m.start(), m.end()))
    return found


def page_pictures(page: Path) -> dict[str, bytes]:
    """The PNG files the page's code writes, by name (none if it draws nothing)."""
    code = [block for language, block, _, _ in code_blocks(page.read_text()) if language == "python"]
    drawing = [i for i, block in enumerate(code) if "savefig(" in block]
    if not drawing:
        return {}
    module = types.ModuleType(f"docs_pictures_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    here = os.getcwd()
    path = list(sys.path)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        sys.path.insert(0, str(DOCS))  # the pages import doc_helpers
        try:
            for i, block in enumerate(code[:drawing[-1] + 1]):
                if "SparkSession" in block or "local_session(" in block:
                    raise RuntimeError(f"{page.name} block {i}: the code before a picture must not start Spark")
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(block, f"{page.name} python block {i}", "exec"), module.__dict__)  # noqa: S102
        finally:
            os.chdir(here)
            sys.path[:] = path
            del sys.modules[module.__name__]
        return {p.name: p.read_bytes() for p in sorted(Path(scratch).glob("*.png"))}


class DoctestBlocks(Preprocessor):  # type: ignore[misc]
    """A doctest example — a ``>>>`` line and the lines after it, up to a blank line — outside a
    fenced block becomes a ``pycon`` fenced block (Markdown would read ``>>>`` as nested quotes)."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fenced = False
        i = 0
        while i < len(lines):
            if lines[i].lstrip().startswith("```"):
                fenced = not fenced
            if not fenced and lines[i].startswith(">>> "):
                end = i
                while end < len(lines) and lines[end].strip():
                    end += 1
                out += ["", "```pycon", *(DIRECTIVE.sub("", line).rstrip() for line in lines[i:end]), "```", ""]
                i = end
                continue
            out.append(lines[i])
            i += 1
        return out


class DoctestExtension(Extension):  # type: ignore[misc]
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 - Markdown's name
        # before the fenced blocks are read (superfences: 25), after whitespace is normalised (30)
        md.preprocessors.register(DoctestBlocks(md), "doctest_blocks", 29)


@event_priority(100)  # before mkdocstrings takes the Markdown extensions for the API reference
def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    config.markdown_extensions.append(DoctestExtension())
    return config


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    drawn: dict[str, str] = {}
    for page in sorted(DOCS.glob("*.md")):
        for name, png in page_pictures(page).items():
            if name in drawn:
                raise RuntimeError(f"{page.name} and {drawn[name]} both draw {name}")
            drawn[name] = page.name
            files.append(File.generated(config, f"images/{name}", content=png))
    return files


if __name__ == "__main__" and sys.argv[1:] == ["--readme"]:
    README_PICTURE.parent.mkdir(exist_ok=True)
    README_PICTURE.write_bytes(page_pictures(DOCS / "getting-started.md")["usage.png"])
    print(README_PICTURE)
