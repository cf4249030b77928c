"""Files through Hadoop's FileSystem (``Files``), so that a checkpoint, a sink or a written query
may live on HDFS or an object store as well as on a local disk; and ``publish``, which writes a
DataFrame whole or not at all (under a temporary name, renamed when complete)."""
from __future__ import annotations

import uuid
from typing import Any, Callable, Mapping

from pyspark.sql import DataFrame, SparkSession


class Files:
    """The file systems of ``spark``'s Hadoop configuration, by path (each path's scheme chooses
    its file system).

    >>> files = Files(spark)                                 # doctest: +SKIP
    >>> files.write_text("/data/ck/queries.json", "[]")      # doctest: +SKIP
    >>> files.children("/data/ck")                           # doctest: +SKIP
    ['queries.json']
    """

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def _jvm(self) -> Any:
        jvm = self._spark._jvm
        assert jvm is not None
        return jvm

    def _path(self, path: str) -> Any:
        return self._jvm().org.apache.hadoop.fs.Path(path)

    def _fs(self, path: str) -> Any:
        return self._path(path).getFileSystem(self._spark._jsc.hadoopConfiguration())

    def exists(self, path: str) -> bool:
        """Whether ``path`` (a file or a directory) exists."""
        return bool(self._fs(path).exists(self._path(path)))

    def mkdirs(self, path: str) -> None:
        """Makes directory ``path`` and its parents (a directory that exists is left as it is)."""
        self._fs(path).mkdirs(self._path(path))

    def delete(self, path: str) -> None:
        """Deletes ``path`` and, for a directory, everything under it."""
        self._fs(path).delete(self._path(path), True)

    def rename(self, source: str, target: str) -> bool:
        """Renames ``source`` to ``target`` (making ``target``'s parent first); whether it did."""
        fs = self._fs(target)
        fs.mkdirs(self._path(target).getParent())
        return bool(fs.rename(self._path(source), self._path(target)))

    def write_text(self, path: str, text: str) -> None:
        """Writes ``text`` (UTF-8) to file ``path``, replacing it."""
        out = self._fs(path).create(self._path(path), True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def read_text(self, path: str) -> str:
        """The text (UTF-8) of file ``path``."""
        stream = self._fs(path).open(self._path(path))
        try:
            return str(self._jvm().org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def children(self, path: str) -> list[str]:
        """The names of what directory ``path`` holds (none if it does not exist)."""
        if not self.exists(path):
            return []
        return [str(s.getPath().getName()) for s in self._fs(path).listStatus(self._path(path))]

    def publish(self, df: DataFrame, target: str, format: str, staging: str,
                options: Mapping[str, str] | None = None, keep: Callable[[], bool] | None = None) -> bool:
        """Writes ``df`` to ``target`` whole or not at all: into a temporary directory under
        ``staging`` (on the same file system, outside what readers of ``target``'s parent list),
        renamed when complete — unless ``keep`` (asked once written) says no. A ``target`` that
        exists already (a repeated micro-batch) is kept as it is (``df`` is written all the same:
        what it observes is wanted); returns whether this call published it.

        >>> files.publish(df, "/data/out/micro_batch=3", "parquet", "/data/out/_staging")  # doctest: +SKIP
        True
        """
        name = target.rsplit("/", 1)[1]
        temporary = f"{staging.rstrip('/')}/{name}-{uuid.uuid4().hex}"
        writer = df.write.format(format).mode("overwrite")
        for key, value in (options or {}).items():
            writer = writer.option(key, value)
        writer.save(temporary)
        if self.exists(target) or (keep is not None and not keep()) or not self.rename(temporary, target):
            self.delete(temporary)
            return False
        return True


__all__ = ["Files"]
