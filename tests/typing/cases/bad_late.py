"""Mistakes with late events: mypy reports each on its line, as the marker comments say."""
from __future__ import annotations

import dataclasses
from datetime import datetime

import streamql as sq
from streamql.reference import ReferenceInput


@dataclasses.dataclass(frozen=True)
class Usage:
    meter: str
    watts: int


usage = sq.input("usage", Usage, shape=sq.Shape.INTERVAL)
inputs = {"usage": ReferenceInput[Usage]([sq.Insert(0, 10, Usage("m1", 100)), sq.Cti(5)])}

a = sq.reference.run(usage, inputs, late="yes")  # E: Argument "late" to "run" has incompatible type "str"; expected "bool"
record = sq.reference.run(usage, inputs, late=True).late[0]
b = record.arrival + "x"  # E: Unsupported operand types for + ("int" and "str")  # E: Unsupported left operand type for + ("None")
record.action = "adjusted"  # E: Property "action" defined in "Late" is read-only
# a start edge's end, a bad row's times: None is possible
c: datetime = record.start  # E: Incompatible types in assignment (expression has type "datetime | None", variable has type "datetime")
# the records are not events
d: list[sq.Event[Usage]] = sq.reference.run(usage, inputs, late=True).late  # E: Incompatible types in assignment (expression has type "list[Late]", variable has type "list[Event[Usage]]")
e = sq.Late("usage", "1", "dropped", "INSERT", None, None, None, None, None, None, None)  # E: Argument 2 to "Late" has incompatible type "str"; expected "int | None"


def on_spark(binding: sq.Binder) -> None:
    binding.run(usage, late="yes")  # E: Argument "late" to "run" of "Binder" has incompatible type "str"; expected "bool"
    binding.write(usage, "/data/out", late_path=True)  # E: Argument "late_path" to "write" of "Binder" has incompatible type "bool"; expected "str | None"
    binding.late(usage, late=True)  # E: Unexpected keyword argument "late" for "late" of "Binder"
