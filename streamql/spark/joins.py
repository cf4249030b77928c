"""join, anti_join, clip and union on Spark (DESIGN §6): the semantics are
``streamql.reference.joins``."""
from __future__ import annotations
