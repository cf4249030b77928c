"""The documentation site builds with MkDocs in strict mode (any warning — a broken link, a missing
anchor, a docstring mkdocstrings cannot render — fails it), with every page of the nav and the
timeline pictures drawn from real runs; and the README's picture is the one docs/pictures.py draws."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

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
    assert len(shown) >= 10
    for name in shown:
        assert (site / "images" / name).read_bytes().startswith(PNG), name
    api = (site / "api" / "index.html").read_text()
    for name in ("streamql.Binder.explain", "streamql.plot.timeline", "streamql.Stream.snapshot_window",
                 "streamql.RunningQuery.stop"):
        assert f'id="{name}"' in api, name


def test_the_readme_shows_the_picture_docs_pictures_draws(tmp_path: pathlib.Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert "](docs/images/readme-timeline.png)" in readme
    committed = ROOT / "docs" / "images" / "readme-timeline.png"
    spec = importlib.util.spec_from_file_location("docs_pictures", ROOT / "docs" / "pictures.py")
    assert spec is not None and spec.loader is not None
    pictures = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = pictures  # its dataclasses look their module up
    spec.loader.exec_module(pictures)
    drawn = tmp_path / "readme.png"
    pictures.release().savefig(drawn, dpi=100, metadata={"Software": None})
    # same picture size: the committed file is this figure (pixels may differ between matplotlib versions)
    assert committed.read_bytes()[16:24] == drawn.read_bytes()[16:24]
