"""Which inputs a query's scans read, in which order, and the scan of one input with what it
imports: shared by the batch binder (``streamql.binder``) and the streaming step
(``streamql.spark.streaming.step``)."""
from __future__ import annotations

from typing import Mapping

from streamql.errors import BindingError
from streamql.spark.ingress.arrival_scan import ScanState
from streamql.spark.ingress.binding import Binding
from streamql.spark.ingress.scan import Imported, Ingress, Summarized, Wanted, first_passes, on_one_clock, run_ingress


def scan_order(bindings: Mapping[str, Binding], read: set[str]) -> list[str]:
    """The inputs ``read`` and those whose CTIs they import (transitively), each after the input
    it imports from; refuses an import of an input that is not bound and a cycle of imports."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise BindingError("CTI imports form a cycle: " + " -> ".join(path + (name,)))
        if name in order:
            return
        if name not in bindings:
            raise BindingError(f"input {path[-1]!r} imports the CTIs of {name!r}, which is not bound")
        settings = bindings[name].advance_time
        if settings is not None and settings.import_ is not None:
            visit(settings.import_.from_input, path + (name,))
        order.append(name)

    for name in sorted(read):
        visit(name, ())
    return order


def scan_input(bindings: Mapping[str, Binding], name: str, done: Mapping[str, Ingress],
               initial: ScanState = ScanState(), match_edges: bool = True, final: bool = True,
               first_position: int = 0, first: Summarized | None = None) -> Ingress:
    """Scans input ``name`` (``done``: the inputs scanned before it, in ``scan_order``). A
    streaming step scans its micro-batch from the carried state (``initial``), matches edges
    itself, and flushes only when the run stops (``final``); ``first_position``: the input's rows
    in the micro-batches before; ``first``: its first summary pass, made with the other inputs'
    (``first_passes``)."""
    b = bindings[name]
    settings = b.advance_time
    imported = None
    if settings is not None and settings.import_ is not None:
        source = settings.import_.from_input
        one_clock = on_one_clock(bindings, name)
        imported = Imported(done[source], one_clock)
        if one_clock:
            mine = b.source.schema[b.arrival].dataType if b.arrival else None
            theirs = bindings[source].source.schema[bindings[source].arrival or ""].dataType
            if mine != theirs:
                raise BindingError(f"inputs {name!r} and {source!r} share one arrival clock, but their "
                                   f"arrival columns have different types ({mine} and {theirs})")
    # an input whose CTIs another imports on a shared arrival clock hands over its CTI steps
    cti_steps = b.arrival is not None and b.partition is None and any(
        other.advance_time is not None and other.advance_time.import_ is not None
        and other.advance_time.import_.from_input == name and other.arrival is not None
        and other.partition is None for other in bindings.values())
    flush = final and settings is not None and settings.generation is not None and settings.generation.flush
    return run_ingress(b, imported, Wanted(flush=flush, cti_steps=cti_steps, match_edges=match_edges, initial=initial,
                                           first_position=first_position), first)


__all__ = ["first_passes", "scan_input", "scan_order"]
