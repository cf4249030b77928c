"""keep_last, time_batch and length_batch on Spark: the semantics are ``streamql.reference.esper``."""
from __future__ import annotations
