"""What a run must release: the checks that keep a property test from passing on an empty output.

"Nothing released is ever withdrawn" and "Spark releases what the reference releases" both hold
for an evaluator that releases nothing until the flush, or nothing at all. These checks tie what a
run releases at a finite output CTI to the meaning of the query:

- **the flush closes nothing early, holds nothing back**: the same inputs followed by a flush (a
  final CTI ``INFINITY`` on every input, ``flushed``) are a continuation that respects the CTIs, so
  the propagation rule (docs/ctis-and-release.md#cti-propagation-through-operators) — output before
  the output CTI ``c`` is final — says that the
  flushed run holds exactly the same output before ``c``. Hence the run at ``c`` releases
  *everything* the flushed run holds wholly before ``c`` (an interval ending before ``c``, a point
  or a START edge at a start before ``c``, an END edge before ``c``), and nothing that the flushed
  run does not hold. This is the "flushed prefix" check of issue 23, with the whole run of the
  prefix as the one it is compared with; ``check_release`` makes it;
- **the flush moves the output CTI to INFINITY**: with every input at ``INFINITY`` every
  propagation rule gives ``INFINITY`` (the CTI moves forward when the inputs' do);
- **the flushed run releases its whole result in every shape**: at ``INFINITY`` every head and
  every end is stable, so the INTERVAL events, the points and the START edges are the same
  (start, payload) pairs, and every event with a finite end has its END edge
  (``check_flushed_shapes``, for the reference tests, where runs are cheap).

What the flushed run holds is the query's meaning; it is pinned down by the brute-force
definitions (tests/reference/test_brute_force.py: as-of joins, signals, session and count windows),
the stateless chains' exact check (tests/reference/test_release_is_final.py) and the hand-worked
cases. A count of non-empty outputs over the examples would prove less: it says some example
released something, not that each released what it must.

A Spark property test calls ``check_release`` once after its equality assertion: Spark equals the
reference there, so Spark releases what must be released too.

>>> check_release(q, {"in": ReferenceInput(items, settings)}, sq.Shape.INTERVAL)  # doctest: +SKIP
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Hashable, Mapping

import attrs

import streamql as sq
from streamql.reference import ReferenceInput

#: a CTI generation that never generates within a test's input: only its flush counts
_FLUSH_ONLY = sq.AdvanceTimeGeneration(every_events=10**9, flush=True)


def flushed(inputs: Mapping[str, ReferenceInput[Any]]) -> dict[str, ReferenceInput[Any]]:
    """The same inputs followed by a flush: a final CTI ``INFINITY`` after every input's last item
    (nothing else changes: the same CTI rows, generation, import and policy)."""
    result = {}
    for name, given in inputs.items():
        settings = given.advance_time
        if settings is None:
            settings = sq.AdvanceTimeSettings(_FLUSH_ONLY, policy=sq.AdvanceTimePolicy.DROP)
        elif settings.generation is None:
            settings = attrs.evolve(settings, generation=_FLUSH_ONLY)
        else:
            settings = attrs.evolve(settings, generation=attrs.evolve(settings.generation, flush=True))
        result[name] = ReferenceInput(given.events, settings, given.bad_rows)
    return result


def released(result: sq.Result[Any], output: sq.Shape) -> Counter[Hashable]:
    """What a run released, as a multiset: (start, end, payload) per event, (kind, time, start,
    payload) per edge."""
    if output is sq.Shape.EDGE:
        return Counter((e.kind, e.time, e.start, e.payload) for e in result.edges)
    return Counter((e.start, e.end, e.payload) for e in result.events)


def before(items: Counter[Hashable], cti: datetime | None, output: sq.Shape) -> Counter[Hashable]:
    """The released items that lie wholly before the output CTI ``cti``: an INTERVAL event that
    ends before it, a point or an edge at a time before it (an end *at* the CTI may still grow)."""
    if cti is None:
        return Counter()
    if output is sq.Shape.EDGE:
        return Counter({item: n for item, n in items.items() if item[1] < cti})  # type: ignore[index]
    if output is sq.Shape.POINT:
        return Counter({item: n for item, n in items.items() if item[0] < cti})  # type: ignore[index]
    return Counter({item: n for item, n in items.items() if item[1] < cti})  # type: ignore[index]


def check_release(q: sq.Stream[Any], inputs: Mapping[str, ReferenceInput[Any]], output: sq.Shape,
                  result: sq.Result[Any] | None = None) -> sq.Result[Any]:
    """The run of ``q`` over ``inputs`` (``result``, if the caller has it) releases exactly what the
    flushed run holds before the run's output CTI, and nothing the flushed run does not hold; the
    flushed run's CTI is ``INFINITY``. Returns the flushed run's result."""
    if result is None:
        result = sq.reference.run(q, inputs, output)
    ended = sq.reference.run(q, flushed(inputs), output)
    assert ended.final_cti == sq.INFINITY, f"the flushed run's output CTI is {ended.final_cti}, not INFINITY"
    now, whole = released(result, output), released(ended, output)
    withdrawn = now - whole
    assert not withdrawn, f"released at CTI {result.final_cti} but not in the flushed run: {withdrawn}"
    missing = before(whole, result.final_cti, output) - now
    assert not missing, f"final before the output CTI {result.final_cti} but not released: {missing}"
    return ended


def check_flushed_shapes(q: sq.Stream[Any], inputs: Mapping[str, ReferenceInput[Any]]) -> int:
    """The flushed run releases its whole result in every output shape: the INTERVAL events, the
    points and the START edges have the same (start, payload) pairs, and every event with a finite
    end has its END edge. Returns how many events it releases."""
    ended = flushed(inputs)
    intervals = sq.reference.run(q, ended, sq.Shape.INTERVAL).events
    points = sq.reference.run(q, ended, sq.Shape.POINT).events
    edges = sq.reference.run(q, ended, sq.Shape.EDGE).edges
    heads = Counter((e.start, e.payload) for e in intervals)
    assert Counter((e.start, e.payload) for e in points) == heads, "points and intervals differ after the flush"
    assert Counter((e.start, e.payload) for e in edges if e.kind is sq.EdgeKind.START) == heads, \
        "START edges and intervals differ after the flush"
    assert Counter((e.time, e.start, e.payload) for e in edges if e.kind is sq.EdgeKind.END) == Counter(
        (e.end, e.start, e.payload) for e in intervals if e.end != sq.INFINITY), \
        "END edges and finite ends differ after the flush"
    return len(intervals)
