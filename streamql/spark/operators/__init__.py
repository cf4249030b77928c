"""The operators between the ingress and the release: the per-event flow and the registry every
operator compiler joins (``flow``: ``compile_node``, ``Flow``), joins, anti-joins and clips
(``joins``), as-of joins and signals (``as_of``), patterns (``patterns``), sub-queries several queries share (``sharing``),
the release rule (``release``) and ``explain``.

Importing the package registers the multi-stream operators with ``compile_node``.
"""
from streamql.spark.operators import as_of as _as_of  # noqa: F401 - registers as_of_join and to_signal
from streamql.spark.operators import joins as _joins  # noqa: F401 - registers the multi-stream operators
from streamql.spark.operators import patterns as _patterns  # noqa: F401 - registers followed_by and not_followed_by
