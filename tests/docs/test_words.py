"""What a user reads names its sources by their public titles (StreamInsight's "Advancing
Application Time", Esper's "Processing Model", SQLstream's "Rowtimes, Streaming Data, and Rowtime
Bounds", ...), never by the project's internal name for them ("seed 001"), and never apologises
for pictures it does not have: the pages draw their examples.

Checked: the documentation pages and their helpers, the README, mkdocs.yml, the examples, and the
text (docstrings and comments included) of the package. Tests are not user-facing and may use the
words (hypothesis seeds, say)."""
from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORBIDDEN = re.compile(r"\bseeds?\b|did not survive", re.I)
USER_FACING = sorted([*(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*.py"), ROOT / "README.md",
                      ROOT / "mkdocs.yml", *(ROOT / "examples").glob("*.py"), *(ROOT / "streamql").rglob("*.py")])


def offending_lines(text: str) -> list[str]:
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if FORBIDDEN.search(line)]


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_facing_text_cites_sources_by_title(path: pathlib.Path) -> None:
    assert offending_lines(path.read_text(encoding="utf-8")) == []


def test_the_check_catches_the_words() -> None:
    caught = ["seed 001's example", "(Seed 004)", "as the seeds say", "its picture did not survive"]
    fine = ["the policy of StreamInsight's example", "seeded", "test_seeds.py", "linseed"]
    assert all(offending_lines(t) for t in caught)
    assert not any(offending_lines(t) for t in fine)


def test_every_kind_of_user_facing_file_is_checked() -> None:
    names = {str(p.relative_to(ROOT)) for p in USER_FACING}
    assert {"README.md", "docs/index.md", "docs/doc_helpers.py", "examples/withdrawals.py",
            "streamql/query/esper.py"} <= names
