"""mypy's report, parsed: the ``path:line: severity: message`` lines of ``--no-pretty`` output."""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
_REPORT_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<severity>error|note|warning): (?P<message>.*)$")


class MypyError(NamedTuple):
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path.name}:{self.line}: {self.message}"


def parse_report(stdout: str, severities: tuple[str, ...] = ("error",)) -> list[MypyError]:
    """The errors of mypy's ``path:line: error: message`` lines (notes are context, not errors,
    unless ``severities`` asks for them: the message is then ``severity: message``)."""
    found = []
    for raw in stdout.splitlines():
        match = _REPORT_LINE.match(raw)
        if match and match["severity"] in severities:
            message = match["message"] if severities == ("error",) else f"{match['severity']}: {match['message']}"
            found.append(MypyError((ROOT / match["path"]).resolve(), int(match["line"]), message))
    return found
