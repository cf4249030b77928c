"""Windows on Spark: the grouping and the window operator's compiler (``grouping``), snapshot
windows (``snapshot``), hopping and tumbling windows (``hopping``), count windows (``count``),
session windows (``session``), top-k per window over any of them (``top_k``), the Esper-style
windows and batches (``esper``, which number events as count windows do) and the stability rule
the formed windows share (``stability``).

Importing the package registers the window operators with ``compile_node``.
"""
from streamql.spark.windows import esper as _esper  # noqa: F401 - registers the Esper-style operators
from streamql.spark.windows import grouping as _grouping  # noqa: F401 - registers the window operators
from streamql.spark.windows import top_k as _top_k  # noqa: F401 - registers top_k
