"""Expression semantics as the reference evaluator defines them (the specification the Spark
compilation is tested against): SQL nulls, three-valued logic, null on division by zero,
Python's floor division, strings, rounding, the ``sq.*`` helpers and widening."""
from __future__ import annotations

import dataclasses
import decimal
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamql as sq
from streamql.errors import ExpressionError
from streamql.expr.trace import trace
from streamql.payload import schema_of
from streamql.reference.expressions import evaluate

D = decimal.Decimal
UTC = timezone.utc


@dataclasses.dataclass(frozen=True)
class Quality:
    value: float
    quality: int


@dataclasses.dataclass(frozen=True)
class Row:
    a: Optional[int] = None
    b: Optional[int] = None
    f: Optional[float] = None
    g: Optional[float] = None
    x: Optional[bool] = None
    y: Optional[bool] = None
    s: Optional[str] = None
    u: Optional[str] = None
    d: Optional[decimal.Decimal] = None
    at: Optional[datetime] = None
    took: Optional[timedelta] = None
    q: Optional[Quality] = None


@dataclasses.dataclass(frozen=True)
class Usage:
    meter: str
    watts: float


@dataclasses.dataclass(frozen=True)
class Priced:
    price: decimal.Decimal
    quality: Quality


ROW = schema_of(Row)


def ev(fn: Callable[[Any], Any], row: Row) -> Any:
    return evaluate(trace(fn, [ROW], "test"), [row])


# --- nulls and three-valued logic ----------------------------------------------------------


def test_null_propagates_through_operators() -> None:
    empty = Row()
    assert ev(lambda e: e.a + 1, empty) is None
    assert ev(lambda e: e.a * e.b, Row(a=2)) is None
    assert ev(lambda e: -e.a, empty) is None
    assert ev(lambda e: abs(e.f), empty) is None
    assert ev(lambda e: e.a > 1, empty) is None
    assert ev(lambda e: e.a == e.b, empty) is None  # SQL: null = null is null, not true
    assert ev(lambda e: ~e.x, empty) is None
    assert ev(lambda e: e.s.upper(), empty) is None
    assert ev(lambda e: e.s + "!", empty) is None
    assert ev(lambda e: e.s[0], empty) is None
    assert ev(lambda e: e.s[1:], empty) is None
    assert ev(lambda e: e.s.startswith(e.u), Row(s="abc")) is None
    assert ev(lambda e: round(e.f), empty) is None
    assert ev(lambda e: sq.length(e.s), empty) is None
    assert ev(lambda e: e.at + e.took, Row(took=timedelta(1))) is None
    assert ev(lambda e: e.q.quality, empty) is None  # a field of a null struct is null


KLEENE = [True, False, None]


@pytest.mark.parametrize("x", KLEENE)
@pytest.mark.parametrize("y", KLEENE)
def test_kleene_and_or(x: Optional[bool], y: Optional[bool]) -> None:
    # SQL's three-valued logic: false dominates AND, true dominates OR, otherwise unknown stays unknown
    if x is False or y is False:
        expected_and: Optional[bool] = False
    elif x is None or y is None:
        expected_and = None
    else:
        expected_and = True
    if x is True or y is True:
        expected_or: Optional[bool] = True
    elif x is None or y is None:
        expected_or = None
    else:
        expected_or = False
    row = Row(x=x, y=y)
    assert ev(lambda e: e.x & e.y, row) is expected_and
    assert ev(lambda e: e.x | e.y, row) is expected_or


def test_not() -> None:
    assert ev(lambda e: ~e.x, Row(x=True)) is False
    assert ev(lambda e: ~e.x, Row(x=False)) is True


# --- arithmetic ------------------------------------------------------------------------------


def test_division() -> None:
    assert ev(lambda e: e.a / e.b, Row(a=7, b=2)) == 3.5  # int / int is a float division
    assert isinstance(ev(lambda e: e.a / e.b, Row(a=6, b=2)), float)
    assert ev(lambda e: e.d + 4, Row(d=D("1.25"))) == D("5.25")


def test_decimal_multiplication_and_division_are_refused() -> None:
    # Spark's decimal(38, 18) arithmetic would round products and quotients to 6 places
    with pytest.raises(ExpressionError, match=r"operator '/' on Decimal"):
        ev(lambda e: e.d / 4, Row(d=D("1")))
    with pytest.raises(ExpressionError, match=r"operator '\*' on Decimal"):
        ev(lambda e: e.d * e.d, Row(d=D("1")))


@pytest.mark.parametrize("fn", [
    lambda e: e.a / e.b, lambda e: e.a // e.b, lambda e: e.a % e.b,
    lambda e: e.f / e.g, lambda e: e.f // e.g, lambda e: e.f % e.g,
])
def test_division_by_zero_is_null(fn: Callable[[Any], Any]) -> None:
    assert ev(fn, Row(a=7, b=0, f=1.5, g=0.0, d=D("2"))) is None


@pytest.mark.parametrize(("a", "b", "quotient", "remainder"), [
    (7, 2, 3, 1), (-7, 2, -4, 1), (7, -2, -4, -1), (-7, -2, 3, -1), (0, 5, 0, 0), (-1, 5, -1, 4),
])
def test_floor_division_and_modulo_follow_python(a: int, b: int, quotient: int, remainder: int) -> None:
    assert ev(lambda e: e.a // e.b, Row(a=a, b=b)) == quotient
    assert ev(lambda e: e.a % e.b, Row(a=a, b=b)) == remainder


def test_float_floor_division_and_modulo() -> None:
    # -7.5 = 2 * -4 + 0.5
    assert ev(lambda e: e.f // e.g, Row(f=-7.5, g=2.0)) == -4.0
    assert ev(lambda e: e.f % e.g, Row(f=-7.5, g=2.0)) == 0.5
    assert ev(lambda e: e.f % e.g, Row(f=7.5, g=-2.0)) == -0.5


@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6))
def test_integer_division_matches_python(a: int, b: int) -> None:
    row = Row(a=a, b=b)
    q, r = ev(lambda e: e.a // e.b, row), ev(lambda e: e.a % e.b, row)
    if b == 0:
        assert q is None and r is None
    else:
        assert (q, r) == divmod(a, b)
        assert q * b + r == a


def test_mixed_numbers() -> None:
    assert ev(lambda e: e.a + e.f, Row(a=1, f=0.5)) == 1.5
    assert ev(lambda e: e.a < e.f, Row(a=1, f=1.5)) is True
    assert ev(lambda e: e.d + e.a, Row(d=D("1.5"), a=1)) == D("2.5")
    assert ev(lambda e: e.a - 10, Row(a=3)) == -7


def test_abs() -> None:
    assert ev(lambda e: abs(e.a), Row(a=-3)) == 3
    assert ev(lambda e: abs(e.f), Row(f=-2.5)) == 2.5
    assert ev(lambda e: abs(e.d), Row(d=D("-1.25"))) == D("1.25")
    assert ev(lambda e: abs(e.took), Row(took=timedelta(seconds=-5))) == timedelta(seconds=5)


def test_round_is_bankers_rounding() -> None:
    # half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2
    for value, expected in [(0.5, 0), (1.5, 2), (2.5, 2), (-2.5, -2), (2.6, 3), (-0.4, 0)]:
        rounded = ev(lambda e: round(e.f), Row(f=value))
        assert rounded == expected and isinstance(rounded, int)
    # 0.125 and 0.375 are exact binary fractions, so the tie is real: 0.12 and 0.38
    assert ev(lambda e: round(e.f, 2), Row(f=0.125)) == 0.12
    assert ev(lambda e: round(e.f, 2), Row(f=0.375)) == 0.38
    assert ev(lambda e: round(e.a, -1), Row(a=25)) == 20
    assert ev(lambda e: round(e.a, -1), Row(a=35)) == 40
    assert ev(lambda e: round(e.a), Row(a=7)) == 7


def test_round_of_decimal_stays_decimal() -> None:
    rounded = ev(lambda e: round(e.d), Row(d=D("2.5")))
    assert rounded == D("2") and isinstance(rounded, decimal.Decimal)
    assert ev(lambda e: round(e.d), Row(d=D("3.5"))) == D("4")
    assert ev(lambda e: round(e.d, 1), Row(d=D("1.25"))) == D("1.2")


# --- strings ---------------------------------------------------------------------------------


def test_string_concatenation() -> None:
    assert ev(lambda e: e.s + e.u, Row(s="ab", u="cd")) == "abcd"
    assert ev(lambda e: "<" + e.s + ">", Row(s="x")) == "<x>"


@pytest.mark.parametrize(("index", "expected"), [
    (0, "h"), (4, "o"), (5, None), (99, None), (-1, "o"), (-5, "h"), (-6, None),
])
def test_string_index(index: int, expected: Optional[str]) -> None:
    assert ev(lambda e: e.s[index], Row(s="hello")) == expected


def test_string_index_of_empty_string() -> None:
    assert ev(lambda e: e.s[0], Row(s="")) is None


def test_string_slices() -> None:
    row = Row(s="hello")
    assert ev(lambda e: e.s[1:3], row) == "el"
    assert ev(lambda e: e.s[:-1], row) == "hell"
    assert ev(lambda e: e.s[3:], row) == "lo"
    assert ev(lambda e: e.s[-3:], row) == "llo"
    assert ev(lambda e: e.s[10:], row) == ""
    assert ev(lambda e: e.s[3:1], row) == ""
    assert ev(lambda e: e.s[:], row) == "hello"


def test_string_methods() -> None:
    row = Row(s="  Meter 1\t\n", u="Meter")
    assert ev(lambda e: e.s.strip(), row) == "Meter 1"
    assert ev(lambda e: e.s.lower(), row) == "  meter 1\t\n"
    assert ev(lambda e: e.s.upper(), row) == "  METER 1\t\n"
    assert ev(lambda e: e.s.strip().startswith(e.u), row) is True
    assert ev(lambda e: e.s.startswith(e.u), row) is False
    assert ev(lambda e: e.s.strip().endswith("1"), row) is True
    assert ev(lambda e: e.s.endswith("1"), row) is False
    assert ev(lambda e: sq.length(e.s), row) == 11
    assert ev(lambda e: sq.length(e.s), Row(s="")) == 0


def test_string_comparison() -> None:
    assert ev(lambda e: e.s < e.u, Row(s="a", u="b")) is True
    assert ev(lambda e: e.s == "a", Row(s="a")) is True


# --- helpers -----------------------------------------------------------------------------


def test_if() -> None:
    assert ev(lambda e: sq.if_(e.x, "yes", "no"), Row(x=True)) == "yes"
    assert ev(lambda e: sq.if_(e.x, "yes", "no"), Row(x=False)) == "no"
    # a null condition takes the else branch (CASE WHEN)
    assert ev(lambda e: sq.if_(e.x, "yes", "no"), Row()) == "no"
    # int and float branches share the float type: the int branch is widened
    widened = ev(lambda e: sq.if_(e.x, 1, 0.5), Row(x=True))
    assert widened == 1.0 and isinstance(widened, float)
    assert ev(lambda e: sq.if_(e.a > 0, e.a, None), Row(a=-1)) is None


def test_is_in_has_sql_null_semantics() -> None:
    assert ev(lambda e: sq.is_in(e.a, [1, 2]), Row(a=2)) is True
    assert ev(lambda e: sq.is_in(e.a, [1, 2]), Row(a=3)) is False
    # x IN (1, NULL): true if x matches, unknown otherwise
    assert ev(lambda e: sq.is_in(e.a, [1, None]), Row(a=1)) is True
    assert ev(lambda e: sq.is_in(e.a, [1, None]), Row(a=3)) is None
    # NULL IN (...) is unknown
    assert ev(lambda e: sq.is_in(e.a, [1, 2]), Row()) is None
    assert ev(lambda e: sq.is_in(e.a, []), Row(a=1)) is False
    assert ev(lambda e: sq.is_in(e.s, ["m1", "m2"]), Row(s="m2")) is True
    # a NOT IN with a null among the values is never true
    assert ev(lambda e: ~sq.is_in(e.a, [1, None]), Row(a=3)) is None


def test_is_null() -> None:
    assert ev(lambda e: sq.is_null(e.a), Row()) is True
    assert ev(lambda e: sq.is_null(e.a), Row(a=0)) is False
    assert ev(lambda e: ~sq.is_null(e.s), Row(s="")) is True
    assert ev(lambda e: sq.is_null(e.q), Row()) is True


def test_coalesce() -> None:
    assert ev(lambda e: sq.coalesce(e.a, e.b, 7), Row(b=5)) == 5
    assert ev(lambda e: sq.coalesce(e.a, e.b, 7), Row()) == 7
    assert ev(lambda e: sq.coalesce(e.a, e.b), Row()) is None
    assert ev(lambda e: sq.coalesce(e.s, "none"), Row(s="")) == ""
    widened = ev(lambda e: sq.coalesce(e.a, 0.5), Row(a=3))
    assert widened == 3.0 and isinstance(widened, float)


def test_greatest_and_least_skip_nulls() -> None:
    assert ev(lambda e: sq.greatest(e.a, e.b, 4), Row(a=1, b=9)) == 9
    assert ev(lambda e: sq.greatest(e.a, e.b), Row(b=-2)) == -2
    assert ev(lambda e: sq.least(e.a, e.b, 4), Row(a=1)) == 1
    assert ev(lambda e: sq.least(e.a, e.b), Row()) is None
    mixed = ev(lambda e: sq.greatest(e.a, e.f), Row(a=3, f=2.5))
    assert mixed == 3.0 and isinstance(mixed, float)
    assert ev(lambda e: sq.least(e.s, e.u), Row(s="b", u="a")) == "a"


# --- time, nesting, construction -------------------------------------------------------------


def test_datetime_arithmetic() -> None:
    at = datetime(2009, 7, 15, 9, 13, 33, 317_000, tzinfo=UTC)
    row = Row(at=at, took=timedelta(seconds=36, milliseconds=-47))
    assert ev(lambda e: e.at + e.took, row) == datetime(2009, 7, 15, 9, 14, 9, 270_000, tzinfo=UTC)
    assert ev(lambda e: e.took + e.at, row) == datetime(2009, 7, 15, 9, 14, 9, 270_000, tzinfo=UTC)
    assert ev(lambda e: e.at - e.took, row) == datetime(2009, 7, 15, 9, 12, 57, 364_000, tzinfo=UTC)
    later = datetime(2009, 7, 15, 9, 14, 9, 270_000, tzinfo=UTC)
    assert ev(lambda e: later - e.at, row) == timedelta(seconds=35, microseconds=953_000)
    assert ev(lambda e: e.took * 2, Row(took=timedelta(seconds=3))) == timedelta(seconds=6)
    assert ev(lambda e: e.took - timedelta(seconds=1), Row(took=timedelta(seconds=3))) == timedelta(seconds=2)
    assert ev(lambda e: e.at > later, row) is False


def test_nested_field_access() -> None:
    row = Row(q=Quality(0.5, 3))
    assert ev(lambda e: e.q.quality, row) == 3
    assert ev(lambda e: e.q.value * 2, row) == 1.0
    assert ev(lambda e: e.q.quality > 2, row) is True


def test_construct_widens_ints() -> None:
    usage = ev(lambda e: Usage(e.s, e.a), Row(s="m1", a=3))
    assert usage == Usage("m1", 3.0)
    assert isinstance(usage.watts, float)
    priced = ev(lambda e: Priced(e.a, Quality(e.a, e.a * 2)), Row(a=4))
    assert priced == Priced(D(4), Quality(4.0, 8))
    assert isinstance(priced.price, decimal.Decimal) and isinstance(priced.quality.value, float)


def test_evaluate_with_two_parameters() -> None:
    usage = schema_of(Usage)
    expr = trace(lambda r, u: Usage(u.meter, r.f + u.watts), [ROW, usage], "join")
    assert evaluate(expr, [Row(f=1.5), Usage("m", 2.0)]) == Usage("m", 3.5)
