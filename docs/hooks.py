"""MkDocs hook: every picture on the site is drawn by the code on its page.

A page's ``python`` blocks run in order, in one namespace, in a scratch directory, up to the last
block that calls ``savefig(`` — as the tests run them (tests/docs/test_pages.py) — and every PNG
they write there becomes ``images/<name>`` of the site. Those blocks must not start Spark: the
pictures come from the reference evaluator, and the build stays quick and JVM-free.

``python docs/hooks.py --readme`` redraws the README's picture (docs/images/readme-timeline.png)
from the getting-started page.
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

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)
README_PICTURE = DOCS / "images" / "readme-timeline.png"


def page_pictures(page: Path) -> dict[str, bytes]:
    """The PNG files the page's code writes, by name (none if it draws nothing)."""
    code = [m.group(2) for m in BLOCK.finditer(page.read_text()) if m.group(1) == "python"]
    drawing = [i for i, block in enumerate(code) if "savefig(" in block]
    if not drawing:
        return {}
    module = types.ModuleType(f"docs_pictures_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            for i, block in enumerate(code[:drawing[-1] + 1]):
                if "SparkSession" in block or "local_session(" in block:
                    raise RuntimeError(f"{page.name} block {i}: the code before a picture must not start Spark")
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(block, f"{page.name} python block {i}", "exec"), module.__dict__)  # noqa: S102
        finally:
            os.chdir(here)
            del sys.modules[module.__name__]
        return {p.name: p.read_bytes() for p in sorted(Path(scratch).glob("*.png"))}


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
