"""How deep the tests go: the one place the property tests' example counts come from.

Two tiers, by pytest's own means:

- the **default tier** — ``pytest -q``, the README's test command — runs every hand-worked test,
  the examples, the documentation, a Structured Streaming smoke test and a few examples of every
  property test (``examples(n)``: a fifth of ``n``, at least 2, or 1 for a micro-batch test), and leaves out the tests marked
  ``slow`` (``addopts`` in ``pyproject.toml`` deselects them);
- the **deep tier** — ``STREAMQL_DEPTH=deep pytest -q -m "slow or hypothesis"``, which ``.ci/run``
  runs after the default tier — runs the ``slow`` tests (restarts, kill -9, local-cluster, the site
  build, ...) and every property test again with the rest of ``DEEP_FACTOR`` times its standard
  count ``n`` (new random examples: the two tiers together run ``DEEP_FACTOR * n``).

The standard counts are those the suite ran before it had tiers. ``DEEP_FACTOR`` is 1 for now: an
example costs 1.5-3 s of Spark jobs in one batch run and 10-30 s in micro-batches on two cores, so
ten times the standard counts would make the deep tier take hours; ``STREAMQL_EXAMPLES=10`` runs
them by hand.

``STREAMQL_EXAMPLES=k`` multiplies the counts of either tier by ``k``, for a longer run by hand.
"""
from __future__ import annotations

import os

#: the deep tier is running (``STREAMQL_DEPTH=deep``)
DEEP = os.environ.get("STREAMQL_DEPTH", "default") == "deep"
#: a multiplier for a longer run by hand
MULTIPLIER = int(os.environ.get("STREAMQL_EXAMPLES", "1"))
#: how many times a property test's standard count the deep tier runs (see above)
DEEP_FACTOR = 1


def examples(n: int, least: int = 2) -> int:
    """The example count of a property test whose standard count is ``n``: ``n // 5`` (at least
    ``least``) in the default tier; in the deep tier, which runs after it, the rest of
    ``DEEP_FACTOR * n`` (at least one), so that the two tiers together run ``DEEP_FACTOR * n``
    examples; times ``STREAMQL_EXAMPLES``. The micro-batch property tests (10-30 s an example:
    every step is a Spark query) take ``least=1``."""
    default = max(least, n // 5)
    return MULTIPLIER * (max(1, DEEP_FACTOR * n - default) if DEEP else default)
