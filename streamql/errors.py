"""The exceptions streamql raises: each names what the user should change."""
from __future__ import annotations


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
