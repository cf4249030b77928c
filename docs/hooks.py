"""MkDocs hook: the site's timeline pictures are drawn at build time by ``sq.plot.timeline`` from
real runs (docs/pictures.py) and added to the site as generated files."""
from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).parent))

import pictures  # noqa: E402 - found beside this hook


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    for name, make in pictures.PICTURES.items():
        figure = make()
        png = io.BytesIO()
        figure.savefig(png, format="png", dpi=100, metadata={"Software": None})
        files.append(File.generated(config, f"images/{name}.png", content=png.getvalue()))
    return files
