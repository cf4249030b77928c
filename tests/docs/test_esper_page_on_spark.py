"""The queries of "Esper's processing model in streamql" (docs/esper-processing-model.md) release on
Spark what the page shows from the reference evaluator: the page says so, and its examples run
only in the reference evaluator (test_pages.py). Each query runs on Spark with the page's inputs
and CTI settings — arrival values as the reference's list positions — and is compared with the
reference evaluator's run. A Spark job per query: the deep tier."""
from __future__ import annotations

import contextlib
import io
import pathlib
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.events import InputItem
from support.doc_blocks import blocks

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PAGE = "esper-processing-model.md"

#: query -> (its withdrawals, their CTI settings, the output shape, whether it reads the logins)
QUERIES: dict[str, tuple[str, str, sq.Shape, bool]] = {
    "last5": ("W", "as_they_arrive", sq.Shape.EDGE, False),
    "filter_first": ("W", "as_they_arrive", sq.Shape.EDGE, False),
    "where_after": ("W", "as_they_arrive", sq.Shape.EDGE, False),
    "last_5_seconds": ("W", "then_time_passes", sq.Shape.EDGE, False),
    "sum_5_seconds": ("W", "then_time_passes", sq.Shape.EDGE, False),
    "account_amount": ("BATCHED", "then_time_passes", sq.Shape.EDGE, False),
    "mysum": ("BATCHED", "then_time_passes", sq.Shape.EDGE, False),
    "per_event": ("W", "as_they_arrive", sq.Shape.POINT, False),
    "pairs": ("W", "as_they_arrive", sq.Shape.INTERVAL, False),
    "per_login": ("W", "then_time_passes", sq.Shape.EDGE, True),
    "by_pattern": ("W", "then_time_passes", sq.Shape.INTERVAL, True),
    "per_session": ("W", "then_time_passes", sq.Shape.EDGE, True),
}


@pytest.fixture(scope="module")
def page(monkeypatch_module: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The namespace of the page's examples, run as test_pages.py runs them (but for the picture)."""
    monkeypatch_module.syspath_prepend(str(DOCS))
    monkeypatch_module.chdir(tmp_path_factory.mktemp("esper_page"))
    module = types.ModuleType("docs_esper_page_on_spark")
    sys.modules[module.__name__] = module   # dataclasses look their module up
    with contextlib.redirect_stdout(io.StringIO()):
        for i, block in enumerate(blocks((DOCS / PAGE).read_text())):
            if block.runs and "savefig(" not in block.code:
                exec(compile(block.code, f"{PAGE} block {i}", "exec"), module.__dict__)  # noqa: S102
    return module.__dict__


@pytest.fixture(scope="module")
def monkeypatch_module() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def frame(spark: SparkSession, items: Sequence[InputItem[Any]], schema: str,
          fields: Callable[[Any], tuple[Any, ...]]) -> DataFrame:
    """One row per event: its arrival (the list position), its start and its payload's fields."""
    rows = []
    for i, item in enumerate(items):
        assert isinstance(item, sq.Insert)
        rows.append((i, item.start, *fields(item.payload)))
    return spark.createDataFrame(rows, "arrival long, ts timestamp, " + schema)


def test_the_page_has_the_queries_it_runs(page: dict[str, Any]) -> None:
    for name in QUERIES:
        assert isinstance(page[name], sq.Stream), name


@pytest.mark.slow  # a Spark run per query
@pytest.mark.parametrize("name", list(QUERIES))
def test_the_page_queries_release_on_spark_what_the_page_shows(name: str, page: dict[str, Any],
                                                               spark: SparkSession) -> None:
    items_name, settings_name, shape, reads_logins = QUERIES[name]
    query: sq.Stream[Any] = page[name]
    items: list[InputItem[Any]] = page[items_name]
    settings: sq.AdvanceTimeSettings = page[settings_name]
    inputs = {"withdrawals": sq.reference.ReferenceInput(items, settings)}
    binder = sq.Binder(spark).bind(page["withdrawals"],
                                   frame(spark, items, "name string, account long, amount long",
                                         lambda w: (w.name, w.account, w.amount)),
                                   start="ts", arrival="arrival", advance_time=settings)
    if reads_logins:
        inputs["logins"] = sq.reference.ReferenceInput(page["LOGINS"], page["from_withdrawals"])
        binder = binder.bind(page["logins"],
                             frame(spark, page["LOGINS"], "name string, account long", lambda l: (l.name, l.account)),
                             start="ts", arrival="arrival", advance_time=page["from_withdrawals"])
    expected = sq.reference.run(query, inputs, output=shape)
    actual = binder.run(query, output=shape)
    assert expected.events or expected.edges
    assert (actual.events, actual.edges, actual.final_cti, actual.dropped) == \
        (expected.events, expected.edges, expected.final_cti, expected.dropped)
