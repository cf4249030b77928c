"""How deep the tests go: the one place the property tests' example counts come from.

Two tiers, by pytest's own means:

- the **default tier** — ``pytest -q``, the README's test command — runs every hand-worked test of
  the reference evaluator and one or two hand-worked cases of each kind on Spark (the others of a
  kind are marked ``slow``: ``tiered`` marks a parametrized test's values), the examples, the
  documentation, a Structured Streaming smoke test and a few examples of every property test (a
  fifth of its standard count ``n``, at least 2; half that, at least one, for a Spark property test)
  but those of micro-batches, of which it runs one
  (``test_one_input_pipelines_in_micro_batches_equal_reference``; a micro-batch example costs 10-30
  s), and leaves out the tests marked ``slow`` (``addopts`` in ``pyproject.toml`` deselects them;
  docs/decisions.md, "Continuous integration's time");
- the **deep tier** — ``STREAMQL_DEPTH=deep pytest -q -m "slow or hypothesis"``, which ``.ci/run``
  runs after the default tier — runs the ``slow`` tests (restarts, kill -9, local-cluster, the site
  build, ...) and every property test again with new random examples: the reference evaluator's
  (``examples``) the rest of ``n``, the Spark property tests (``spark_examples``) the rest of
  ``DEPTH * n`` inputs (``DEPTH`` = 5: five times the standard counts; it was 10 until the
  compatibility matrix joined ``.ci/run``, whose 60 minutes it shares: docs/decisions.md,
  "Continuous integration's time").

The standard counts are those the suite ran before it had tiers. A Spark example costs 1.5-3 s of
Spark jobs in one batch run and 10-30 s in micro-batches on two cores, almost all of it the jobs'
and the planner's fixed cost, not the rows: five times the standard counts, one input per run, would
make the deep tier take hours. So an example of a Spark property test in the deep tier lays
``PARTS`` (25) random inputs **side by side in time** (``side_by_side`` in
tests/support/streams.py): the inputs the strategy draws, the ``i``-th moved ``i * SPACING``
later, in arrival order one after the other, checked by one Spark run (or one micro-batch run)
against the reference evaluator on the whole. The parts of one example share its query, settings,
partitioning and micro-batch cuts; the gaps between them are wider than any lifetime, window,
shift, gap or ``within`` the generators draw, so that most operators treat each part as an input of
its own (count windows, ``keep_last``, ``length_batch``, signals, as-of joins and patterns without
``within`` reach from one part into the next, and so do generated CTIs, which depend on the events
before them: there the whole is one longer input — still one the two engines must agree on; and
before the flush a later part's CTIs release what an earlier part alone holds back).
tests/reference/test_side_by_side.py checks the packing and that the gaps are wide enough. A run
of 25 parts costs about a fifth more than a run of one (the micro-batch tests of edges up to twice
as much).

``STREAMQL_EXAMPLES=k`` multiplies the counts of either tier by ``k``, for a longer run by hand;
``STREAMQL_PARTS=p`` lays ``p`` inputs side by side instead (``1``: the deep tier one input a run).
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Collection, Iterable, Sequence, TypeVar, cast

import pytest

T = TypeVar("T")

#: the deep tier is running (``STREAMQL_DEPTH=deep``)
DEEP = os.environ.get("STREAMQL_DEPTH", "default") == "deep"
#: a multiplier for a longer run by hand
MULTIPLIER = int(os.environ.get("STREAMQL_EXAMPLES", "1"))
#: how many random inputs a Spark property test's example lays side by side in time
#: (``side_by_side``): 25 in the deep tier, one in the default tier
PARTS = int(os.environ.get("STREAMQL_PARTS", "25" if DEEP else "1"))
#: how many times its standard count of inputs a Spark property test checks in both tiers together
DEPTH = 5


def default_runs(n: int, least: int) -> int:
    """The default tier's example count for the standard count ``n``: ``n // 5``, at least ``least``."""
    return max(least, n // 5)


def deep_runs(n: int, least: int, parts: int) -> int:
    """The deep tier's runs of ``parts`` inputs that, after the default tier's runs of one input,
    make ``DEPTH * n`` inputs (at least one run)."""
    return max(1, math.ceil((DEPTH * n - spark_default_runs(n, least)) / parts))


def spark_default_runs(n: int, least: int) -> int:
    """The default tier's run count of a Spark property test: half the default count (at least one),
    so that the README's test command stays within ten minutes on two cores; the deep tier runs
    the rest."""
    return max(1, default_runs(n, least) // 2)


def examples(n: int, least: int = 2) -> int:
    """The example count of a property test of the reference evaluator (or of anything that is not
    a Spark run over random inputs) whose standard count is ``n``: ``n // 5`` (at least ``least``)
    in the default tier; in the deep tier, which runs after it, the rest of ``n`` (at least one);
    times ``STREAMQL_EXAMPLES``."""
    default = default_runs(n, least)
    return MULTIPLIER * (max(1, n - default) if DEEP else default)


def spark_examples(n: int, least: int = 2) -> int:
    """The example count of a Spark property test whose standard count is ``n`` and whose examples
    draw their inputs through ``side_by_side``: half of ``n // 5`` (at least ``least``; the
    micro-batch tests, 10-30 s an example, take ``least=1``) runs of one input, at least one, in the
    default tier (``spark_default_runs``); in the deep
    tier enough runs of ``PARTS`` inputs that both tiers together check at least ``DEPTH * n``
    inputs; times ``STREAMQL_EXAMPLES``."""
    return MULTIPLIER * (deep_runs(n, least, PARTS) if DEEP else spark_default_runs(n, least))


def tiered(values: Iterable[T], *, deep: Collection[str] | None = None, default: Collection[str] | None = None,
           name: Callable[[T], str] = str, unpack: bool = False, named: bool = False) -> list[Any]:
    """A parametrize list of ``values`` in which the values the deep tier alone runs are marked
    ``slow``: those whose ``name`` is in ``deep``, or (given ``default`` instead) those whose name is
    not in ``default``. Raises ``ValueError`` when ``deep`` or ``default`` names no value (a renamed
    case would otherwise move tiers unseen). ``unpack``: each value is a tuple of the test's
    arguments; ``named``: the value's name is its test id."""
    if (deep is None) == (default is None):
        raise ValueError("tiered takes deep or default, one of them")
    values = list(values)
    names = [name(v) for v in values]
    listed = set(deep if deep is not None else default or ())
    unknown = listed - set(names)
    if unknown:
        raise ValueError(f"tiered: no value is named {sorted(unknown)}")
    out: list[Any] = []
    for value, n in zip(values, names):
        slow = n in listed if deep is not None else n not in listed
        args: Sequence[Any] = cast("Sequence[Any]", value) if unpack else (value,)
        out.append(pytest.param(*args, id=n if named else None, marks=[pytest.mark.slow] if slow else []))
    return out
