"""Released output is final (docs/ctis-and-release.md#stability-and-the-release-rule): for every
arrival prefix of a random input, what the
reference evaluator releases over the prefix is contained in what it releases over every longer
prefix — an event or edge once released is never withdrawn, an INTERVAL lifetime never changes —
and the output CTI never moves back. Random queries of every operator family, all three output
shapes, random advance-time settings (ADJUST and imports among them) and edge inputs.

A prefix is a run that has not ended (no flush); the whole input is then run as given. Each run
also releases what it must (``support.must_release``): everything the same run, flushed, holds
before the run's output CTI — an evaluator that held output back until the flush would fail —
and the flushed run's output CTI is INFINITY, its whole result released in every output shape.
Stateless chains are checked exactly: at every prefix they release the image of the accepted
events that starts before the output CTI, and that CTI is the input's moved by the chain's shifts.
Its example counts come from ``support.depth`` (more in the deep tier)."""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Callable, Hashable

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import streamql as sq
from streamql.query.nodes import inputs_of
from streamql.reference import ReferenceInput
from streamql.time import INFINITY_MICROS, from_micros, to_micros
from support.streams import P, advance_settings, build, crowded_inputs, edge_items, inputs, pipelines, us
from support.depth import examples
from support.must_release import check_flushed_shapes, check_release

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ONS = [None, lambda l, r: l.k == r.k, lambda l, r: (l.k % 2 == r.k % 2) & (l.v >= r.v),
       lambda l, r: l.s != r.s]


@st.composite
def unary(draw: st.DrawFn, q: sq.Stream[P]) -> sq.Stream[P]:
    """One operator of one input that keeps the payload type ``P``."""
    kind = draw(st.sampled_from(["pipeline", "snapshot", "grouped snapshot", "hopping", "tumbling", "count",
                                 "group_apply", "keep_last", "length_batch", "time_batch", "session",
                                 "grouped session", "to_signal"]))
    grouped = q.group_by(lambda e: e.k % 3)
    if kind == "pipeline":
        return build(q, draw(pipelines()))
    if kind == "snapshot":
        return q.snapshot_window().select(lambda w: P(0, w.count(), "w", w.max(lambda e: e.v)))
    if kind == "grouped snapshot":
        return grouped.snapshot_window().select(lambda w: P(w.key, w.count(), "g", w.sum(lambda e: e.o)))
    if kind == "hopping":
        return grouped.hopping_window(us(draw(st.integers(1, 30))), us(draw(st.integers(1, 30)))).select(
            lambda w: P(w.key, w.count(), "h", w.min(lambda e: e.v)))
    if kind == "tumbling":
        return q.tumbling_window(us(draw(st.integers(1, 30)))).select(lambda w: P(1, w.count(), "t", w.sum(lambda e: e.v)))
    if kind == "count":
        return grouped.count_window(draw(st.integers(1, 3))).select(lambda w: P(w.key, w.count(), "c", None))
    if kind == "group_apply":
        inner = us(draw(st.integers(1, 20)))
        return q.group_apply(lambda e: e.k % 2, lambda s: s.alter_duration(inner).snapshot_window().select(
            lambda w: P(0, w.count(), "a", w.min(lambda e: e.v))), lambda key, p: P(key, p.v, p.s, p.o))
    if kind == "session":
        longest = draw(st.one_of(st.none(), st.integers(1, 8)))
        return q.session_window(us(draw(st.integers(1, 6))), None if longest is None else us(longest)).select(
            lambda w: P(0, w.count(), "s", w.max(lambda e: e.v)))
    if kind == "grouped session":
        return grouped.session_window(us(draw(st.integers(1, 6)))).select(
            lambda w: P(w.key, w.count(), "gs", w.sum(lambda e: e.o)))
    if kind == "to_signal":
        return q.to_signal(lambda e: e.k % 2)
    if kind == "keep_last":
        return q.keep_last(draw(st.integers(1, 3)))
    if kind == "length_batch":
        return q.length_batch(draw(st.integers(1, 3)))
    return q.time_batch(us(draw(st.integers(1, 10))))


@st.composite
def queries(draw: st.DrawFn, sources: list[sq.Stream[P]], depth: int = 2) -> sq.Stream[P]:
    """A random query over ``sources``: chains of one-input operators and, below ``depth``, joins,
    anti-joins, clips and unions of sub-queries."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        q = draw(st.sampled_from(sources))
    else:
        left, right = draw(queries(sources, depth - 1)), draw(queries(sources, depth - 1))
        op = draw(st.sampled_from(["join", "anti_join", "clip", "union", "as_of_join"]))
        on = ONS[draw(st.integers(0, len(ONS) - 1))]
        if op == "join":
            q = left.join(right, on, lambda l, r: P(l.k, r.v, l.s, r.o))
        elif op == "anti_join":
            q = left.anti_join(right, on)
        elif op == "clip":
            q = left.clip(right, on or (lambda l, r: l.v >= 0))
        elif op == "as_of_join":
            # an as-of join needs an equality key: the predicates of ONS that have one
            within = draw(st.one_of(st.none(), st.integers(0, 6)))
            keyed = ONS[draw(st.integers(1, 2))]
            assert keyed is not None
            q = left.as_of_join(right, keyed, lambda l, r: P(l.k, r.v, l.s, r.o), None if within is None else us(within))
        else:
            q = left.union(right)
    for _ in range(draw(st.integers(0, 2))):
        q = draw(unary(q))
    return q


small_payloads = st.builds(P, st.integers(0, 2), st.integers(0, 3), st.sampled_from(["a", "b"]),
                           st.one_of(st.none(), st.integers(0, 2)))


@st.composite
def tight_items(draw: st.DrawFn, shape: sq.Shape) -> list[Any]:
    """Up to 14 items crowded into a few ticks, a CTI row about every fourth (rarely INFINITY): late
    events, adjustments to the CTI, boundaries exactly at a CTI and equal starts are common."""
    items: list[Any] = []
    open_: list[tuple[int, P]] = []
    for _ in range(draw(st.integers(0, 14))):
        choice = draw(st.integers(0, 7))
        if choice < 2:
            items.append(sq.Cti(sq.INFINITY if draw(st.integers(0, 12)) == 0 else draw(st.integers(-4, 14))))
        elif shape is sq.Shape.EDGE and choice < 5 and open_:
            start, p = open_.pop(draw(st.integers(0, len(open_) - 1)))
            items.append(sq.EndEdge(start, start + draw(st.integers(1, 8)), p))
        else:
            start, p = draw(st.integers(-5, 12)), draw(small_payloads)
            if shape is sq.Shape.EDGE:
                items.append(sq.StartEdge(start, p))
                open_.append((start, p))
            else:
                length = 1 if shape is sq.Shape.POINT else draw(st.integers(1, 8))
                items.append(sq.Insert(start, sq.INFINITY if draw(st.integers(0, 9)) == 0 and shape is sq.Shape.INTERVAL
                                       else start + length, p))
    return items


@st.composite
def tight_settings(draw: st.DrawFn) -> sq.AdvanceTimeSettings | None:
    if draw(st.integers(0, 4)) == 0:
        return None
    generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 3)), delay=us(draw(st.integers(-1, 2))),
                                          flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


def released(result: sq.Result[Any], output: sq.Shape) -> Counter[Hashable]:
    if output is sq.Shape.EDGE:
        return Counter((e.kind, e.time, e.start, e.payload) for e in result.edges)
    return Counter((e.start, e.end, e.payload) for e in result.events)


def prefix(given_inputs: dict[str, ReferenceInput[Any]], count: int) -> dict[str, ReferenceInput[Any]]:
    return {name: ReferenceInput(i.events[:count], i.advance_time and i.advance_time.without_flush(), i.bad_rows)
            for name, i in given_inputs.items()}


def cti_order(t: datetime | None) -> tuple[int, datetime | None]:
    return (0, None) if t is None else (1, t)


def check_prefixes(q: sq.Stream[Any], given_inputs: dict[str, ReferenceInput[Any]], output: sq.Shape) -> None:
    """The reference over every prefix of the inputs, then over all of them, ended: nothing
    released is withdrawn, the output CTI never moves back; and each run releases what it must
    (``support.must_release``): all that the same run, flushed, holds before its output CTI."""
    note(f"query tree: {q.node!r}")
    used = _used(q, given_inputs)
    length = max((len(i.events) for i in used.values()), default=0)
    before_released: Counter[Hashable] = Counter()
    before_cti: datetime | None = None
    for count in range(length + 2):
        run_inputs = prefix(used, count) if count <= length else used  # the last run is the whole, ended input
        result = sq.reference.run(q, run_inputs, output)
        check_release(q, run_inputs, output, result)
        now = released(result, output)
        withdrawn = before_released - now
        assert not withdrawn, f"released over {count - 1} positions, withdrawn after {count}: {withdrawn}"
        assert cti_order(result.final_cti) >= cti_order(before_cti), f"the output CTI moved back at {count}"
        before_released, before_cti = now, result.final_cti
    check_flushed_shapes(q, used)


@settings(SETTINGS, max_examples=examples(300))
@given(data=st.data())
def test_one_input_chains_never_withdraw(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from(list(sq.Shape)), label="shape")
    source = sq.input("in", P, shape)
    q: sq.Stream[P] = source
    for _ in range(data.draw(st.integers(1, 3), label="operators")):
        q = data.draw(unary(q), label="operator")
    items = data.draw(tight_items(shape), label="items")
    check_prefixes(q, {"in": ReferenceInput(items, data.draw(tight_settings(), label="settings"), "drop")},
                   data.draw(st.sampled_from(list(sq.Shape)), label="output"))


@settings(SETTINGS, max_examples=examples(300))
@given(data=st.data())
def test_two_input_operators_never_withdraw(data: st.DataObject) -> None:
    shapes = [data.draw(st.sampled_from(list(sq.Shape)), label=f"shape {i}") for i in (0, 1)]
    sources = [sq.input(f"in{i}", P, shape) for i, shape in enumerate(shapes)]
    q = data.draw(queries(sources, 1), label="query")
    given_inputs = {f"in{i}": ReferenceInput(data.draw(tight_items(shape), label=f"items {i}"),
                                             data.draw(tight_settings(), label=f"settings {i}"), "drop")
                    for i, shape in enumerate(shapes)}
    check_prefixes(q, given_inputs, data.draw(st.sampled_from(list(sq.Shape)), label="output"))


@settings(SETTINGS, max_examples=examples(100))
@given(data=st.data())
def test_queries_of_every_family_never_withdraw(data: st.DataObject) -> None:
    edge_in = sq.input("e", P, sq.Shape.EDGE)
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    event_in = sq.input("p", P, shape)
    crowded_in = sq.input("c", P, sq.Shape.INTERVAL)
    q = data.draw(queries([edge_in, event_in, crowded_in]), label="query")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    tight = data.draw(st.integers(0, 3), label="tight") > 0
    if tight:
        items = {"e": data.draw(tight_items(sq.Shape.EDGE), label="e items"),
                 "p": data.draw(tight_items(shape), label="p items"),
                 "c": data.draw(tight_items(sq.Shape.INTERVAL), label="c items")}
        given_settings = {name: data.draw(tight_settings(), label=f"{name} settings") for name in items}
    else:
        items = {"e": data.draw(edge_items(), label="e items"),
                 "p": data.draw(inputs(shape, open_ends=True), label="p items"),
                 "c": data.draw(crowded_inputs(sq.Shape.INTERVAL), label="c items")}
        given_settings = {name: data.draw(advance_settings(), label=f"{name} settings") for name in items}
    if data.draw(st.integers(0, 3), label="import") == 0:
        importer, source = data.draw(st.permutations(list(items)), label="import pair")[:2]
        own = given_settings[importer]
        given_settings[importer] = sq.AdvanceTimeSettings(
            None if own is None else own.generation, sq.AdvanceTimeImport(source),
            sq.AdvanceTimePolicy.ADJUST if own is None else own.policy)
    check_prefixes(q, {name: ReferenceInput(items[name], given_settings[name], "drop") for name in items}, output)


def _used(q: sq.Stream[Any], given_inputs: dict[str, ReferenceInput[Any]]) -> dict[str, ReferenceInput[Any]]:
    """The inputs the query reads, and the ones they import CTIs from."""
    names = set(inputs_of(q.node))
    for name in list(names):
        settings_ = given_inputs[name].advance_time
        if settings_ is not None and settings_.import_ is not None:
            names.add(settings_.import_.from_input)
    return {name: given_inputs[name] for name in names}


# --- stateless chains: exactly what lies before the CTI, at every prefix ------------------------

#: one-input operators that keep no state, each with a plain Python twin on (start, end, payload)
Lifetime = tuple[int, int, P]
CHAIN_OPS: list[tuple[str, Callable[[sq.Stream[P]], sq.Stream[P]], Callable[[Lifetime], Lifetime | None], int]] = [
    ("where v > 3", lambda q: q.where(lambda e: e.v > 3), lambda e: e if e[2].v > 3 else None, 0),
    ("where k % 3 == 0 or o null", lambda q: q.where(lambda e: (e.k % 3 == 0) | sq.is_null(e.o)),
     lambda e: e if e[2].k % 3 == 0 or e[2].o is None else None, 0),
    ("select", lambda q: q.select(lambda e: P(e.k + 1, e.v * 2 - e.k, e.s.upper(), e.o)),
     lambda e: (e[0], e[1], P(e[2].k + 1, e[2].v * 2 - e[2].k, e[2].s.upper(), e[2].o)), 0),
    ("alter_duration 4", lambda q: q.alter_duration(us(4)), lambda e: (e[0], e[0] + 4, e[2]), 0),
    ("shift -7", lambda q: q.shift(us(-7)), lambda e: (e[0] - 7, _moved(e[1], -7), e[2]), -7),
    ("shift 5", lambda q: q.shift(us(5)), lambda e: (e[0] + 5, _moved(e[1], 5), e[2]), 5),
    ("alter_lifetime -3 keeping the duration", lambda q: q.alter_lifetime(us(-3)),
     lambda e: (e[0] - 3, _moved(e[1], -3), e[2]), -3),
    ("alter_lifetime 2 for 6", lambda q: q.alter_lifetime(us(2), us(6)), lambda e: (e[0] + 2, e[0] + 8, e[2]), 2),
    ("to_point", lambda q: q.to_point(), lambda e: (e[0], e[0] + 1, e[2]), 0),
]


def _moved(t: int, by: int) -> int:
    return INFINITY_MICROS if t == INFINITY_MICROS else t + by


def _at(t: int) -> datetime:
    return sq.INFINITY if t == INFINITY_MICROS else from_micros(t)


@settings(SETTINGS, max_examples=examples(150))
@given(data=st.data())
def test_stateless_chains_release_exactly_what_starts_before_the_cti(data: st.DataObject) -> None:
    """A chain of where/select/alter_duration/shift/alter_lifetime/to_point over an input with CTI
    rows (no settings: DROP), at every arrival prefix: the output CTI is the input's greatest CTI
    row moved by the chain's start
    shifts (docs/ctis-and-release.md#cti-propagation-through-operators), and the run releases exactly
    the chain's image of the accepted events that starts before it — every accepted input event is
    stable, and so is its image (an INTERVAL lifetime, a point, a START and END edge)."""
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(inputs(shape, open_ends=True), label="items")
    chain = data.draw(st.lists(st.sampled_from(CHAIN_OPS), min_size=1, max_size=4), label="chain")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    q: sq.Stream[P] = sq.input("in", P, shape)
    for _, op, _, _ in chain:
        q = op(q)
    moved = sum(shift for _, _, _, shift in chain)
    for count in range(len(items) + 1):
        cti: int | None = None
        images: list[Lifetime] = []
        for item in items[:count]:
            if isinstance(item, sq.Cti):
                cti = max(to_micros(item.time), cti if cti is not None else to_micros(item.time))
            elif cti is None or to_micros(item.start) >= cti:  # DROP: an event before the CTI is removed
                image: Lifetime | None = (to_micros(item.start), to_micros(item.end), item.payload)
                for _, _, twin, _ in chain:
                    image = None if image is None else twin(image)
                if image is not None:
                    images.append(image)
        result = sq.reference.run(q, {"in": ReferenceInput(items[:count])}, output)
        output_cti = None if cti is None else cti + moved
        assert result.final_cti == (None if output_cti is None else from_micros(output_cti)), f"CTI at {count}"
        final = [e for e in images if output_cti is not None and e[0] < output_cti]
        expected: Counter[Hashable]
        if output is sq.Shape.INTERVAL:
            expected = Counter((_at(s), _at(e), p) for s, e, p in final)
        elif output is sq.Shape.POINT:
            expected = Counter((_at(s), _at(s + 1), p) for s, _, p in final)
        else:
            expected = Counter([(sq.EdgeKind.START, _at(s), _at(s), p) for s, _, p in final]
                               + [(sq.EdgeKind.END, _at(e), _at(s), p) for s, e, p in final if e != INFINITY_MICROS])
        now = released(result, output)
        assert now == expected, f"at {count} items: missing {expected - now}, not final {now - expected}"
