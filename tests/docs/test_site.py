"""The documentation site builds with MkDocs in strict mode (any warning — a broken link, a missing
anchor, a docstring mkdocstrings cannot render — fails it), with every page of the nav and the
timeline pictures its pages' code draws; and the README's picture is the one the getting-started page draws.

The built HTML is checked as a reader gets it (Material for MkDocs): every page of the nav has its
title, its python blocks are highlighted by Pygments (token spans), code blocks get copy buttons,
there is a light/dark palette toggle, the pages' collapsed "Setup" blocks are collapsed, the
operator pages open with their subject and a picture, the API reference's doctest examples are
highlighted, and the search index finds API names."""
from __future__ import annotations

import html
import io
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import numpy
import numpy.typing
import pytest
from PIL import Image

from mkdocs.config import load_config

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PNG = b"\x89PNG\r\n\x1a\n"
#: the pages of the operators: each opens with what the operator does, a picture and a short example
OPERATOR_PAGES = ["windows.md", "snapshot-windows.md", "hopping-windows.md", "tumbling-windows.md",
                  "count-windows.md", "session-windows.md", "grouping.md", "user-aggregates.md",
                  "joins.md", "as-of-joins.md", "union.md",
                  "esper-windows.md", "edges.md", "expressions.md"]
#: one highlighted python block: its code, made of Pygments' token spans
PYTHON_BLOCK = re.compile(r'<div class="language-python highlight">(?:<span class="filename">[^<]*</span>)?'
                          r'<pre><span></span><code>(.*?)</code></pre></div>', re.S)


def nav_entries(nav: list[object]) -> list[tuple[str, str]]:
    """(title, page) of every page of the nav, in order."""
    entries: list[tuple[str, str]] = []
    for entry in nav:
        assert isinstance(entry, dict)
        for title, value in entry.items():
            entries += nav_entries(value) if isinstance(value, list) else [(str(title), str(value))]
    return entries


def built_page(site: pathlib.Path, page: str) -> pathlib.Path:
    return site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The site, built once for this module's tests (strictly, into a temporary directory)."""
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}   # Material's banner about MkDocs 2 is no warning of ours
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert not re.search(r"^WARNING\b", done.stderr, re.M), done.stderr[-4000:]
    return site


@pytest.mark.slow  # the site build: the deep tier
def test_the_site_builds_strictly_with_every_page_and_picture(site: pathlib.Path) -> None:
    pages = [page for _, page in nav_entries(load_config(str(ROOT / "mkdocs.yml"))["nav"])]
    # every page of docs/ is in the nav, and built
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md"))
    for page in pages:
        assert built_page(site, page).exists(), page
    # every picture a page shows was drawn
    shown = {m for p in DOCS.glob("*.md") for m in re.findall(r"\(images/([\w-]+\.png)\)", p.read_text())}
    assert len(shown) >= 14
    for name in shown:
        assert (site / "images" / name).read_bytes().startswith(PNG), name
    api = (site / "api" / "index.html").read_text()
    for name in ("streamql.Binder.explain", "streamql.plot.timeline", "streamql.Stream.snapshot_window",
                 "streamql.RunningQuery.stop"):
        assert f'id="{name}"' in api, name
    # the docstrings' doctest examples are highlighted console blocks, not nested quotes
    assert api.count('class="language-pycon highlight"') >= 10
    assert "<blockquote>" not in api and "# doctest:" not in api
    # the examples' helpers are published for readers who run the examples
    assert (site / "doc_helpers.py").read_text() == (DOCS / "doc_helpers.py").read_text()


@pytest.mark.slow  # the site build: the deep tier
def test_every_page_of_the_nav_renders_its_title(site: pathlib.Path) -> None:
    entries = nav_entries(load_config(str(ROOT / "mkdocs.yml"))["nav"])
    for title, page in entries:
        text = built_page(site, page).read_text()
        assert f"<title>{html.escape(title, quote=False)} - streamql</title>" in text, (page, title)
        assert re.search(r'<article class="md-content__inner md-typeset">.*?<h1\b', text, re.S), page
    # and the nav of every page lists every title
    nav = (site / "index.html").read_text()
    for title, _ in entries:
        assert re.search(r'md-ellipsis">\s*' + re.escape(html.escape(title, quote=False)) + r"\s*<", nav), title


@pytest.mark.slow  # the site build: the deep tier
def test_code_is_highlighted_and_copyable_with_a_dark_mode(site: pathlib.Path) -> None:
    for md in sorted(DOCS.glob("*.md")):
        fences = len(re.findall(r"^[ \t]*```python\b", md.read_text(), re.M))
        text = built_page(site, md.name).read_text()
        blocks = PYTHON_BLOCK.findall(text)
        assert len(blocks) == fences, (md.name, len(blocks), fences)
        for block in blocks:
            # Pygments' token spans: keywords, names, operators ... — not grey text
            assert re.search(r'<span class="(k|kn|n|nn|o|p|s2|mi)">', block), (md.name, block[:200])
    index = (site / "index.html").read_text()
    assert '"content.code.copy"' in index                      # a copy button on every code block
    assert 'data-md-component="palette"' in index              # the light/dark toggle
    assert 'data-md-color-scheme="slate"' in index             # with a dark palette
    assert 'data-md-color-media="(prefers-color-scheme: dark)"' in index


@pytest.mark.slow  # the site build: the deep tier
def test_operator_pages_open_with_their_subject_a_picture_and_a_collapsed_setup(site: pathlib.Path) -> None:
    for page in OPERATOR_PAGES:
        source = (DOCS / page).read_text()
        opening = source[:source.index("\n## ")]
        # the picture comes before any code of the page, and the page's setup is collapsed
        assert re.search(r"!\[[^\]]*\]\(images/[\w-]+\.png\)", opening), page
        assert opening.index("](images/") < opening.index("```"), page
        assert '??? note "Setup' in opening, page
        # the shared helpers live in docs/doc_helpers.py, not on the page
        assert not re.search(r"^\s*def (hm|hms|show|every_event|point|posts)\(", source, re.M), page
        text = built_page(site, page).read_text()
        article = text[text.index('<article class="md-content__inner md-typeset">'):]
        first_image = article.index("<img ")
        assert first_image < article.index("<details class=\"note\">") < article.index('class="language-python highlight"'), page
        assert first_image < article.index("<h2"), page


@pytest.mark.slow  # the site build: the deep tier
def test_the_search_index_finds_api_names(site: pathlib.Path) -> None:
    index = (site / "search" / "search_index.json").read_text()
    for name in ("snapshot_window", "hopping_window", "AdvanceTimeSettings", "keep_last"):
        assert name in index, name


def test_the_readme_shows_the_picture_the_getting_started_page_draws() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "](docs/images/readme-timeline.png)" in readme
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    drawn = hooks.page_pictures(ROOT / "docs" / "getting-started.md")["usage.png"]
    committed = (ROOT / "docs" / "images" / "readme-timeline.png").read_bytes()
    redraw = "redraw it: python docs/hooks.py --readme"
    # the same picture: the same size, and the same pixels but for a little antialiasing (which may
    # differ between matplotlib and FreeType versions): a moved bar or another label differs more
    new, old = (numpy.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int) for png in (drawn, committed))
    assert new.shape == old.shape, redraw
    difference = numpy.abs(new - old).max(axis=2)
    assert (difference > 64).mean() < 0.002, redraw
    assert difference.mean() < 1.5, redraw


def test_the_readme_picture_check_sees_another_picture() -> None:
    """The comparison above fails for a picture with a bar less (the 60 x 16 pixels of it with the
    most ink painted white) or whose drawing moved by 2 pixels."""
    picture = numpy.asarray(Image.open(ROOT / "docs" / "images" / "readme-timeline.png").convert("RGB")).astype(int)
    ink: numpy.typing.NDArray[numpy.bool_] = numpy.asarray((picture < 160).any(axis=2))
    _, row, column = max((int(ink[r:r + 16, c:c + 60].sum()), r, c)
                         for r in range(0, ink.shape[0] - 16, 4) for c in range(0, ink.shape[1] - 60, 10))
    erased = picture.copy()
    erased[row:row + 16, column:column + 60] = 255
    moved = numpy.roll(picture, 2, axis=1)
    for changed in (erased, moved):
        difference = numpy.abs(changed - picture).max(axis=2)
        assert (difference > 64).mean() >= 0.002 or difference.mean() >= 1.5


def test_a_page_that_starts_spark_before_its_picture_is_refused(tmp_path: pathlib.Path) -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = tmp_path / "page.md"
    page.write_text("```python\nfrom pyspark.sql import SparkSession\n```\n\n```python\nfigure.savefig('x.png')\n```\n")
    with pytest.raises(RuntimeError, match="page.md block 0: the code before a picture must not start Spark"):
        hooks.page_pictures(page)
    # a block inside an admonition (a collapsed setup) is run too, without its indent
    page.write_text('??? note "Setup"\n\n    ```python\n    from pyspark.sql import SparkSession\n    ```\n\n'
                    "```python\nfigure.savefig('x.png')\n```\n")
    with pytest.raises(RuntimeError, match="page.md block 0: the code before a picture must not start Spark"):
        hooks.page_pictures(page)
