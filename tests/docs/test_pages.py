"""Every code block of the documentation is run or checked, whatever its fence.

Every ``python`` block of a page runs in one namespace, in order (in a scratch directory: examples
may write files; with ``docs/`` on the import path, for the shared ``doc_helpers``; a snippet
include, ``--8<-- "doc_helpers.py"``, runs the file it includes), and a ``text`` block right after
one is exactly what that block prints. Blocks inside an admonition (a collapsed "Setup",
indented) count too, without their indent. A ``pyi`` block (an API signature) is compared with
streamql's real signature; the ``python`` block titled ``mypy --strict`` is checked with mypy, its
``# error:`` comments being what mypy reports. The other fences are the allow-list of
``support.doc_blocks.FENCES``: a block of any other fence, or of none, fails
``test_every_block_is_run_or_checked``. The README's example runs on its example's data."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import pathlib
import re
import subprocess
import sys
import tomllib
import types
import warnings
from typing import Any, Iterator

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from support.depth import tiered
from support.doc_blocks import FENCES, Block, blocks, fence_lines, signature_problems
from support.mypy_report import parse_report

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ALL_PAGES = sorted(p.name for p in DOCS.glob("*.md"))
PAGES = [page for page in ALL_PAGES if any(b.runs for b in blocks((DOCS / page).read_text()))]
SIGNATURES = [(page, b.line) for page in ALL_PAGES for b in blocks((DOCS / page).read_text()) if b.language == "pyi"]
#: ``--8<-- "file"``: a snippet include (pymdownx.snippets, base path docs/)
SNIPPET = re.compile(r'^--8<-- "([^"]+)"[ \t]*$', re.M)
#: an example's output a page quotes: (page, its first words) -> the command line that prints it
#: (without Java: the examples check their Spark runs against the reference evaluator)
EXAMPLE_OUTPUT = {
    ("ctis-and-release.md", "DROP: dropped=2 adjusted=0"): ["examples/late_events.py", "--reference-only"],
    ("reference-evaluator.md", "INTERVAL output, CTI after every"): ["examples/reference_only.py"],
}
#: an excerpt of a text the page's code computes: (page, its first words) -> the variable holding
#: the text. Each line of the excerpt is a line of the text, but for attribute ids (``#371L``), the
#: padding before a ``│``, the number of shuffle partitions and an end cut at `` ...``
EXCERPTS = {("seeing.md", "[1] snapshot_window"): "plan"}
#: output a page quotes from elsewhere, not printed by a block of the page: (page, its first
#: words) -> why it cannot be printed there
QUOTED_OUTPUT = {
    ("binding.md", "Spark's Python workers cannot import pyarrow"):
        "the message of workers without pyarrow, pandas and streamql: this machine's workers have them",
    ("README.md", "Released on Spark (9 events):"):
        "examples/power_meter.py's output: test_the_readme_example_prints_what_the_readme_shows checks it",
    **{key: "an example's output: test_examples_print_what_the_pages_quote checks it" for key in EXAMPLE_OUTPUT},
    **{key: "an excerpt: test_page_examples_print_what_the_page_shows checks its lines" for key in EXCERPTS},
}


def page_blocks(page: str) -> list[Block]:
    return blocks((DOCS / page).read_text())


def runnable(code: str) -> str:
    """The code with its snippet includes replaced by the files they include."""
    return SNIPPET.sub(lambda m: (DOCS / m.group(1)).read_text(), code)


#: pages whose examples start running queries or broker-less stand-ins of them (tens of seconds
#: each), or run a dozen batch queries (binding.md, late-events.md: 14-15 s each): the deep tier runs
#: them, the default tier's budget is for the rest
SLOW_PAGES = {"streaming.md", "kafka-and-delta.md", "binding.md", "late-events.md"}


@pytest.mark.parametrize("page", tiered(PAGES, deep=SLOW_PAGES))
def test_page_examples_print_what_the_page_shows(page: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                 spark: SparkSession) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(DOCS))  # the pages import doc_helpers
    with jvm_working_directory(spark, tmp_path):
        run_page(page)


@contextlib.contextmanager
def jvm_working_directory(spark: SparkSession, path: pathlib.Path) -> Iterator[None]:
    """Relative paths a page's example writes (``binding.write(usage, "usage-parquet")``) go to
    ``path``: Spark qualifies them with its local file system's working directory, the JVM's own,
    which ``chdir`` does not move (a Spark Connect session's server is another process: unchanged)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        yield
        return
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration())
    before = local.getWorkingDirectory()
    local.setWorkingDirectory(jvm.org.apache.hadoop.fs.Path(str(path)))
    try:
        yield
    finally:
        local.setWorkingDirectory(before)


def run_page(page: str) -> None:
    """Runs every block of ``page`` in one namespace and checks what it prints."""
    # dataclasses look their module up in sys.modules: the page's code runs as a module of its own
    module = types.ModuleType(f"docs_{page.replace('-', '_').replace('.', '_')}")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    found = page_blocks(page)
    for i, block in enumerate(found):
        if not block.runs:
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(runnable(block.code), f"{page} block {i} (line {block.line})", "exec"), namespace)  # noqa: S102
        after = found[i + 1] if i + 1 < len(found) else None
        if after is not None and after.language == "text" and after.follows:
            assert printed.getvalue().rstrip() == after.code.rstrip(), f"{page} block {i} (line {block.line})"
    for (excerpt_page, words), name in EXCERPTS.items():
        if excerpt_page == page:
            (excerpt,) = [b for b in found if b.language == "text" and b.code.startswith(words)]
            lines = [_plain(line) for line in namespace[name].splitlines()]
            for line in excerpt.code.splitlines():
                cut = line.endswith(" ...")
                assert any(real.startswith(_plain(line.removesuffix(" ..."))) if cut else real == _plain(line)
                           for real in lines), f"{page} line {excerpt.line}: not in {name}: {line}\n"


def _plain(line: str) -> str:
    """A plan's line without what changes from run to run: attribute ids, the names' padding, the
    session's number of shuffle partitions, and the plan's indentation (adaptive execution, on in a
    new session and off in the tests' own, adds a level above the whole plan)."""
    line = re.sub(r"(hashpartitioning\([^()]*, )\d+\)", r"\1N)", re.sub(r"#\d+", "#", line))
    return re.sub(r"│\s+", "│ ", re.sub(r"\s+│", " │", line)).rstrip()


@pytest.mark.parametrize("page", [*ALL_PAGES, "README.md"])
def test_every_block_is_run_or_checked(page: str) -> None:
    """Each block's fence says what the tests do with it (``FENCES``): a block without a language,
    or with another one, is refused, and a ``text`` block is the output of the block before it
    (or quoted output the page explains, ``QUOTED_OUTPUT``)."""
    text = (ROOT / page).read_text() if page == "README.md" else (DOCS / page).read_text()
    found = blocks(text)
    assert fence_lines(text) == 2 * len(found), f"{page}: a fence that the tests do not read as a block"
    for i, block in enumerate(found):
        where = f"{page} line {block.line}"
        assert block.language, f"{where}: a block without a fence language: give it one of {sorted(FENCES)}"
        assert block.language in FENCES, f"{where}: the tests neither run nor check a {block.language!r} block"
        if block.language == "text":
            quoted = [key for key in QUOTED_OUTPUT if key[0] == page and block.code.startswith(key[1])]
            before = found[i - 1] if i else None
            printed = before is not None and before.runs and block.follows
            assert printed or quoted, f"{where}: a text block that no python block right before it prints"
        elif block.language == "timeline":
            assert block.code.startswith(("time ", "position ")), f"{where}: a timeline starts with its axis"
        elif block.language == "bash":
            extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
            for extra in re.findall(r"'\.\[(\w+)\]'", block.code):
                assert extra in extras, f"{where}: no extra {extra!r} in pyproject.toml"
            for script in re.findall(r"\b(examples/\w+\.py)\b", block.code):
                assert (ROOT / script).exists(), f"{where}: no {script}"
        elif block.mypy:
            assert page == "expressions.md", f"{where}: test_the_mypy_session_is_what_mypy_reports checks expressions.md's"
    # every quoted output is still on its page
    for quoted_page, words in QUOTED_OUTPUT:
        if quoted_page == page:
            assert any(b.language == "text" and b.code.startswith(words) for b in found), (page, words)


def test_the_check_refuses_blocks_it_cannot_run_or_check(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path)
    for page in ["```\nprint(1)\n```\n", "```py\nprint(1)\n```\n", "```mermaid\ngraph TD\n```\n",
                 "Output:\n\n```text\n1\n```\n", "```python\nprint(1)\n```\n\nand\n\n```text\n1\n```\n",
                 "```timeline\n12:00 •\n```\n", "```python\nprint(1)\n````\n"]:
        (tmp_path / "page.md").write_text(page)
        with pytest.raises(AssertionError):
            test_every_block_is_run_or_checked("page.md")
    (tmp_path / "page.md").write_text("```python\nprint(1)\n```\n\n```text\n1\n```\n\n```timeline\ntime  12:00\n```\n")
    test_every_block_is_run_or_checked("page.md")


@pytest.mark.parametrize("page, words", list(EXAMPLE_OUTPUT))
def test_examples_print_what_the_pages_quote(page: str, words: str) -> None:
    (quoted,) = [b for b in page_blocks(page) if b.language == "text" and b.code.startswith(words)]
    done = subprocess.run([sys.executable, *EXAMPLE_OUTPUT[page, words]], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.rstrip() == quoted.code.rstrip()


@pytest.mark.parametrize("page, line", SIGNATURES)
def test_documented_signatures_are_the_api(page: str, line: int) -> None:
    (block,) = [b for b in page_blocks(page) if b.line == line]
    assert signature_problems(block.code) == []


def test_the_signature_check_sees_drift() -> None:
    assert signature_problems('Binder.bind(stream, source, *, start, end=None, edge=None, kind=None, arrival=None,\n'
                              '            partition=None, partitions=None, advance_time=None, bad_rows="error") -> Binder') == []
    assert signature_problems("Binder.bind(stream, source, *, start) -> Binder") != []
    assert signature_problems('Binder.bind(stream, source, *, start, end=None, edge=None, kind=None, arrival=None,\n'
                              '            advance_time=None, bad_rows="drop") -> Binder') != []
    assert signature_problems("sq.reference.run(q: Stream[T], inputs, output=Shape.INTERVAL, late=True) -> Result[T]") != []
    assert signature_problems("Result.late: list[Late]") == []
    assert signature_problems("Result.late: list[Event]") != []
    assert signature_problems("class sq.Late:\n    input: str; kind: str\n") != []
    assert signature_problems("class sq.UserAggregate(Generic[V, A, R]):\n    def zero(self) -> R: ...\n") != []
    assert signature_problems("print(1)") != []


def test_the_mypy_session_is_what_mypy_reports() -> None:
    """expressions.md's mypy block, after the page's setup (``readings``, ``Usage``): every line
    mypy reports on is followed by its ``# error:``/``# note:`` comments, in mypy's words."""
    found = page_blocks("expressions.md")
    (session,) = [b for b in found if b.mypy]
    setup = found[0].code
    assert found[0].runs and "readings = sq.input(" in setup
    expected: list[tuple[int, str]] = []
    code_line = 0
    for number, line in enumerate(session.code.splitlines(), start=1):
        if m := re.match(r"# (error|note): (.*)$", line):
            expected.append((code_line, f"{m.group(1)}: {m.group(2)}"))
        elif m := re.match(r"#\s+(\S.*)$", line):
            line_of, message = expected[-1]
            expected[-1] = (line_of, f"{message} {m.group(1)}")      # a message continued
        else:
            code_line = number
    assert len(expected) >= 5
    offset = len(setup.splitlines())
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "pyproject.toml", "--no-error-summary",
         "--no-pretty", "--no-color-output", "--show-error-codes", "-c", setup + session.code],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    reported = [(e.line - offset, e.message) for e in parse_report(done.stdout, ("error", "note"))]
    assert all(line > 0 for line, _ in reported), f"mypy reports on the page's setup: {reported}"
    assert reported == expected


def _module(path: pathlib.Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_readme_example_prints_what_the_readme_shows(spark: SparkSession) -> None:
    """The README's example runs on examples/power_meter.py's readings (the README says the
    example is this query, complete) and, shown as the example shows it, prints the README's output."""
    readme = blocks((ROOT / "README.md").read_text())
    (example,) = [b for b in readme if b.language == "python"]
    (output,) = [b for b in readme if b.language == "text"]
    power_meter = _module(ROOT / "examples" / "power_meter.py", "docs_readme_power_meter")
    # the README's code, given the example's DataFrame
    module = types.ModuleType("docs_readme")
    sys.modules[module.__name__] = module   # dataclasses look their module up
    namespace: dict[str, Any] = module.__dict__
    namespace["df"] = spark.createDataFrame(power_meter.READINGS, "arrival long, ts timestamp, meter string, consumption double")
    with warnings.catch_warnings():     # local_session may warn: the test run's session is active
        warnings.simplefilter("ignore")
        exec(compile(example.code, "README.md example", "exec"), namespace)  # noqa: S102
    result = namespace["result"]
    # shown as the example shows its result, with the example's check against the reference evaluator
    items = [sq.Insert(ts, ts + sq.TICK, namespace["Reading"](meter, watts)) for _, ts, meter, watts in power_meter.READINGS]
    expected = sq.reference.run(namespace["usage"], {"readings": sq.reference.ReferenceInput(items, namespace["settings"])})
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print(f"Released on Spark ({len(result.events)} events):")
        power_meter.show(result.events)
        power_meter.show_counts(result)
        print("Spark and sq.reference.run agree:", (result.events, result.dropped, result.final_cti) ==
              (expected.events, expected.dropped, expected.final_cti))
    assert printed.getvalue().rstrip() == output.code.rstrip()


def test_an_excerpt_line_ignores_only_what_changes_between_runs() -> None:
    assert _plain("[1] w  │    +- Exchange hashpartitioning(_sq_part#357, 2), x#1L") == \
        _plain("[1] w            │    +- Exchange hashpartitioning(_sq_part#1101, 200), x#22L")
    assert _plain("[1] w │ +- Sort [a#1 ASC]") != _plain("[1] w │ +- Sort [a#1 DESC]")
