"""Many queries over one scan: ``Binder.run_many`` returns under each name exactly what ``run`` of
that query alone returns (random sets of queries over shared inputs, sharing prefixes, in every
output shape), scans each input once for all of them, names the query an error comes from; and
``write_many`` writes what ``write`` writes."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
import streamql.spark.ingress.imports
from streamql.spark.windows import hopping
from streamql.spark.windows import grouping as spark_windows
from streamql.spark.ingress.scan import run_ingress
from support.frames import bind, frame
from support.depth import spark_examples
from support.streams import P, SPARK_EXAMPLES, advance_settings, build, inputs, pipelines, side_by_side, Tied, us



@dataclass(frozen=True)
class Count:
    k: int
    n: int
    total: Optional[int]


def counts(w: sq.GroupWindow[int, P]) -> Count:
    return Count(w.key, w.count(), w.sum(lambda e: e.o))


@st.composite
def windows(draw: st.DrawFn) -> Callable[[sq.Stream[P]], sq.Stream[Any]]:
    """A window to put over a stream (as tests/streaming/test_steps_against_reference.py draws
    them): the same one, as equal nodes, over every stream it is applied to."""
    kind = draw(st.sampled_from(["snapshot", "grouped snapshot", "hopping", "tumbling", "count", "group_apply"]))
    size, hop = us(draw(st.integers(1, 30))), us(draw(st.integers(1, 30)))
    n = draw(st.integers(1, 3))
    if kind == "snapshot":
        return lambda q: q.snapshot_window().select(lambda w: Count(0, w.count(), w.max(lambda e: e.v)))
    if kind == "grouped snapshot":
        return lambda q: q.group_by(lambda e: e.k % 3).snapshot_window().select(counts)
    if kind == "hopping":
        return lambda q: q.group_by(lambda e: e.k % 3).hopping_window(size, hop).select(counts)
    if kind == "tumbling":
        return lambda q: q.tumbling_window(size).select(lambda w: Count(1, w.count(), w.sum(lambda e: e.v)))
    if kind == "count":
        return lambda q: q.group_by(lambda e: e.k % 3).count_window(n).select(counts)
    return lambda q: q.group_apply(lambda e: e.k % 2, lambda s: s.alter_duration(size).snapshot_window().select(
        lambda w: Count(0, w.count(), w.min(lambda e: e.v))), lambda key, c: Count(key, c.n, c.total))


#: filters for queries that differ only in them: comparisons with constants (one hash lookup in the
#: filter index) and others
FILTERS: list[Callable[[sq.Stream[P]], sq.Stream[P]]] = [
    lambda q: q.where(lambda e: e.k == 1),
    lambda q: q.where(lambda e: e.k == 3),
    lambda q: q.where(lambda e: e.s == "a"),
    lambda q: q.where(lambda e: e.s == "ab"),
    lambda q: q.where(lambda e: e.o == 2),
    lambda q: q.where(lambda e: e.v > 3),
    lambda q: q.where(lambda e: (e.k % 3 == 0) | sq.is_null(e.o)),
]


@st.composite
def query_sets(draw: st.DrawFn, a: sq.Stream[P], b: sq.Stream[P]) -> dict[str, sq.Stream[Any]]:
    """Two to four queries built from one common prefix over ``a``. Either the same operators over
    different filters of the prefix (``where(meter == m_i)`` then a window, for several ``m_i``),
    or each goes on with a pipeline of its own, maybe a window, maybe a union or join with ``b``;
    a query may be the prefix itself or a copy of another (equal queries)."""
    prefix = build(a, draw(pipelines(), label="prefix"))
    queries: dict[str, sq.Stream[Any]] = {}
    if draw(st.booleans(), label="filtered"):
        filters = draw(st.lists(st.integers(0, len(FILTERS) - 1), min_size=2, max_size=4, unique=True), label="filters")
        ops = draw(pipelines(), label="after the filter")
        window = draw(st.one_of(st.none(), windows()), label="window")
        for number, f in enumerate(filters):
            q = build(FILTERS[f](prefix), ops)
            queries[f"q{number}"] = q if window is None else window(q)
        return queries
    for number in range(draw(st.integers(2, 4), label="queries")):
        kind = draw(st.sampled_from(["pipeline", "window", "union", "join", "prefix", "copy"]), label=f"q{number}")
        if kind == "copy" and queries:
            queries[f"q{number}"] = draw(st.sampled_from(list(queries.values())))
            continue
        q = build(prefix, draw(pipelines(), label=f"q{number} pipeline")) if kind != "prefix" else prefix
        if kind == "window":
            queries[f"q{number}"] = draw(windows(), label=f"q{number} window")(q)
        elif kind == "union":
            queries[f"q{number}"] = q.union(b.where(lambda e: e.v > 1))
        elif kind == "join":
            queries[f"q{number}"] = q.join(b, lambda l, r: l.k == r.k, lambda l, r: P(l.k, r.v, l.s, r.o))
        else:
            queries[f"q{number}"] = q
    return queries


@settings(SPARK_EXAMPLES, max_examples=spark_examples(5))
@given(data=st.data())
def test_run_many_returns_what_each_query_returns_alone(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    a, b = sq.input("a", P, shape), sq.input("b", P, sq.Shape.INTERVAL)
    binder = sq.Binder(spark)
    for stream, its_shape in ((a, shape), (b, sq.Shape.INTERVAL)):
        items = data.draw(side_by_side(inputs(its_shape, open_ends=True)), label=f"{stream.node} items")
        binder = bind(binder, stream, frame(spark, P, its_shape, items), its_shape,
                      data.draw(advance_settings(), label=f"{stream.node} settings"), bad_rows="drop")
    queries = data.draw(query_sets(a, b), label="queries")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    for name, q in queries.items():
        note(f"{name}: {q.node!r}")
    together = binder.run_many(queries, output)
    assert list(together) == list(queries)
    for name, q in queries.items():
        assert together[name] == binder.run(q, output), name


READING = sq.input("readings", P)
TARIFFS = sq.input("tariffs", P, sq.Shape.INTERVAL)
EVERY_2 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2, delay=us(3), flush=True),
                                 policy=sq.AdvanceTimePolicy.DROP)
ITEMS = [sq.Insert(t, t + 1, P(t % 4, t % 5, "a" if t % 2 else "b", None)) for t in (1, 5, 2, 9, 14, 3, 20, 21, 30)]


@pytest.fixture(scope="module")
def shared(spark: SparkSession) -> sq.Binder:
    """Readings (one of them late: dropped) and tariffs, whose CTIs are the readings' too."""
    tariffs = [sq.Insert(0, 12, P(1, 2, "peak", 3)), sq.Insert(12, 40, P(2, 1, "off", None))]
    return (bind(sq.Binder(spark), READING, frame(spark, P, sq.Shape.POINT, ITEMS), sq.Shape.POINT, EVERY_2)
            .bind(TARIFFS, frame(spark, P, sq.Shape.INTERVAL, tariffs), start="start", end="end",
                  advance_time=sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("readings"))))


def test_each_input_is_scanned_once_for_all_the_queries(shared: sq.Binder, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []

    def counting(b: Any, *args: Any, **kwargs: Any) -> Any:
        scanned.append(b.name)
        return run_ingress(b, *args, **kwargs)

    monkeypatch.setattr(streamql.spark.ingress.imports, "run_ingress", counting)
    busy = READING.where(lambda e: e.v > 1)
    queries: dict[str, sq.Stream[Any]] = {
        "busy": busy,
        "busy-k": busy.where(lambda e: e.k == 1),
        "counts": busy.tumbling_window(us(10)).select(lambda w: Count(0, w.count(), w.sum(lambda e: e.o))),
        "priced": busy.join(TARIFFS, None, lambda r, t: P(r.k, t.v, t.s, r.v)),
    }
    together = shared.run_many(queries)
    # the readings once (the tariffs import their CTIs), the tariffs once
    assert sorted(scanned) == ["readings", "tariffs"]
    scanned.clear()
    alone = {name: shared.run(q) for name, q in queries.items()}
    assert together == alone
    assert sorted(scanned) == ["readings"] * 4 + ["tariffs"]
    # counts are over the inputs each query reads: the late readings are dropped in all of them
    assert [r.dropped for r in together.values()] == [alone["busy"].dropped] * 4 and alone["busy"].dropped > 0


def test_shared_sub_queries_are_compiled_once(shared: sq.Binder, monkeypatch: pytest.MonkeyPatch) -> None:
    formed: list[int] = []
    original = hopping.hopping_windows

    def counting(*args: Any, **kwargs: Any) -> Any:
        formed.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(spark_windows, "hopping_windows", counting)
    counts = READING.group_by(lambda e: e.k).hopping_window(us(10), us(5)).select(
        lambda w: Count(w.key, w.count(), w.sum(lambda e: e.o)))
    queries: dict[str, sq.Stream[Any]] = {"big": counts.where(lambda c: c.n > 1), "all": counts,
                                          "small": counts.where(lambda c: c.n <= 1)}
    together = shared.run_many(queries)
    assert formed == [1]
    assert together == {name: shared.run(q) for name, q in queries.items()}


@pytest.mark.slow  # the deep tier (the default tier's budget): run_many's other tests stay there
def test_queries_that_differ_in_a_filter_run_as_one_grouped_query(shared: sq.Binder,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    formed: list[int] = []
    original = hopping.hopping_windows

    def counting(*args: Any, **kwargs: Any) -> Any:
        formed.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(spark_windows, "hopping_windows", counting)

    def counts_of(k: int) -> sq.Stream[Count]:
        return READING.where(lambda e: e.k == k).hopping_window(us(10), us(5)).select(
            lambda w: Count(0, w.count(), w.sum(lambda e: e.o)))

    queries: dict[str, sq.Stream[Any]] = {f"k{k}": counts_of(k) for k in range(3)}
    # the same windows over other filters, then operators of their own
    queries["k3 shifted"] = counts_of(3).shift(us(2))
    queries["odd, many"] = READING.where(lambda e: e.v % 2 == 1).hopping_window(us(10), us(5)).select(
        lambda w: Count(0, w.count(), w.sum(lambda e: e.o))).where(lambda c: c.n > 1)
    for output in sq.Shape:
        formed.clear()
        together = shared.run_many(queries, output)
        # the windows are one query grouped by the filters
        assert formed == [1]
        assert together == {name: shared.run(q, output) for name, q in queries.items()}


def test_an_empty_mapping_runs_nothing(shared: sq.Binder) -> None:
    assert shared.run_many({}) == {}
    assert shared.write_many({}, {}) == {}


def test_an_error_in_one_query_names_it(spark: SparkSession, shared: sq.Binder) -> None:
    other = sq.input("other", P)
    with pytest.raises(sq.BindingError, match=r"^query 'lost': the query reads inputs that are not bound: other$"):
        shared.run_many({"fine": READING, "lost": other.where(lambda e: e.v > 1)})
    as_interval = sq.input("readings", P, sq.Shape.INTERVAL)
    with pytest.raises(sq.BindingError, match=r"^query 'wrong': input 'readings' is bound as P/POINT"):
        shared.run_many({"fine": READING, "wrong": as_interval})
    with pytest.raises(sq.BindingError, match=r"^query 'x': expected a query \(sq.Stream\), got 3$"):
        shared.run_many({"fine": READING, "x": 3})  # type: ignore[dict-item]
    with pytest.raises(sq.BindingError, match="output must be a sq.Shape"):
        shared.run_many({"fine": READING}, "EDGE")  # type: ignore[arg-type]
    # a bad row while scanning an input names the queries that read it
    bad = spark.createDataFrame([(None, None, "INSERT", 0, 1, 2, "a", None)],
                                "start long, end long, kind string, arrival long, k long, v long, s string, o long")
    binder = bind(sq.Binder(spark), READING, bad, sq.Shape.POINT, EVERY_2)
    with pytest.raises(sq.BadInputError, match=r"^queries 'a', 'b': input 'readings': bad row"):
        binder.run_many({"a": READING, "b": READING.where(lambda e: e.v > 1)})


def tumbling_counts(q: sq.Stream[P]) -> sq.Stream[Count]:
    return q.tumbling_window(us(10)).select(lambda w: Count(0, w.count(), w.sum(lambda e: e.o)))


# the deep tier (~15 s each): run_many's own test above reads the same scan in the default tier
@pytest.mark.slow
@pytest.mark.parametrize("format", ["parquet", "csv"])
def test_write_many_writes_what_write_writes(spark: SparkSession, shared: sq.Binder, tmp_path: Path,
                                             format: str) -> None:
    queries: dict[str, sq.Stream[Any]] = {
        "busy": READING.where(lambda e: e.v > 1),
        "counts": tumbling_counts(READING),
        # the same window over filters: one grouped query, written in one job, then renamed per query
        **{f"k{k}": tumbling_counts(READING.where(lambda e: e.k == k)) for k in (0, 1, 2, 99)},  # k 99: nothing
    }
    paths = {name: str(tmp_path / "many" / name) for name in queries}
    # a path that exists: with mode overwrite its old content goes
    shared.write(queries["busy"], paths["k1"], format=format)
    together = shared.write_many(queries, paths, format=format, mode="overwrite")
    read = spark.read.format(format).options(header="true", inferSchema="true")
    for name, q in queries.items():
        alone = shared.write(q, str(tmp_path / "one" / name), format=format)
        assert together[name] == alone and together[name].events == []
        written = read.load(paths[name])
        expected = read.load(str(tmp_path / "one" / name))
        assert written.columns == expected.columns
        assert sorted(written.collect()) == sorted(expected.collect()), name
        assert (tmp_path / "many" / name / "_SUCCESS").exists()
    assert sorted(p.name for p in (tmp_path / "many").iterdir()) == sorted(queries)  # no staging left
    with pytest.raises(Exception, match="already exists"):
        shared.write_many(queries, paths, format=format)


def test_the_paths_of_write_many_must_name_the_queries(shared: sq.Binder, tmp_path: Path) -> None:
    queries: dict[str, sq.Stream[Any]] = {"a": READING, "b": READING.where(lambda e: e.v > 1)}
    with pytest.raises(sq.BindingError, match=r"the keys of paths must be the query names \('a', 'b'\); no path for "
                                              r"'b'; paths for no query: 'c'"):
        shared.write_many(queries, {"a": str(tmp_path / "a"), "c": str(tmp_path / "c")})
    with pytest.raises(sq.BindingError, match=r"^query 'b': CSV cannot hold nested payloads"):
        shared.write_many({"a": READING, "b": sq.input("tied", Tied)}, {"a": str(tmp_path / "a"),
                                                                        "b": str(tmp_path / "b")}, format="csv")
    assert not (tmp_path / "a").exists()  # nothing ran
