"""The test processes remember what py4j's name lookups found: a class, a package or a static method
looked up by name on a gateway (``JVMView``, ``JavaPackage``, ``JavaClass``), as Python's own import
system remembers a module.

Classic PySpark asks the JVM for a name at every call of a ``pyspark.sql.functions`` function (the
class ``org.apache.spark.sql.functions``, then the function in it, then the call: three round trips,
two of them lookups) and at every conversion of a list of columns (``sc._jvm.PythonUtils``, which
the JVM looks for in each package the view imports before it finds it). A hand-worked release case
made 7,770 calls to the JVM, 2,500 of them such lookups, at 0.3-1.3 ms each on the test machine: a
sixth of the case's time (docs/decisions.md, "Continuous integration's time").

What is remembered is what the JVM would answer again: the same class, package or static method
object for the same name on the same gateway (the cache holds the gateway client, so its identity
stays unique while remembered). A static field's value is never remembered (it is read again each
time), nor a failed lookup. The tests' results do not depend on it; only the number of round trips
does. streamql itself leaves py4j as it is: the user's process is the user's.
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager
from typing import Any, Callable, Hashable, Iterator

_FOUND: dict[Hashable, Any] = {}
#: py4j's own ``__getattr__`` of each class ``install`` replaced
_OWN: dict[type, Any] = {}
_installed = False


def _remembering(lookup: Callable[[Any, str], Any], key: Callable[[Any, str], Hashable],
                 remembered_kinds: tuple[type, ...]) -> Callable[[Any, str], Any]:
    def remembered(self: Any, name: str) -> Any:
        k = key(self, name)
        found = _FOUND.get(k)
        if found is None:
            found = lookup(self, name)
            if isinstance(found, remembered_kinds):
                _FOUND[k] = found
        return found
    return remembered


def install() -> None:
    """Makes py4j's lookups by name remember what they found (once per process). Imports py4j only
    here: an environment with ``pyspark-client`` (Spark Connect only) has none."""
    global _installed
    if _installed:
        return
    _installed = True
    # py4j ships no type information: its module is taken as ``Any``
    gateway: Any = importlib.import_module("py4j.java_gateway")
    kinds = (gateway.JavaClass, gateway.JavaPackage, gateway.JavaMember)
    _OWN.update({cls: cls.__getattr__ for cls in (gateway.JVMView, gateway.JavaPackage, gateway.JavaClass)})
    gateway.JVMView.__getattr__ = _remembering(
        gateway.JVMView.__getattr__, lambda view, name: (id(view._gateway_client), "view", view._id, name), kinds)
    gateway.JavaPackage.__getattr__ = _remembering(
        gateway.JavaPackage.__getattr__,
        lambda package, name: (id(package._gateway_client), "package", package._fqn, package._jvm_id, name), kinds)
    gateway.JavaClass.__getattr__ = _remembering(
        gateway.JavaClass.__getattr__, lambda cls, name: (id(cls._gateway_client), "class", cls._fqn, name), kinds)


@contextmanager
def set_aside() -> Iterator[None]:
    """py4j's own lookups inside the block, what was remembered forgotten (to compare with them)."""
    ours = {cls: getattr(cls, "__getattr__") for cls in _OWN}
    _FOUND.clear()
    for cls, own in _OWN.items():
        setattr(cls, "__getattr__", own)
    try:
        yield
    finally:
        for cls, remembering in ours.items():
            setattr(cls, "__getattr__", remembering)
