"""Every expression feature compiled to Spark Columns, compared with the reference evaluator
(``streamql.reference.expressions``, the specification) on the same rows: each test selects into
a payload of Optional fields, runs ``Binder.run`` and ``sq.reference.run`` with a flushing
setting (everything is released) and checks that both agree, with spot checks of values worked
out by hand (null propagation, floor division, out-of-range indexes, division by zero...)."""
from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Callable, Optional, Sequence, TypeVar, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.depth import examples
from support.frames import bind, frame

UTC = timezone.utc
X = TypeVar("X")
FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1000, flush=True))


def present(x: Optional[X]) -> X:
    """Types an Optional field as its value type inside a query (null propagates at run time);
    an identity on the traced value."""
    return cast(X, x)


@dataclass(frozen=True)
class Inner:
    label: str
    weight: Optional[float]


@dataclass(frozen=True)
class Row:
    i: int
    j: int
    f: float
    g: float
    s: str
    u: str
    flag: bool
    d: Decimal
    at: datetime
    span: timedelta
    uid: uuid.UUID
    raw: bytes
    inner: Inner
    oi: Optional[int]
    of: Optional[float]
    os: Optional[str]
    ob: Optional[bool]
    oinner: Optional[Inner]


NOON = datetime(2020, 1, 1, 12, tzinfo=UTC)
ROWS = [
    Row(7, 2, 2.5, 0.25, " Hello ", "He", True, Decimal("2.25"), NOON, timedelta(hours=1, microseconds=5),
        uuid.UUID(int=5), b"\x00\x02", Inner("a", 1.5), None, None, None, None, None),
    Row(-7, 2, -2.5, 2.0, "abc", "ab", False, Decimal("-1.125"), NOON + timedelta(days=1), timedelta(days=-1),
        uuid.UUID("ffffffff-0000-0000-0000-000000000000"), b"\x01", Inner("", None), 3, 1.5, "xy", True,
        Inner("n", None)),
    Row(0, 0, 3.5, 0.0, "", "", True, Decimal(0), NOON - timedelta(microseconds=1), timedelta(0),
        uuid.UUID(int=0), b"", Inner("z", -0.5), 0, 0.0, "", False, Inner("m", 2.0)),
    Row(5, 3, 0.125, 4.0, "x", "xyz", False, Decimal("10.5"), datetime(1999, 12, 31, tzinfo=UTC),
        timedelta(seconds=90), uuid.UUID(int=2**127), b"\xff", Inner("q", 0.0), -4, -2.5, " \tq\n", None,
        Inner("o", None)),
]
SOURCE = sq.input("rows", Row, shape=sq.Shape.INTERVAL)


def run_both(spark: SparkSession, query: sq.Stream[X], rows: Sequence[Row] = ROWS) -> list[X]:
    """The payloads ``query`` gives for ``rows`` (row k lives over [10k, 10k + 5)): Spark's
    Result must equal the reference evaluator's."""
    items: list[sq.Insert[Row]] = [sq.Insert(10 * k, 10 * k + 5, row) for k, row in enumerate(rows)]
    expected = sq.reference.run(query, {"rows": sq.reference.ReferenceInput(items, FLUSH)})
    df = frame(spark, Row, sq.Shape.INTERVAL, items, partitions=2)
    actual = bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, FLUSH).run(query)
    assert actual == expected
    return [e.payload for e in actual.events]


# --- arithmetic -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arithmetic:
    add: Optional[int]
    sub: Optional[int]
    mul: Optional[int]
    div: Optional[float]
    floordiv: Optional[int]
    mod: Optional[int]
    neg: Optional[int]
    absolute: Optional[int]
    by_zero: Optional[float]
    floordiv_zero: Optional[int]
    mod_zero: Optional[int]
    fadd: Optional[float]
    fdiv: Optional[float]
    ffloordiv: Optional[float]
    fmod: Optional[float]
    fneg: Optional[float]
    fabs: Optional[float]
    rounded: Optional[int]
    rounded1: Optional[float]
    rounded2: Optional[float]
    dec: Optional[Decimal]
    dec_round: Optional[Decimal]
    dec_round1: Optional[Decimal]
    null_add: Optional[int]
    null_mul: Optional[int]
    null_neg: Optional[int]
    null_abs: Optional[int]
    null_div: Optional[float]
    null_float: Optional[float]


def test_arithmetic(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: Arithmetic(
        add=e.i + e.j, sub=e.i - e.j - 1, mul=e.i * e.j * -3, div=e.i / e.j, floordiv=e.i // e.j, mod=e.i % e.j,
        neg=-e.i, absolute=abs(e.i - 10), by_zero=e.i / 0, floordiv_zero=e.i // 0, mod_zero=e.j % 0,
        fadd=e.f + e.i, fdiv=e.f / e.g, ffloordiv=e.f // e.g, fmod=e.f % e.g, fneg=-e.f, fabs=abs(e.f),
        rounded=round(e.f), rounded1=round(e.g + 0.1, 1), rounded2=round(e.f, 2),
        dec=e.d + e.d + Decimal("0.5") - 1, dec_round=cast(Decimal, round(e.d)), dec_round1=round(e.d, 1),
        null_add=present(e.oi) + 1, null_mul=present(e.oi) * e.i, null_neg=-present(e.oi),
        null_abs=abs(present(e.oi)), null_div=e.i / present(e.oi), null_float=present(e.of) * 2 + e.f,
    ))
    out = run_both(spark, q)
    first, second, third, fourth = out
    assert (first.add, first.sub, first.mul, first.div, first.floordiv, first.mod) == (9, 4, -42, 3.5, 3, 1)
    # // and % floor as in Python: -7 // 2 == -4, -7 % 2 == 1
    assert (second.floordiv, second.mod, second.neg, second.absolute) == (-4, 1, 7, 17)
    # division by zero gives None, for /, // and % alike
    assert (first.by_zero, first.floordiv_zero, first.mod_zero) == (None, None, None)
    assert (third.div, third.floordiv, third.mod, third.fdiv, third.ffloordiv, third.fmod) == (None,) * 6
    assert (second.ffloordiv, second.fmod) == (-2.0, 1.5)
    # round halves to even, as Python and Spark's bround do
    assert [r.rounded for r in out] == [2, -2, 4, 0]
    # a float rounds as the decimal it prints as: 0.25 + 0.1 prints 0.35 and rounds to 0.4
    assert [r.rounded1 for r in out] == [0.4, 2.1, 0.1, 4.1]
    assert fourth.rounded2 == 0.12
    assert [r.dec for r in out] == [Decimal("4"), Decimal("-2.75"), Decimal("-0.5"), Decimal("20.5")]
    assert [r.dec_round for r in out] == [Decimal(2), Decimal(-1), Decimal(0), Decimal(10)]
    assert [r.dec_round1 for r in out] == [Decimal("2.2"), Decimal("-1.1"), Decimal(0), Decimal("10.5")]
    # nulls propagate
    assert (first.null_add, first.null_mul, first.null_neg, first.null_abs, first.null_div, first.null_float) == (None,) * 6
    assert (second.null_add, second.null_mul, second.null_neg, second.null_abs, second.null_div) == (4, -21, -3, 3, -7 / 3)
    assert third.null_div is None and fourth.null_abs == 4
    # Decimal * and / are refused when the query is built (Spark's decimal(38, 18) would round them)
    with pytest.raises(sq.ExpressionError, match=r"operator '\*' on Decimal"):
        SOURCE.select(lambda e: Amount(e.d * 2))
    with pytest.raises(sq.ExpressionError, match=r"operator '/' on Decimal"):
        SOURCE.select(lambda e: Amount(e.d / 4))


@dataclass(frozen=True)
class Amount:
    value: Optional[Decimal]


@dataclass(frozen=True)
class NegativeDivisor:
    floordiv: Optional[int]
    mod: Optional[int]
    fmod: Optional[float]


def test_floor_division_and_modulo_by_a_negative_divisor(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: NegativeDivisor(e.i // -e.j, e.i % -e.j, e.f % -e.j))
    # Python floors: the remainder takes the divisor's sign (Spark's % takes the dividend's and
    # pmod is never negative). Row 0: i = 7, j = 2, f = 2.5; row 1: i = -7, j = 2, f = -2.5
    assert run_both(spark, q, rows=ROWS[:2]) == [NegativeDivisor(-4, -1, -1.5), NegativeDivisor(3, -1, -0.5)]


@dataclass(frozen=True)
class FloatFloor:
    floordiv: Optional[float]
    mod: Optional[float]


def test_float_floor_division_agrees_with_modulo(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: FloatFloor(e.f // e.g, e.f % e.g))
    # a == (a // b) * b + a % b: 1.0 % 0.1 is 0.09999999999999995, so 1.0 // 0.1 is 9.0 (not
    # floor(1.0 / 0.1) == 10.0)
    assert run_both(spark, q, rows=[dataclasses.replace(ROWS[0], f=1.0, g=0.1)]) == [FloatFloor(9.0, 1.0 % 0.1)]


@dataclass(frozen=True)
class Temporal:
    later: Optional[datetime]
    earlier: Optional[datetime]
    since: Optional[timedelta]
    doubled: Optional[timedelta]
    negated: Optional[timedelta]
    absolute: Optional[timedelta]
    summed: Optional[timedelta]
    shifted: Optional[datetime]


def test_datetime_and_timedelta_arithmetic(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: Temporal(
        later=e.at + e.span, earlier=e.at - e.span, since=e.at - NOON, doubled=e.span * 2, negated=-e.span,
        absolute=abs(e.span), summed=e.span + timedelta(hours=1), shifted=timedelta(minutes=1) + e.at,
    ))
    out = run_both(spark, q)
    assert out[0] == Temporal(NOON + timedelta(hours=1, microseconds=5), NOON - timedelta(hours=1, microseconds=5),
                              timedelta(0), timedelta(hours=2, microseconds=10), -timedelta(hours=1, microseconds=5),
                              timedelta(hours=1, microseconds=5), timedelta(hours=2, microseconds=5),
                              NOON + timedelta(minutes=1))
    assert out[1].later == NOON and out[1].absolute == timedelta(days=1)
    assert out[2].since == timedelta(microseconds=-1)
    assert all(r.later is not None and r.later.tzinfo == UTC for r in out)


# --- comparisons and conditions --------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparisons:
    lt: Optional[bool]
    le: Optional[bool]
    gt: Optional[bool]
    ge: Optional[bool]
    eq: Optional[bool]
    ne: Optional[bool]
    mixed: Optional[bool]
    text: Optional[bool]
    moment: Optional[bool]
    raw: Optional[bool]
    flag: Optional[bool]
    uid: Optional[bool]
    uid_eq: Optional[bool]
    dec: Optional[bool]
    span: Optional[bool]
    null_cmp: Optional[bool]
    both: Optional[bool]
    either: Optional[bool]
    inverted: Optional[bool]
    not_flag: Optional[bool]
    null_and_false: Optional[bool]
    null_and_true: Optional[bool]
    null_or_true: Optional[bool]
    null_or_false: Optional[bool]
    null_not: Optional[bool]


def test_comparisons_and_three_valued_logic(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: Comparisons(
        lt=e.i < e.j, le=e.i <= e.j, gt=e.i > e.j, ge=e.i >= e.j, eq=e.i == e.j, ne=e.i != e.j,
        mixed=e.i < e.f, text=e.s < e.u, moment=e.at > NOON, raw=e.raw < b"\x01", flag=e.flag == True,  # noqa: E712
        uid=e.uid < uuid.UUID(int=2**100), uid_eq=e.uid == uuid.UUID(int=5), dec=e.d > 1, span=e.span >= timedelta(0),
        null_cmp=present(e.oi) > 2,
        both=(e.i > 0) & (e.j > 0), either=(e.i > 0) | (e.j > 2), inverted=cast(bool, ~(e.i > 0)),
        not_flag=sq.not_(e.flag),
        null_and_false=(present(e.oi) > 2) & (e.i > 100), null_and_true=(present(e.oi) > 2) & (e.j >= 0),
        null_or_true=(present(e.oi) > 2) | (e.j >= 0), null_or_false=(present(e.oi) > 2) | (e.i > 100),
        null_not=sq.not_(present(e.ob)),
    ))
    out = run_both(spark, q)
    first, second = out[0], out[1]
    assert (first.lt, first.le, first.gt, first.ge, first.eq, first.ne) == (False, False, True, True, False, True)
    assert (out[2].eq, out[2].le, out[2].lt) == (True, True, False)
    assert (first.text, first.moment, first.raw, first.flag, first.uid, first.uid_eq) == (True, False, True, True, True, True)
    assert (second.text, second.moment, second.uid, second.dec, second.span) == (False, True, False, False, False)
    # SQL three-valued logic: null & False is False, null | True is True, otherwise null
    assert (first.null_cmp, first.null_and_false, first.null_and_true) == (None, False, None)
    assert (first.null_or_true, first.null_or_false, first.null_not) == (True, None, None)
    assert (second.null_cmp, second.null_and_true, second.null_not) == (True, True, False)
    assert [r.both for r in out] == [True, False, False, True]
    assert [r.either for r in out] == [True, False, False, True]
    assert [r.inverted for r in out] == [False, True, True, False]
    assert [r.not_flag for r in out] == [False, True, False, True]


# --- strings -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Strings:
    concat: Optional[str]
    concat_literal: Optional[str]
    null_concat: Optional[str]
    first: Optional[str]
    last: Optional[str]
    second: Optional[str]
    past_end: Optional[str]
    before_start: Optional[str]
    tail: Optional[str]
    head: Optional[str]
    last_two: Optional[str]
    inner: Optional[str]
    beyond: Optional[str]
    wide: Optional[str]
    crossed: Optional[str]
    starts: Optional[bool]
    starts_literal: Optional[bool]
    ends: Optional[bool]
    null_starts: Optional[bool]
    lower: Optional[str]
    upper: Optional[str]
    strip: Optional[str]
    null_strip: Optional[str]
    length: Optional[int]
    null_length: Optional[int]
    null_index: Optional[str]


def test_string_operations(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: Strings(
        concat=e.s + e.u, concat_literal="<" + e.s + "!", null_concat=present(e.os) + "x",
        first=e.s[0], last=e.s[-1], second=e.s[1], past_end=e.s[10], before_start=e.s[-10],
        tail=e.s[1:], head=e.s[:2], last_two=e.s[-2:], inner=e.s[1:-1], beyond=e.s[5:10], wide=e.s[-100:2],
        crossed=e.s[3:1], starts=e.s.startswith(e.u), starts_literal=e.s.startswith("a"), ends=e.u.endswith("b"),
        null_starts=present(e.os).startswith("x"), lower=e.s.lower(), upper=e.u.upper(), strip=e.s.strip(),
        null_strip=present(e.os).strip(), length=sq.length(e.s), null_length=sq.length(present(e.os)),
        null_index=present(e.os)[0],
    ))
    out = run_both(spark, q)
    hello, abc, empty, x = out
    assert (hello.concat, hello.concat_literal, hello.first, hello.last, hello.second) == (" Hello He", "< Hello !", " ", " ", "H")
    assert (hello.tail, hello.head, hello.last_two, hello.inner, hello.beyond, hello.wide) == (
        "Hello ", " H", "o ", "Hello", "o ", " H")
    assert (hello.lower, hello.strip, hello.length, hello.starts, hello.crossed) == (" hello ", "Hello", 7, False, "")
    # an index out of range gives None (not an error), negative indexes count from the end
    assert (abc.first, abc.last, abc.past_end, abc.before_start, abc.beyond) == ("a", "c", None, None, "")
    assert (abc.starts, abc.starts_literal, abc.ends, abc.upper) == (True, True, True, "AB")
    assert (empty.first, empty.last, empty.tail, empty.length, empty.starts) == (None, None, "", 0, True)
    assert (x.null_strip, x.null_length, x.null_index, x.null_concat) == ("q", 4, " ", " \tq\nx")
    # nulls propagate through every string operation
    assert (hello.null_concat, hello.null_starts, hello.null_strip, hello.null_length, hello.null_index) == (None,) * 5


# --- helpers: if_, is_in, is_null, coalesce, greatest, least; nested fields -----------------------------


@dataclass(frozen=True)
class Helpers:
    chosen: Optional[str]
    null_condition: Optional[int]
    in_ints: Optional[bool]
    in_strs: Optional[bool]
    in_with_none: Optional[bool]
    null_in: Optional[bool]
    is_null: Optional[bool]
    is_null_struct: Optional[bool]
    coalesced: Optional[int]
    coalesced3: Optional[int]
    greatest: Optional[int]
    greatest_null: Optional[int]
    least: Optional[float]
    least_null: Optional[int]
    label: Optional[str]
    weight: Optional[float]
    null_nested: Optional[str]
    null_nested_weight: Optional[float]


def test_helpers_and_nested_fields(spark: SparkSession) -> None:
    q = SOURCE.select(lambda e: Helpers(
        chosen=sq.if_(e.i > 0, e.s, "neg"), null_condition=sq.if_(present(e.oi) > 0, 1, 2),
        in_ints=sq.is_in(e.i, [1, 7, 0]), in_strs=sq.is_in(e.s, ["abc", "x"]), in_with_none=sq.is_in(e.j, [3, None]),
        null_in=sq.is_in(e.oi, [3, 4]), is_null=sq.is_null(e.oi), is_null_struct=sq.is_null(e.oinner),
        coalesced=sq.coalesce(e.oi, e.i), coalesced3=sq.coalesce(e.oi, None, 99), greatest=sq.greatest(e.i, e.j, 3),
        greatest_null=sq.greatest(e.oi, e.j), least=sq.least(e.f, e.g, e.i), least_null=sq.least(e.oi, 100),
        label=e.inner.label, weight=e.inner.weight, null_nested=present(e.oinner).label,
        null_nested_weight=present(e.oinner).weight,
    ))
    out = run_both(spark, q)
    first, second, third, fourth = out
    assert [r.chosen for r in out] == [" Hello ", "neg", "neg", "x"]
    # a null condition takes the else branch
    assert [r.null_condition for r in out] == [2, 1, 2, 2]
    assert [r.in_ints for r in out] == [True, False, True, False]
    assert [r.in_strs for r in out] == [False, True, False, True]
    # SQL IN: no match against a list holding None is None
    assert [r.in_with_none for r in out] == [None, None, None, True]
    assert [r.null_in for r in out] == [None, True, False, False]
    assert [r.is_null for r in out] == [True, False, False, False]
    assert [r.is_null_struct for r in out] == [True, False, False, False]
    assert [r.coalesced for r in out] == [7, 3, 0, -4]
    assert [r.coalesced3 for r in out] == [99, 3, 0, -4]
    assert [r.greatest for r in out] == [7, 3, 3, 5]
    # greatest/least skip nulls
    assert [r.greatest_null for r in out] == [2, 3, 0, 3]
    assert [r.least for r in out] == [0.25, -7.0, 0.0, 0.125]
    assert [r.least_null for r in out] == [100, 3, 0, -4]
    assert (first.label, first.weight, second.weight, first.null_nested, first.null_nested_weight) == ("a", 1.5, None, None, None)
    assert (second.null_nested, third.null_nested_weight, fourth.null_nested) == ("n", 2.0, "o")


@dataclass(frozen=True)
class NestedValues:
    inner: Inner
    whole: Optional[Inner]
    built: Inner


def test_nested_payload_values_in_a_select(spark: SparkSession) -> None:
    # a nested field, an Optional nested field and a constructed nested payload stored in fields
    q = SOURCE.select(lambda e: NestedValues(e.inner, e.oinner, Inner(e.s + e.inner.label, e.of)))
    out = run_both(spark, q)
    assert out[0] == NestedValues(Inner("a", 1.5), None, Inner(" Hello a", None))
    assert out[3] == NestedValues(Inner("q", 0.0), Inner("o", None), Inner("xq", -2.5))


# --- literals of every type -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literals:
    n: int
    flag: bool
    number: int
    ratio: float
    text: str
    raw: bytes
    amount: Decimal
    moment: datetime
    span: timedelta
    uid: uuid.UUID
    nothing: Optional[int]
    nested: Inner
    widened: float
    sum_raw: Optional[bool]


LITERAL_UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")
LITERAL_TIME = datetime(2009, 7, 15, 11, 13, 33, 317001, tzinfo=timezone(timedelta(hours=2)))


def test_literals_of_every_type(spark: SparkSession) -> None:
    q = SOURCE.where(lambda e: e.i >= 5).select(lambda e: Literals(
        n=e.i, flag=True, number=-(2**62), ratio=2.5, text="lit ✓", raw=b"\x00\xff", amount=Decimal("-1.5"),
        moment=LITERAL_TIME, span=timedelta(days=1, microseconds=1), uid=LITERAL_UUID, nothing=None,
        nested=Inner("k", None), widened=3, sum_raw=e.raw == b"\xff",
    ))
    out = run_both(spark, q)
    assert out == [
        Literals(n, True, -(2**62), 2.5, "lit ✓", b"\x00\xff", Decimal("-1.5"), LITERAL_TIME, timedelta(days=1, microseconds=1),
                 LITERAL_UUID, None, Inner("k", None), 3.0, raw)
        for n, raw in [(7, False), (5, True)]]
    assert out[0].moment.tzinfo == UTC and isinstance(out[0].widened, float) and isinstance(out[0].uid, uuid.UUID)


def test_where_with_a_null_predicate_drops_the_row(spark: SparkSession) -> None:
    q = SOURCE.where(lambda e: (present(e.oi) >= 0) | (e.s == "x")).select(lambda e: Inner(e.s, e.of))
    # row 0: null | False is null: dropped; row 3: null-free, s == "x"
    assert run_both(spark, q) == [Inner("abc", 1.5), Inner("", 0.0), Inner("x", -2.5)]


# --- random rows and expression shapes ------------------------------------------------------------------------


@dataclass(frozen=True)
class H:
    x: int
    y: int
    s: str
    t: str
    ox: Optional[int]
    os: Optional[str]


@dataclass(frozen=True)
class HOut:
    a: Optional[int]
    b: Optional[int]
    c: Optional[int]
    d: Optional[float]
    coalesced: Optional[int]
    chosen: Optional[int]
    found: Optional[bool]
    top: Optional[int]
    bottom: Optional[int]
    joined: Optional[str]
    tail: Optional[str]
    last: Optional[str]
    shouted: Optional[str]
    size: Optional[int]
    prefix: Optional[bool]
    logic: Optional[bool]
    ordered: Optional[bool]
    scaled: Optional[int]
    rounded: Optional[int]


H_SOURCE = sq.input("h", H, shape=sq.Shape.POINT)

H_WHERES: list[Callable[[H], bool]] = [
    lambda e: e.x > e.y,
    lambda e: sq.is_null(e.ox) | (e.s < e.t),
    lambda e: sq.is_in(e.ox, [0, 1, None]) | e.s.endswith("a"),
    lambda e: sq.not_(sq.coalesce(e.ox, e.x) % 3 == 0),
]

h_rows = st.builds(
    H, st.integers(-20, 20), st.integers(-5, 5), st.text(" \tabé", max_size=4), st.text(" ab", max_size=3),
    st.one_of(st.none(), st.integers(-3, 3)), st.one_of(st.none(), st.text("ab ", max_size=2)))


def h_select(e: H) -> HOut:
    return HOut(
        a=e.x + e.y * 3 - 1, b=e.x // abs(e.y), c=e.x % abs(e.y), d=e.x / e.y, coalesced=sq.coalesce(e.ox, e.y),
        chosen=sq.if_(e.x > e.y, e.ox, e.y), found=sq.is_in(e.ox, [1, 2, None]), top=sq.greatest(e.ox, e.x, e.y),
        bottom=sq.least(e.ox, e.y), joined=e.s + e.t, tail=e.s[1:], last=e.s[-1], shouted=e.s.upper() + e.t.strip(),
        size=sq.length(e.s), prefix=e.s.startswith(e.t), logic=(e.x > 0) & (present(e.ox) < 2),
        ordered=sq.is_null(e.os) | (present(e.os) < e.s), scaled=-present(e.ox) * 2, rounded=round(e.x / 2),
    )


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(h_rows, max_size=12), where=st.sampled_from(range(len(H_WHERES))), partitions=st.integers(1, 3))
def test_random_rows_and_expressions(spark: SparkSession, rows: list[H], where: int, partitions: int) -> None:
    q = H_SOURCE.where(H_WHERES[where]).select(h_select)
    items: list[sq.Insert[H]] = [sq.Insert(k, k + 1, row) for k, row in enumerate(rows)]
    expected = sq.reference.run(q, {"h": sq.reference.ReferenceInput(items, FLUSH)})
    df = frame(spark, H, sq.Shape.POINT, items, partitions=partitions)
    assert bind(sq.Binder(spark), H_SOURCE, df, sq.Shape.POINT, FLUSH).run(q) == expected

