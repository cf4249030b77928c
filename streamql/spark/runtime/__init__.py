"""The Spark side of running: the embedded session (``session``), the check that Spark's Python
workers can import streamql (``workers``), files through Hadoop's FileSystem and DataFrames
written whole or not at all (``files``), counting a step's Spark jobs (``jobs``) and where a run's
time goes (``phases``)."""
