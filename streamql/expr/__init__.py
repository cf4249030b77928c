"""Scalar expressions: immutable nodes, lambda tracing and static typing."""
from streamql.expr.nodes import Binary, Call, Construct, Expr, GetField, Literal, Param, Unary
from streamql.expr.trace import coalesce, greatest, if_, is_in, is_null, least, length, not_, trace, trace_typed

__all__ = [
    "Binary", "Call", "Construct", "Expr", "GetField", "Literal", "Param", "Unary",
    "coalesce", "greatest", "if_", "is_in", "is_null", "least", "length", "not_", "trace", "trace_typed",
]
