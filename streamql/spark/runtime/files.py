"""Files by path (``Files``), so that a checkpoint, a sink or a written query may live on HDFS or
an object store as well as on a local disk; and ``publish``, which writes a DataFrame whole or not
at all (under a temporary name, renamed when complete).

On a classic session the paths go through Hadoop's FileSystem of the session's configuration, as
Spark's own reads and writes do. A Spark Connect client has no JVM: there they go through
``pyarrow.fs`` (local paths, ``file:``, ``hdfs://``, ``s3://``/``s3a://``, ``gs://``,
``abfs[s]://``), with the client's credentials; the paths must then name storage the client and the
server both reach (docs/spark-connect.md)."""
from __future__ import annotations

import os
import uuid
from typing import Any, Callable, Mapping

from pyspark.sql import DataFrame

from streamql.spark.runtime.connect import context_of


class Files:
    """The file systems of ``spark``'s Hadoop configuration, by path (each path's scheme chooses
    its file system).

    >>> files = Files(spark)                                 # doctest: +SKIP
    >>> files.write_text("/data/ck/queries.json", "[]")      # doctest: +SKIP
    >>> files.children("/data/ck")                           # doctest: +SKIP
    ['queries.json']
    """

    def __new__(cls, spark: Any = None) -> Files:  # None: unpickled (a Connect foreachBatch)
        if cls is Files and context_of(spark) is None:
            return object.__new__(ArrowFiles)
        return object.__new__(cls)

    def __init__(self, spark: Any) -> None:
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


class ArrowFiles(Files):
    """``Files`` through ``pyarrow.fs``, for a Spark Connect session (no JVM on the client)."""

    _SCHEMES = {"s3a": "s3", "s3n": "s3"}  # Hadoop's names of S3

    def __init__(self, spark: Any) -> None:
        import pyarrow.fs as pafs

        super().__init__(spark)
        self._local = pafs.LocalFileSystem()

    def _resolve(self, path: str) -> tuple[Any, str]:
        """The file system of ``path`` and the path within it."""
        import pyarrow.fs as pafs

        scheme, sep, rest = path.partition("://")
        if not sep and not path.startswith("file:"):
            return self._local, os.path.abspath(path)
        if scheme in self._SCHEMES:
            path = f"{self._SCHEMES[scheme]}://{rest}"
        fs, within = pafs.FileSystem.from_uri(path)
        return fs, within

    def _info(self, path: str) -> Any:
        fs, local = self._resolve(path)
        return fs.get_file_info(local)

    def exists(self, path: str) -> bool:
        import pyarrow.fs as pafs

        return bool(self._info(path).type != pafs.FileType.NotFound)

    def mkdirs(self, path: str) -> None:
        fs, local = self._resolve(path)
        fs.create_dir(local, recursive=True)

    def delete(self, path: str) -> None:
        import pyarrow.fs as pafs

        fs, local = self._resolve(path)
        kind = fs.get_file_info(local).type
        if kind == pafs.FileType.Directory:
            fs.delete_dir(local)
        elif kind != pafs.FileType.NotFound:
            fs.delete_file(local)

    def rename(self, source: str, target: str) -> bool:
        fs, local_source = self._resolve(source)
        _, local_target = self._resolve(target)
        if self.exists(target):
            return False  # as Hadoop's rename: an existing target is not replaced
        parent = local_target.rstrip("/").rsplit("/", 1)[0]
        if parent:
            fs.create_dir(parent, recursive=True)
        try:
            fs.move(local_source, local_target)
        except OSError:
            return False
        return True

    def write_text(self, path: str, text: str) -> None:
        fs, local = self._resolve(path)
        parent = local.rstrip("/").rsplit("/", 1)[0]
        if parent:
            fs.create_dir(parent, recursive=True)
        with fs.open_output_stream(local) as out:
            out.write(text.encode("utf-8"))

    def read_text(self, path: str) -> str:
        fs, local = self._resolve(path)
        with fs.open_input_stream(local) as stream:
            return bytes(stream.read()).decode("utf-8")

    def children(self, path: str) -> list[str]:
        import pyarrow.fs as pafs

        fs, local = self._resolve(path)
        if fs.get_file_info(local).type != pafs.FileType.Directory:
            return []
        return [info.base_name for info in fs.get_file_info(pafs.FileSelector(local))]


__all__ = ["ArrowFiles", "Files"]
