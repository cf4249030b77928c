"""The documentation site builds with MkDocs in strict mode (any warning — a broken link, a missing
anchor, a docstring mkdocstrings cannot render — fails it), with every page of the nav and the
timeline pictures its pages' code draws; and the README's picture is the one the getting-started page draws."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

from mkdocs.config import load_config

ROOT = pathlib.Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def nav_pages(nav: list[object]) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        assert isinstance(entry, dict)
        for value in entry.values():
            pages += nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


def test_the_site_builds_strictly_with_every_page_and_picture(tmp_path: pathlib.Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    pages = nav_pages(load_config(str(ROOT / "mkdocs.yml"))["nav"])
    # every page of docs/ is in the nav, and built
    assert sorted(pages) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    for page in pages:
        built = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.exists(), page
    # every picture a page shows was drawn
    shown = {m for p in (ROOT / "docs").glob("*.md") for m in re.findall(r"\(images/([\w-]+\.png)\)", p.read_text())}
    assert len(shown) >= 14
    for name in shown:
        assert (site / "images" / name).read_bytes().startswith(PNG), name
    api = (site / "api" / "index.html").read_text()
    for name in ("streamql.Binder.explain", "streamql.plot.timeline", "streamql.Stream.snapshot_window",
                 "streamql.RunningQuery.stop"):
        assert f'id="{name}"' in api, name


def test_the_readme_shows_the_picture_the_getting_started_page_draws() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "](docs/images/readme-timeline.png)" in readme
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    drawn = hooks.page_pictures(ROOT / "docs" / "getting-started.md")["usage.png"]
    committed = (ROOT / "docs" / "images" / "readme-timeline.png").read_bytes()
    # the same picture: same size (pixels may differ between matplotlib versions)
    assert committed[16:24] == drawn[16:24]


def test_a_page_that_starts_spark_before_its_picture_is_refused(tmp_path: pathlib.Path) -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = tmp_path / "page.md"
    page.write_text("```python\nfrom pyspark.sql import SparkSession\n```\n\n```python\nfigure.savefig('x.png')\n```\n")
    with pytest.raises(RuntimeError, match="page.md block 0: the code before a picture must not start Spark"):
        hooks.page_pictures(page)
