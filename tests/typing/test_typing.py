"""Typing tests: what ``mypy --strict`` says about user code written against streamql.

``cases/ok_*.py`` are well-typed queries: mypy must report nothing in them (and, being valid
queries, they also run). ``cases/bad_*.py`` are mistakes: every line ending in
``# E: <part of the message>`` must get a mypy error containing that text, a line may carry
several markers (one per expected error), and no other line may get an error.

mypy runs once for all cases; the case files are passed explicitly because the project's
mypy configuration excludes ``tests/typing/cases/`` from ordinary runs.
"""
from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Sequence

import pytest

from support.mypy_report import MypyError, parse_report

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases"
OK_CASES = sorted(CASES.glob("ok_*.py"))
BAD_CASES = sorted(CASES.glob("bad_*.py"))

MARKER = "# E:"


class MypyRun(NamedTuple):
    errors: list[MypyError]

    def __repr__(self) -> str:  # keeps failure reports short
        return f"MypyRun(<{len(self.errors)} errors>)"


def expected_errors(source: str) -> dict[int, list[str]]:
    """Line number -> the message parts its ``# E:`` markers expect."""
    expected: dict[int, list[str]] = {}
    for number, text in enumerate(source.splitlines(), start=1):
        _, *markers = text.split(MARKER)
        if markers:
            expected[number] = [m.strip() for m in markers]
    return expected


def mismatches(expected: dict[int, list[str]], errors: Sequence[MypyError]) -> list[str]:
    """What differs between the markers of a file and mypy's errors for it (empty: they agree)."""
    problems = []
    by_line: dict[int, list[str]] = {}
    for error in errors:
        by_line.setdefault(error.line, []).append(error.message)
    for line, parts in sorted(expected.items()):
        reported = by_line.get(line, [])
        for part in parts:
            if not any(part in message for message in reported):
                got = "; ".join(reported) or "no error"
                problems.append(f"line {line}: expected an error containing {part!r}, got: {got}")
    for line, messages in sorted(by_line.items()):
        parts = expected.get(line, [])
        for message in messages:
            if not any(part in message for part in parts):
                problems.append(f"line {line}: unexpected error: {message}")
    return problems


@pytest.fixture(scope="module")
def mypy_run() -> MypyRun:
    files = [str(path.relative_to(ROOT)) for path in OK_CASES + BAD_CASES]
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "pyproject.toml",
         "--no-error-summary", "--no-pretty", "--no-color-output", "--show-error-codes", *files],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    output = completed.stdout + completed.stderr
    # 0: no errors, 1: errors reported; anything else means mypy itself failed
    assert completed.returncode in (0, 1), f"mypy failed (exit {completed.returncode}):\n{output}"
    return MypyRun(parse_report(completed.stdout))


def _errors_in(run: MypyRun, case: Path) -> list[MypyError]:
    return [e for e in run.errors if e.path == case.resolve()]


def test_cases_exist() -> None:
    assert OK_CASES and BAD_CASES, f"no typing cases found in {CASES}"


def test_no_errors_outside_the_cases(mypy_run: MypyRun) -> None:
    """Errors in streamql itself (followed through imports) would make every case meaningless."""
    case_paths = {p.resolve() for p in OK_CASES + BAD_CASES}
    outside = [str(e) for e in mypy_run.errors if e.path not in case_paths]
    assert not outside, "mypy reports errors outside the case files:\n" + "\n".join(outside)


@pytest.mark.parametrize("case", OK_CASES, ids=[p.name for p in OK_CASES])
def test_well_typed_queries_pass_mypy_strict(mypy_run: MypyRun, case: Path) -> None:
    errors = _errors_in(mypy_run, case)
    assert not errors, f"{case.name} should type-check:\n" + "\n".join(map(str, errors))


@pytest.mark.parametrize("case", OK_CASES, ids=[p.name for p in OK_CASES])
def test_well_typed_queries_are_valid_queries(case: Path) -> None:
    """The well-typed cases also build (and, where they run one, evaluate) without error."""
    runpy.run_path(str(case), run_name=f"typing_case_{case.stem}")


@pytest.mark.parametrize("case", BAD_CASES, ids=[p.name for p in BAD_CASES])
def test_each_mistake_is_reported_on_its_line(mypy_run: MypyRun, case: Path) -> None:
    expected = expected_errors(case.read_text(encoding="utf-8"))
    assert expected, f"{case.name} has no {MARKER!r} markers"
    problems = mismatches(expected, _errors_in(mypy_run, case))
    assert not problems, f"{case.name}:\n" + "\n".join(problems)


def test_the_comparison_catches_wrong_expectations() -> None:
    """A marker mypy does not confirm, and an error nobody expected, are both reported."""
    source = "\n".join([
        "a = 1  # E: has no attribute \"x\"",
        "b = 2",
        "c = 3  # E: first  # E: second",
    ])
    path = ROOT / "case.py"
    errors = [
        MypyError(path, 1, 'Incompatible types in assignment  [assignment]'),
        MypyError(path, 2, '"int" has no attribute "y"  [attr-defined]'),
        MypyError(path, 3, "the first one"),
        MypyError(path, 3, "the second one"),
    ]
    expected = expected_errors(source)
    assert expected == {1: ['has no attribute "x"'], 3: ["first", "second"]}
    assert mismatches(expected, errors) == [
        "line 1: expected an error containing 'has no attribute \"x\"', got: "
        "Incompatible types in assignment  [assignment]",
        "line 1: unexpected error: Incompatible types in assignment  [assignment]",
        'line 2: unexpected error: "int" has no attribute "y"  [attr-defined]',
    ]
    assert mismatches(expected, errors[2:] + [MypyError(path, 1, 'X has no attribute "x"')]) == []
