"""Property tests: random inputs, arrival disorder, advance-time settings and operator pipelines
give identical Results on Spark and in the reference evaluator (the specification)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from support.frames import bind, frame
from support.streams import P, advance_settings, build, inputs, pipelines, side_by_side
from support.depth import spark_examples
from support.must_release import check_release


@settings(max_examples=spark_examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape)), label="items")
    at = data.draw(advance_settings(), label="settings")
    ops = data.draw(pipelines(), label="ops")
    output = data.draw(st.sampled_from(list(sq.Shape)), label="output")
    # an arrival column whose rows are shuffled, or stored in arrival order (no numbering needed)
    arrival_order = data.draw(st.sampled_from(["none", "shuffled", "stored"]), label="arrival column")
    arrival = arrival_order != "none"
    partitions = data.draw(st.integers(1, 4), label="partitions")
    source = sq.input("in", P, shape)
    q = build(source, ops)
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)}, output=output)
    df = frame(spark, P, shape, items, partitions=partitions, arrival=arrival, seed=len(items),
               shuffled=arrival_order == "shuffled")
    actual = bind(sq.Binder(spark), source, df, shape, at, arrival=arrival).run(q, output=output)
    assert actual == expected
    check_release(q, {"in": sq.reference.ReferenceInput(items, at)}, output, expected)
