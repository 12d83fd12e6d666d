"""Files through Hadoop's FileSystem API, so that any Hadoop URI works (file:, hdfs:, s3a:).

The API lives on the JVM of the SparkSession; this module is the one place that reaches
it (through py4j), for listing extracts, reading a header line, the lock files and
generated extracts. No ``os``/``shutil`` call touches a warehouse or landing path.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import SparkSession

from hashcdc.errors import InputDataError

# A URI scheme (file:, hdfs:, s3a:, ...): RFC 3986's letters, then a colon.
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# JVM classes (and the codec factory) by JVM and name: py4j resolves each segment of a
# dotted name with a call of its own, five calls for a `Path` before it is made.
_KEPT: dict[tuple[int, str], tuple[Any, Any]] = {}
_KEPT_LOCK = threading.Lock()


def _kept(jvm: Any, name: str, make: Callable[[], Any]) -> Any:
    """What ``make`` returns for ``name`` in this JVM, made once.

    The JVM's view is kept with it, so that its ``id`` is not another JVM's later.
    """
    key = (id(jvm), name)
    with _KEPT_LOCK:
        found = _KEPT.get(key)
    if found is None:
        found = (jvm, make())
        with _KEPT_LOCK:
            _KEPT[key] = found
    return found[1]


def resolve_location(location: str, base_dir: str) -> str:
    """A location as Hadoop should see it.

    URIs and absolute paths stay as they are; relative paths are taken from ``base_dir``
    (the project folder).
    """
    if _URI_SCHEME.match(location) or os.path.isabs(location):
        return location
    return os.path.normpath(os.path.join(base_dir, location))


@dataclass(frozen=True)
class HadoopFiles:
    """The Hadoop file system API of one SparkSession."""

    jvm: Any
    conf: Any

    @classmethod
    def of(cls, spark: SparkSession) -> HadoopFiles:
        """The API of ``spark``'s JVM and Hadoop configuration."""
        context = spark.sparkContext
        return cls(context._jvm, context._jsc.hadoopConfiguration())  # noqa: SLF001

    def java_class(self, name: str) -> Any:
        """A JVM class by its full name (looked up once per JVM)."""
        return _kept(self.jvm, name, lambda: reduce(getattr, name.split("."), self.jvm))

    def path(self, location: str, child: str | None = None) -> Any:
        """A Hadoop ``Path`` (``child`` inside ``location`` when given)."""
        path_class = self.java_class("org.apache.hadoop.fs.Path")
        return path_class(location) if child is None else path_class(location, child)

    def filesystem(self, path: Any) -> Any:
        """The file system that holds ``path``."""
        return path.getFileSystem(self.conf)

    def data_files(self, location: str) -> list[str]:
        """Data files under a location (file, folder or glob), sorted.

        Names starting with ``.`` or ``_`` (checksums, ``_SUCCESS``) are not data.
        """
        pattern = self.path(location)
        fs = self.filesystem(pattern)
        files: list[str] = []
        for status in fs.globStatus(pattern) or []:
            if status.isDirectory():
                files += self._files_in(
                    fs, status.getPath(), lambda n: not n.startswith((".", "_"))
                )
            else:
                files.append(status.getPath().toString())
        return sorted(files)

    def files_named(self, folder: str, prefix: str) -> list[str]:
        """The files of a folder whose names start with ``prefix`` (hidden ones too), sorted."""
        path = self.path(folder)
        fs = self.filesystem(path)
        if not fs.exists(path):
            return []
        return sorted(self._files_in(fs, path, lambda name: name.startswith(prefix)))

    @staticmethod
    def _files_in(fs: Any, folder: Any, keep: Callable[[str], bool]) -> list[str]:
        """The files (not folders) of a folder whose names ``keep`` accepts."""
        return [
            child.getPath().toString()
            for child in fs.listStatus(folder)
            if child.isFile() and keep(child.getPath().getName())
        ]

    def read_text(self, file: str) -> str:
        """A small file's whole text (UTF-8)."""
        return self._read(file, None).decode("utf-8")

    def exists(self, location: str) -> bool:
        """Whether a file or folder is there."""
        path = self.path(location)
        return bool(self.filesystem(path).exists(path))

    def rename(self, source: str, destination: str) -> None:
        """Move a file or folder to a path that does not exist (one step on HDFS and local)."""
        origin, target = self.path(source), self.path(destination)
        if not self.filesystem(origin).rename(origin, target):
            raise OSError(f"could not move {source} to {destination}")

    def delete(self, location: str) -> None:
        """Remove a file or folder with everything in it (nothing when it is not there)."""
        path = self.path(location)
        self.filesystem(path).delete(path, True)

    def copy_file(self, source: str, destination: str) -> None:
        """Copy one file, across file systems if need be (Hadoop's ``FileUtil.copy``)."""
        origin, target = self.path(source), self.path(destination)
        self.java_class("org.apache.hadoop.fs.FileUtil").copy(
            self.filesystem(origin), origin, self.filesystem(target), target, False, self.conf
        )

    def _open(self, file: str) -> Any:
        """An input stream of a file as Spark reads it (decompressed by its extension)."""
        path = self.path(file)
        stream = self.filesystem(path).open(path)
        # The factory reads the configuration's codecs: one per JVM.
        codecs = _kept(
            self.jvm,
            "codecs",
            lambda: self.java_class("org.apache.hadoop.io.compress.CompressionCodecFactory")(
                self.conf
            ),
        )
        decoder = codecs.getCodec(path)
        return decoder.createInputStream(stream) if decoder is not None else stream

    def head(self, file: str, size: int) -> bytes:
        """Up to the first ``size`` bytes of a file as Spark reads it."""
        return self._read(file, size)

    def _read(self, file: str, size: int | None) -> bytes:
        """A file's first ``size`` bytes (None: all of it), a changed file named as such."""
        stream = self._open(file)
        try:
            return bytes(stream.readAllBytes() if size is None else stream.readNBytes(size))
        except Exception as exc:
            self._raise_if_checksum(exc, file)
            raise
        finally:
            stream.close()

    def _raise_if_checksum(self, exc: Exception, file: str) -> None:
        """Translate Hadoop's checksum failure (a file changed after Spark wrote it)."""
        if "ChecksumException" not in str(exc):
            return
        # Hadoop's local file system checks a file against its `.<name>.crc` sidecar,
        # which Spark wrote with it: a file edited since fails the check.
        raise InputDataError(
            f"{file} no longer matches its checksum file (.{self.path(file).getName()}.crc "
            "beside it): the file was changed after Spark wrote it. Delete the .crc file if "
            "the change is meant, or deliver the file again; nothing was written."
        ) from None

    def first_line(self, file: str, encoding: str = "UTF-8") -> str:
        """The first line of a (possibly compressed) text file, read by the driver."""
        stream = self._open(file)
        text = self.java_class("java.io.InputStreamReader")(stream, encoding)
        reader = self.java_class("java.io.BufferedReader")(text)
        try:
            return reader.readLine() or ""
        except Exception as exc:
            self._raise_if_checksum(exc, file)
            raise
        finally:
            reader.close()
