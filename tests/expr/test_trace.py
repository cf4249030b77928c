"""Lambda tracing (docs/expressions.md#traced-lambdas): the nodes a traced lambda builds, and the clear build-time
errors for what Python cannot overload and for ill-typed expressions."""
from __future__ import annotations

import dataclasses
import decimal
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional, cast

import pytest

import streamql as sq
from streamql.expr.nodes import Binary, Call, Construct, Expr, GetField, Literal, Param, Unary, params_of, struct_type
from streamql.expr.trace import trace, trace_typed
from streamql.payload import Kind, ValueType, schema_of


@dataclasses.dataclass(frozen=True)
class Quality:
    value: float
    quality: int


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float
    count: int
    flag: bool
    at: datetime
    took: timedelta
    price: decimal.Decimal
    note: Optional[str]
    q: Quality
    backup: Optional[Quality]


@dataclasses.dataclass(frozen=True)
class Out:
    n: int


@dataclasses.dataclass(frozen=True)
class Usage:
    meter: str
    watts: float


READING = schema_of(Reading)
E = Param(struct_type(READING), 0, "e")
INT = ValueType(Kind.INT)
FLOAT = ValueType(Kind.FLOAT)
BOOL = ValueType(Kind.BOOL)
STR = ValueType(Kind.STR)


def t(fn: Callable[[Any], Any]) -> Expr:
    return trace(fn, [READING], "test")


def field(name: str, vtype: ValueType) -> GetField:
    return GetField(vtype, E, name)


def error(fn: Callable[[Any], Any]) -> str:
    with pytest.raises(sq.ExpressionError) as info:
        t(fn)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    return str(info.value)


# --- the nodes built -----------------------------------------------------------------------


def test_comparison_with_a_constant() -> None:
    expr = t(lambda e: e.consumption > 100)
    assert expr == Binary(BOOL, ">", field("consumption", FLOAT), Literal(INT, 100))
    assert expr.show() == "(e.consumption > 100)"


def test_reflected_operators_keep_operand_order() -> None:
    assert t(lambda e: 1 + e.count) == Binary(INT, "+", Literal(INT, 1), field("count", INT))
    assert t(lambda e: 10 - e.count) == Binary(INT, "-", Literal(INT, 10), field("count", INT))
    assert t(lambda e: 2.0 * e.count) == Binary(FLOAT, "*", Literal(FLOAT, 2.0), field("count", INT))


def test_arithmetic_result_types() -> None:
    # int / int is a float; division, floor division and modulo may be null (division by zero)
    assert t(lambda e: e.count / 2).type == ValueType(Kind.FLOAT, nullable=True)
    assert t(lambda e: e.count // 2).type == ValueType(Kind.INT, nullable=True)
    assert t(lambda e: e.count % 2).type == ValueType(Kind.INT, nullable=True)
    assert t(lambda e: e.count * e.consumption).type == FLOAT
    assert t(lambda e: e.price + 1).type == ValueType(Kind.DECIMAL)
    assert t(lambda e: e.at + e.took).type == ValueType(Kind.DATETIME)
    assert t(lambda e: e.at - e.at).type == ValueType(Kind.TIMEDELTA)
    assert t(lambda e: e.took * 3).type == ValueType(Kind.TIMEDELTA)
    assert t(lambda e: e.meter + "!").type == STR


def test_conditions_build_bool_nodes() -> None:
    expr = t(lambda e: (e.count > 1) & ~e.flag | (e.meter == "m1"))
    count_gt = Binary(BOOL, ">", field("count", INT), Literal(INT, 1))
    not_flag = Unary(BOOL, "not", field("flag", BOOL))
    meter_eq = Binary(BOOL, "==", field("meter", STR), Literal(STR, "m1"))
    assert expr == Binary(BOOL, "|", Binary(BOOL, "&", count_gt, not_flag), meter_eq)
    assert expr.show() == "(((e.count > 1) & ~e.flag) | (e.meter == 'm1'))"


def test_unary_nodes() -> None:
    assert t(lambda e: -e.count) == Unary(INT, "neg", field("count", INT))
    assert t(lambda e: abs(e.consumption)) == Unary(FLOAT, "abs", field("consumption", FLOAT))
    assert t(lambda e: +e.count) == field("count", INT)
    assert t(lambda e: -e.took).type == ValueType(Kind.TIMEDELTA)


def test_nested_fields_and_nullability() -> None:
    q = field("q", ValueType(Kind.STRUCT, schema=schema_of(Quality)))
    assert t(lambda e: e.q.quality) == GetField(INT, q, "quality")
    # a field of a nullable struct is nullable
    backup = t(lambda e: e.backup.quality)
    assert backup.type == ValueType(Kind.INT, nullable=True)
    assert backup.show() == "e.backup.quality"
    # a nullable operand makes the result nullable
    assert t(lambda e: e.note + "x").type == ValueType(Kind.STR, nullable=True)


def test_string_methods_and_indexing() -> None:
    meter = field("meter", STR)
    assert t(lambda e: e.meter.lower()) == Call(STR, "lower", (meter,))
    assert t(lambda e: e.meter.upper()).show() == "e.meter.upper()"
    assert t(lambda e: e.meter.strip()) == Call(STR, "strip", (meter,))
    assert t(lambda e: e.meter.startswith("m")) == Call(BOOL, "startswith", (meter, Literal(STR, "m")))
    assert t(lambda e: e.meter.endswith("1")).type == BOOL
    assert t(lambda e: e.meter[1:3]) == Call(STR, "slice", (meter,), (1, 3))
    assert t(lambda e: e.meter[:-1]) == Call(STR, "slice", (meter,), (None, -1))
    # an index may be out of range: the result is nullable
    assert t(lambda e: e.meter[-1]) == Call(STR.with_nullable(True), "char_at", (meter,), (-1,))


def test_round_nodes() -> None:
    assert t(lambda e: round(e.consumption)) == Call(INT, "round", (field("consumption", FLOAT),))
    assert t(lambda e: round(e.consumption, 2)) == Call(FLOAT, "round", (field("consumption", FLOAT),), (2,))
    assert t(lambda e: round(e.price)).type == ValueType(Kind.DECIMAL)


def test_helpers_build_calls() -> None:
    count = field("count", INT)
    note = field("note", STR.with_nullable(True))
    assert t(lambda e: sq.is_null(e.note)) == Call(BOOL, "is_null", (note,))
    assert t(lambda e: sq.is_in(e.count, [1, 2])) == Call(BOOL, "is_in", (count,), (1, 2))
    # a None among the values can make IN null (SQL)
    assert t(lambda e: sq.is_in(e.count, [1, None])).type == BOOL.with_nullable(True)
    assert t(lambda e: sq.coalesce(e.note, "none")) == Call(STR, "coalesce", (note, Literal(STR, "none")))
    assert t(lambda e: sq.coalesce(e.note, None)).type == STR.with_nullable(True)
    if_ = t(lambda e: sq.if_(e.flag, e.count, 0.5))
    assert if_ == Call(FLOAT, "if", (field("flag", BOOL), count, Literal(FLOAT, 0.5)))
    assert t(lambda e: sq.greatest(e.count, 3)) == Call(INT, "greatest", (count, Literal(INT, 3)))
    assert t(lambda e: sq.least(e.count, e.consumption)).type == FLOAT
    assert t(lambda e: sq.length(e.meter)) == Call(INT, "length", (field("meter", STR),))


def test_select_builds_a_construct() -> None:
    expr = t(lambda e: Usage(e.meter, e.consumption * 1000))
    assert isinstance(expr, Construct)
    assert expr.schema == schema_of(Usage)
    assert expr.args == (field("meter", STR), Binary(FLOAT, "*", field("consumption", FLOAT), Literal(INT, 1000)))
    assert expr.show() == "Usage(meter=e.meter, watts=(e.consumption * 1000))"
    # int into a float field is allowed (widened when evaluated)
    assert t(lambda e: Usage(e.meter, e.count)).type.schema == schema_of(Usage)


def test_two_parameter_lambdas() -> None:
    usage = schema_of(Usage)
    expr = trace(lambda left, right: left.meter == right.meter, [READING, usage], "join")
    assert expr == Binary(BOOL, "==", field("meter", STR),
                          GetField(STR, Param(struct_type(usage), 1, "right"), "meter"))
    assert params_of(expr) == frozenset({0, 1})
    assert params_of(t(lambda e: e.count > 1)) == frozenset({0})
    with pytest.raises(sq.ExpressionError, match="join takes a function of 2 argument"):
        trace(lambda e: e.count > 1, [READING, usage], "join")


def test_parameter_names_do_not_matter_for_equality() -> None:
    assert t(lambda e: e.count > 1) == t(lambda r: r.count > 1)
    assert hash(t(lambda e: e.count > 1)) == hash(t(lambda r: r.count > 1))
    assert t(lambda e: e.count > 1) != t(lambda e: e.count > 2)


def test_trace_typed_checks_the_result_kind() -> None:
    assert trace_typed(lambda e: e.flag, [READING], "where", Kind.BOOL) == field("flag", BOOL)
    with pytest.raises(sq.ExpressionError, match=r"where needs a bool expression, got int \(e.count\)"):
        trace_typed(lambda e: e.count, [READING], "where", Kind.BOOL)


# --- what Python cannot overload ---------------------------------------------------------


def test_and_points_to_ampersand() -> None:
    message = error(lambda e: e.count > 1 and e.flag)
    assert "(e.count > 1)" in message and "`&`" in message


def test_or_points_to_pipe() -> None:
    assert "`|`" in error(lambda e: e.count > 1 or e.flag)


def test_not_points_to_tilde() -> None:
    assert "`~`" in error(lambda e: not e.flag)


def test_conditional_expression_points_to_if() -> None:
    assert "sq.if_(cond, then, else_)" in error(lambda e: 1 if e.flag else 2)


def test_in_points_to_is_in() -> None:
    assert "sq.is_in(x, values)" in error(lambda e: e.count in [1, 2])
    assert error(lambda e: "m" in e.meter) == "`x in e.meter` is not supported: use sq.is_in(x, values)"
    # sets and dicts hash the proxy first: that points to sq.is_in too
    expected = "e.count cannot be hashed (as in `x in {...}` or a dict key): use sq.is_in(x, values)"
    assert error(lambda e: e.count in {1, 2}) == expected
    assert error(lambda e: e.count in frozenset({1, 2})) == expected
    assert "use sq.is_in(x, values)" in error(lambda e: e.q in {None})


def test_len_points_to_length() -> None:
    assert error(lambda e: len(e.meter) > 2) == "len(e.meter) forces a Python value: use sq.length(x)"


def test_max_and_min_point_to_greatest_and_least() -> None:
    assert "sq.greatest" in error(lambda e: max(e.count, 3))
    assert "sq.greatest" in error(lambda e: min(e.count, e.consumption))
    assert "sq.greatest(a, b)/sq.least(a, b)" in error(lambda e: max(e.meter))


def test_bool_has_no_truth_value() -> None:
    message = error(lambda e: bool(e.flag))
    assert message.startswith("a traced expression (e.flag) has no Python truth value")


def test_int_and_float_conversions_fail() -> None:
    assert "round(x)" in error(lambda e: int(e.consumption))
    assert error(lambda e: float(e.count)).startswith("float(e.count) forces a Python value")


def test_is_none_points_to_is_null() -> None:
    message = error(lambda e: e.note is None)
    assert "returned the plain Python value False" in message
    assert "sq.is_null(x)" in message
    assert "sq.is_null(x)" in error(lambda e: e.note is not None)


def test_is_none_is_rejected_when_the_query_is_built() -> None:
    readings = sq.input("readings", Reading)
    with pytest.raises(sq.ExpressionError, match=r"the lambda given to where .* sq\.is_null\(x\)"):
        readings.where(lambda e: e.note is None)


def test_other_constant_results_are_rejected() -> None:
    assert error(lambda e: 3) == (
        "the lambda given to test returned the plain Python value 3 instead of an expression of its argument")


def test_comparison_with_none_points_to_is_null() -> None:
    assert "use sq.is_null(x)" in error(lambda e: e.note == None)  # noqa: E711 - the point of the test


# --- type errors at build time --------------------------------------------------------------


def test_str_compared_with_int() -> None:
    assert error(lambda e: e.meter > 5) == "operator '>' cannot compare str (e.meter) with int (5)"


def test_bool_plus_datetime() -> None:
    message = error(lambda e: e.flag + e.at)
    assert message.startswith("operator '+' does not apply to bool: bool (e.flag) + datetime (e.at)")
    assert "sq.if_(cond, 1, 0)" in message


def test_ampersand_on_ints() -> None:
    assert error(lambda e: e.count & 1) == "operator '&' combines conditions (bool), not int (e.count) and int (1)"


def test_tilde_on_an_int() -> None:
    assert error(lambda e: ~e.count) == "operator '~' negates a condition (bool), not int (e.count)"


def test_arithmetic_on_mismatched_types() -> None:
    assert error(lambda e: e.meter - "x") == "operator '-' does not apply to str (e.meter) and str ('x')"
    assert "operator '+' does not apply to datetime (e.at) and datetime (e.at)" in error(lambda e: e.at + e.at)
    assert "operator '+' does not apply to Decimal (e.price) and float (e.consumption)" in error(
        lambda e: e.price + e.consumption)
    assert error(lambda e: -e.meter) == "operator '-' does not apply to str (e.meter)"


def test_select_with_a_str_in_an_int_field() -> None:
    assert error(lambda e: Out(e.meter)) == "Out.n is int, but the query gives it str (e.meter)"
    assert error(lambda e: Out(e.consumption)) == "Out.n is int, but the query gives it float (e.consumption)"
    # a nullable value cannot go into a non-nullable field either
    assert error(lambda e: Out(cast(int, None))) == "Out.n is int, but the query gives it None (None)"


def test_select_must_build_a_payload() -> None:
    readings = sq.input("readings", Reading)
    with pytest.raises(sq.ExpressionError, match=r"select must build a payload instance .* got int \(e.count\)"):
        readings.select(lambda e: e.count)  # type: ignore[type-var]


def test_unknown_field_lists_the_fields() -> None:
    message = error(lambda e: e.consumptoin > 1)
    assert message.startswith("Reading has no field 'consumptoin' (in e.consumptoin); its fields are: meter, ")


def test_scalars_have_no_attributes() -> None:
    assert error(lambda e: e.count.real) == "e.count is a int, which has no attribute 'real' in a query"


def test_string_functions_need_strings() -> None:
    assert error(lambda e: e.count.lower()) == ".lower() applies to str, not int (e.count)"
    assert error(lambda e: e.meter.startswith(1)) == ".startswith() takes a str argument, not int (1)"
    assert error(lambda e: e.count[0]) == "indexing applies to str, not int (e.count)"
    assert "step" in error(lambda e: e.meter[::2])
    assert error(lambda e: e.meter[e.count]) == "e.meter[...] needs a constant int or slice"
    assert error(lambda e: sq.length(e.count)) == "sq.length applies to str, not int (e.count)"
    assert error(lambda e: round(e.meter)) == "round() applies to numbers, not str (e.meter)"


def test_helper_errors() -> None:
    assert error(lambda e: sq.if_(e.count, 1, 2)) == "sq.if_ needs a bool condition, got int (e.count)"
    assert error(lambda e: sq.if_(e.flag, 1, "x")).startswith("sq.if_: operands have different types")
    assert error(lambda e: sq.is_in(e.count, [e.count])) == "sq.is_in(x, values): values must be constants"
    assert "cannot compare int (e.count) with str ('a')" in error(lambda e: sq.is_in(e.count, ["a"]))
    assert error(lambda e: sq.coalesce()) == "sq.coalesce needs at least one argument"
    assert error(lambda e: sq.greatest(e.count)) == "sq.greatest needs at least two arguments"
    assert "sq.least: operands have different types" in error(lambda e: sq.least(e.count, e.meter))


def test_constants_must_be_supported_and_aware() -> None:
    assert "cannot be used in a query" in error(lambda e: e.count == [1])
    naive = datetime(2009, 7, 15)
    assert "naive datetime" in error(lambda e: e.at > naive)
    aware = datetime(2009, 7, 15, tzinfo=timezone.utc)
    assert t(lambda e: e.at > aware) == Binary(BOOL, ">", field("at", ValueType(Kind.DATETIME)),
                                               Literal(ValueType(Kind.DATETIME), aware))


def test_payloads_cannot_be_compared_or_mutated() -> None:
    assert "compare fields" in error(lambda e: e.q == e.q)

    def assign(e: Any) -> Any:
        e.count = 3
        return e.flag

    assert "queries do not mutate events" in error(assign)
