"""Late events on Spark: the DROP and ADJUST violation policies on the same input, and the record
of every late event (see docs/late-events.md).

The interval events are the power-meter intervals of StreamInsight's "Event Structure" page;
two more intervals arrive after a CTI that they violate. As in the query-binding example of
"Advancing Application Time", a CTI is generated at the start of every event (frequency 1,
delay 0) and a final CTI at INFINITY flushes the query when the input ends:

    arrival  lifetime                      watts   CTI after it
    0        [09:13:33.317, 09:14:09.270)  100     09:13:33.317
    1        [09:14:09.270, 09:14:22.255)  200     09:14:09.270
    2        [09:13:50.000, 09:14:15.000)  150     late: starts before the CTI, ends after it
    3        [09:13:40.000, 09:13:55.000)  120     late: wholly before the CTI
    4        [09:14:22.255, 09:15:04.987)  100     09:14:22.255, then INFINITY (flush)

DROP removes both late events. ADJUST moves the start of the first to the CTI
(09:14:09.270) and removes the second, of which nothing lies after the CTI.

``binding.run(meter, late=True)`` returns, with the events, a ``sq.Late`` record of each late
event: its arrival, what the policy did (``dropped`` or ``adjusted``), its lifetime as it arrived,
the CTI it violated and, for an adjusted one, its new lifetime. ``binding.late(meter)`` gives the
same records as a DataFrame. The script checks that Spark and the reference evaluator agree.

Run it with ``.venv/bin/python examples/late_events.py`` (Java 17+ must be installed), or with
``--reference-only`` for the reference evaluator alone.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timezone

import attrs

import streamql as sq
from streamql.events import InputItem

UTC = timezone.utc
POLICIES = (sq.AdvanceTimePolicy.DROP, sq.AdvanceTimePolicy.ADJUST)


@dataclass(frozen=True)
class Reading:
    consumption: int  # watts


def at(hh: int, mm: int, ss: int, ms: int = 0) -> datetime:
    return datetime(2009, 7, 15, hh, mm, ss, ms * 1000, tzinfo=UTC)


def hms(t: datetime) -> str:
    """09:14:09.270"""
    return t.strftime("%H:%M:%S.%f")[:-3]


# (arrival, start, end, watts), in arrival order
ROWS: list[tuple[int, datetime, datetime, int]] = [
    (0, at(9, 13, 33, 317), at(9, 14, 9, 270), 100),
    (1, at(9, 14, 9, 270), at(9, 14, 22, 255), 200),
    (2, at(9, 13, 50), at(9, 14, 15), 150),
    (3, at(9, 13, 40), at(9, 13, 55), 120),
    (4, at(9, 14, 22, 255), at(9, 15, 4, 987), 100),
]

meter = sq.input("meter", Reading, shape=sq.Shape.INTERVAL)


def settings(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    # StreamInsight: new AdvanceTimeSettings(new AdvanceTimeGenerationSettings(1, 0 s, true), null, policy)
    return sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1, flush=True), policy=policy)


def show(policy: sq.AdvanceTimePolicy, result: sq.Result[Reading]) -> None:
    print(f"{policy.name}: dropped={result.dropped} adjusted={result.adjusted}")
    for e in result.events:
        print(f"  [{hms(e.start)}, {hms(e.end)})  {e.payload.consumption:>3} W")
    for r in result.late:
        assert r.start is not None and r.end is not None and r.cti is not None
        moved = "" if r.new_start is None or r.new_end is None else f" -> [{hms(r.new_start)}, {hms(r.new_end)})"
        print(f"  late: arrival {r.arrival}  {r.action:<8}  [{hms(r.start)}, {hms(r.end)}){moved}"
              f"  cti {hms(r.cti)}  {r.payload.consumption:>3} W")


def reference_results() -> dict[sq.AdvanceTimePolicy, sq.Result[Reading]]:
    """Both policies in the reference evaluator (plain Python, no JVM): arrival order is list order."""
    items: list[InputItem[Reading]] = [sq.Insert(start, end, Reading(watts)) for _, start, end, watts in ROWS]
    return {policy: sq.reference.run(meter, {"meter": sq.reference.ReferenceInput(items, settings(policy))}, late=True)
            for policy in POLICIES}


def spark_results() -> dict[sq.AdvanceTimePolicy, sq.Result[Reading]]:
    """Both policies on local Spark, printed as they come; then the ADJUST run's records as a DataFrame."""
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-late-events",
                                "spark.sql.shuffle.partitions": "4"})  # a handful of rows: a handful of scan units
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.createDataFrame(ROWS, "arrival long, start_time timestamp, end_time timestamp, consumption long")
        results = {}
        for policy in POLICIES:
            binding = sq.Binder(spark).bind(meter, df, start="start_time", end="end_time", arrival="arrival",
                                            advance_time=settings(policy))
            results[policy] = binding.run(meter, late=True)
            show(policy, results[policy])
        # the last binding is ADJUST's: one row per record, the payload a struct of its fields
        print("\nbinding.late(meter) with ADJUST:")
        binding.late(meter).show(truncate=False)
        return results
    finally:
        spark.stop()


def main() -> None:
    """``--reference-only``: run the query in the reference evaluator alone (no JVM)."""
    expected = reference_results()
    if "--reference-only" in sys.argv[1:]:
        for policy in POLICIES:
            show(policy, expected[policy])
        return
    results = spark_results()
    agree = True
    for policy in POLICIES:
        got, want = results[policy], expected[policy]
        # a bad row's reason is worded differently on Spark (there are none here): compared without it
        if ((got.events, got.dropped, got.adjusted, got.final_cti, [attrs.evolve(r, reason=None) for r in got.late])
                != (want.events, want.dropped, want.adjusted, want.final_cti,
                    [attrs.evolve(r, reason=None) for r in want.late])):
            print(f"  !! {policy.name}: Spark and the reference evaluator differ:\n  {got}\n  {want}")
            agree = False
    print("\nSpark and sq.reference.run agree:", agree)
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
