"""A DataFrame whose plan is made when first asked for (``Deferred.frame``), then kept.

Building a plan is driver work: every DataFrame operation is analysed over the whole plan, so the
frames most runs never read — an input's late records (``streamql.spark.ingress.late``), the
frames of an EDGE input's matching that only a live step reads (``MatchedEdges``) — are deferred,
and a run that does not read them does none of it.

>>> records = Deferred(lambda: bad_rows(prepared, arrival, payload))  # doctest: +SKIP
>>> records.then(lambda frame: with_went_back(frame, cause)).frame   # doctest: +SKIP
"""
from __future__ import annotations

from typing import Callable

import attrs
from pyspark.sql import DataFrame


@attrs.define(eq=False)
class Deferred:
    """A DataFrame made by ``build`` the first time ``frame`` is read."""

    build: Callable[[], DataFrame]
    _frame: DataFrame | None = attrs.field(default=None, init=False)

    @property
    def frame(self) -> DataFrame:
        """The DataFrame (made now, the first time)."""
        if self._frame is None:
            self._frame = self.build()
        return self._frame

    def then(self, step: Callable[[DataFrame], DataFrame]) -> Deferred:
        """This DataFrame through ``step``, deferred as well."""
        return Deferred(lambda: step(self.frame))


__all__ = ["Deferred"]
