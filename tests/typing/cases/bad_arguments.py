"""Arguments of the wrong type to operators, helpers and settings."""
from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Optional

import streamql as sq


@dataclasses.dataclass(frozen=True)
class Reading:
    meter: str
    consumption: int
    voltage: float
    note: Optional[str] = None


readings = sq.input("readings", Reading)

# lifetimes need timedeltas (or, for alter_duration, a function returning one)
a = readings.alter_duration(5)  # E: Argument 1 to "alter_duration" of "Stream" has incompatible type "int"; expected "timedelta | Callable[[Reading], timedelta]"
b = readings.alter_duration(lambda e: e.consumption)  # E: Argument 1 to "alter_duration" of "Stream" has incompatible type "Callable[[Reading], int]"  # E: Incompatible return value type (got "int", expected "timedelta")
c = readings.shift("1h")  # E: Argument 1 to "shift" of "Stream" has incompatible type "str"; expected "timedelta"
d = readings.shift(3600)  # E: Argument 1 to "shift" of "Stream" has incompatible type "int"; expected "timedelta"
e = readings.alter_lifetime(start_shift=60)  # E: Argument "start_shift" to "alter_lifetime" of "Stream" has incompatible type "int"; expected "timedelta"
f = readings.alter_lifetime(duration="1m")  # E: Argument "duration" to "alter_lifetime" of "Stream" has incompatible type "str"; expected "timedelta | None"
g = readings.to_point(timedelta(1))  # E: Too many arguments for "to_point" of "Stream"

# where needs a bool condition
h = readings.where(lambda e: e.meter)  # E: Argument 1 to "where" of "Stream" has incompatible type "Callable[[Reading], str]"; expected "Callable[[Reading], bool]"  # E: Incompatible return value type (got "str", expected "bool")
i = readings.where(lambda e: e.consumption + 1)  # E: Argument 1 to "where" of "Stream" has incompatible type "Callable[[Reading], int]"  # E: Incompatible return value type (got "int", expected "bool")
j = readings.where(lambda e: e.note)  # E: Argument 1 to "where" of "Stream" has incompatible type "Callable[[Reading], str | None]"  # E: Incompatible return value type (got "str | None", expected "bool")
k = readings.where(lambda e, f: e.consumption > f.consumption)  # E: Cannot infer type of lambda  # E: Argument 1 to "where" of "Stream" has incompatible type "Callable[[Any, Any], Any]"; expected "Callable[[Reading], bool]"
m = readings.where(True)  # E: Argument 1 to "where" of "Stream" has incompatible type "bool"; expected "Callable[[Reading], bool]"

# operands and helper arguments of the wrong type
n = readings.where(lambda e: e.consumption > "100")  # E: Unsupported operand types for > ("int" and "str")
o = readings.where(lambda e: e.meter + 1 == "m1")  # E: Unsupported operand types for + ("str" and "int")
p = readings.where(lambda e: sq.length(e.consumption) > 2)  # E: Argument 1 to "length" has incompatible type "int"; expected "str"
q = readings.where(lambda e: sq.if_(e.voltage > 1.0, e.meter, "x"))  # E: Argument 1 to "where" of "Stream" has incompatible type "Callable[[Reading], str]"  # E: Incompatible return value type (got "str", expected "bool")

# declaring inputs
r = sq.input(42, Reading)  # E: Argument 1 to "input" has incompatible type "int"; expected "str"
s = sq.input("readings", Reading, shape="POINT")  # E: Argument "shape" to "input" has incompatible type "str"; expected "Shape"
t: sq.Stream[Reading] = sq.input("readings", Reading("m", 1, 1.0))  # E: Argument 2 to "input" has incompatible type "Reading"; expected "type[Reading]"

# advance-time settings
u = sq.AdvanceTimeGeneration(every_events="10")  # E: Argument "every_events" to "AdvanceTimeGeneration" has incompatible type "str"; expected "int | None"
v = sq.AdvanceTimeGeneration(every=60)  # E: Argument "every" to "AdvanceTimeGeneration" has incompatible type "int"; expected "timedelta | None"
w = sq.AdvanceTimeGeneration(every_events=1, delay=5)  # E: Argument "delay" to "AdvanceTimeGeneration" has incompatible type "int"; expected "timedelta"
x = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeImport("readings"))  # E: Argument "generation" to "AdvanceTimeSettings" has incompatible type "AdvanceTimeImport"; expected "AdvanceTimeGeneration | None"
y = sq.AdvanceTimeSettings(import_="readings")  # E: Argument "import_" to "AdvanceTimeSettings" has incompatible type "str"; expected "AdvanceTimeImport | None"
z = sq.AdvanceTimeSettings(u, policy="ADJUST")  # E: Argument "policy" to "AdvanceTimeSettings" has incompatible type "str"; expected "AdvanceTimePolicy"
aa = sq.AdvanceTimeImport(from_input=readings)  # E: Argument "from_input" to "AdvanceTimeImport" has incompatible type "Stream[Reading]"; expected "str"
bb: sq.reference.ReferenceInput[Reading] = sq.reference.ReferenceInput([], advance_time=u)  # E: Argument "advance_time" to "ReferenceInput" has incompatible type "AdvanceTimeGeneration"; expected "AdvanceTimeSettings | None"
cc = sq.reference.run(readings, {"readings": sq.reference.ReferenceInput([])}, output="EDGE")  # E: Argument "output" to "run" has incompatible type "str"; expected "Shape"
dd = sq.reference.run(readings, [sq.reference.ReferenceInput([])])  # E: Argument 2 to "run" has incompatible type "list[ReferenceInput[Never]]"; expected "Mapping[str, ReferenceInput[Any] | PartitionedInput[Any]]"
