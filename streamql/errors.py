"""The exceptions streamql raises: each names what the user should change."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence


class StreamqlError(ValueError):
    """Base class of every streamql error."""


class SchemaError(StreamqlError):
    """A payload type cannot be used: the message names the class and the field path."""


class ExpressionError(StreamqlError, TypeError):
    """A traced lambda cannot be compiled: the message names the operator and the operands."""


class BindingError(StreamqlError):
    """A query cannot be bound or run on the given inputs (unbound input, unknown column, ...)."""


class BadInputError(StreamqlError):
    """An input row breaks the event model (null time, ``end <= start``, unmatched end edge)
    and the binding was made with ``bad_rows="error"``."""


class ArrivalOrderWarning(UserWarning):
    """An input's arrival order is probably not the one meant: a running query's input received
    rows whose arrival values are before those of an earlier micro-batch (docs/streaming.md), or a
    batch input reads several files without an arrival column, so Spark's file order — largest
    first — is its arrival order (docs/binding.md). Its events can be late by CTIs of rows that
    arrived before them only in that order."""


@contextmanager
def errors_naming(names: Sequence[str]) -> Iterator[None]:
    """An error raised inside names the queries of ``run_many`` (``write_many``, ``start_many``) it
    concerns: a streamql error is raised again as the same class, its message prefixed with
    ``query 'name': ``; any other exception gets that as a note."""
    if not names:
        yield
        return
    label = f"query {names[0]!r}" if len(names) == 1 else "queries " + ", ".join(map(repr, names))
    try:
        yield
    except StreamqlError as exc:
        try:
            named: StreamqlError | None = type(exc)(f"{label}: {exc}")
        except Exception:  # a subclass that is not made from a message alone
            named = None
        if named is None:
            exc.add_note(f"in {label}")
            raise
        raise named from exc
    except Exception as exc:
        exc.add_note(f"in {label}")
        raise
