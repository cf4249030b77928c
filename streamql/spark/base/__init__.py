"""What every layer of the compiler shares: the internal column names (``columns``), payload
schemas as Spark types and values (``schema``), traced expressions as Spark Columns
(``expressions``) and window aggregates as Spark aggregate expressions (``aggregates``). Nothing
here imports another part of ``streamql.spark``."""
