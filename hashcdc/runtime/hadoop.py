"""Files through Hadoop's FileSystem API, so that any Hadoop URI works (file:, hdfs:, s3a:).

The API lives on the JVM of the SparkSession; this module is the one place that reaches
it (through py4j), for listing extracts, reading a header line, the lock files and
generated extracts. No ``os``/``shutil`` call touches a warehouse or landing path, but
for one case the JVM could only slow down: the first bytes of a local file that Hadoop
would hand over as they are (:meth:`HadoopFiles.head`). Each py4j call is a round trip,
so a listing is joined into one text in the JVM rather than fetched element by element.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from hashcdc.errors import InputDataError
from hashcdc.state.versions import local_location

# A URI scheme (file:, hdfs:, s3a:, ...): RFC 3986's letters, then a colon.
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# JVM classes (and the codec factory) by JVM and name: py4j resolves each segment of a
# dotted name with a call of its own, five calls for a `Path` before it is made.
_KEPT: dict[tuple[int, str], tuple[Any, Any]] = {}
_KEPT_LOCK = threading.Lock()
# Joins a listing's entries into one text in the JVM: no path holds it.
_SEPARATOR = "\u0000"


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
        for path, kind in self._listed(fs.globStatus(pattern)):
            if kind == "folder":
                files += self._files_in(fs, self.path(path), lambda n: not n.startswith((".", "_")))
            else:
                files.append(path)
        return sorted(files)

    def files_named(self, folder: str, prefix: str) -> list[str]:
        """The files of a folder whose names start with ``prefix`` (hidden ones too), sorted.

        The JVM picks them (a glob filter), so that a folder of many other files is not
        handed over.
        """
        path = self.path(folder)
        fs = self.filesystem(path)
        if not fs.exists(path):
            return []
        pattern = re.sub(r"([\\\[\]{}*?!^])", r"\\\1", prefix) + "*"
        named = fs.listStatus(path, self.java_class("org.apache.hadoop.fs.GlobFilter")(pattern))
        return sorted(p for p, kind in self._listed(named) if kind == "file")

    def _files_in(self, fs: Any, folder: Any, keep: Callable[[str], bool]) -> list[str]:
        """The files (not folders) of a folder whose names ``keep`` accepts."""
        return [
            path
            for path, kind in self._listed(fs.listStatus(folder))
            if kind == "file" and keep(path.rsplit("/", 1)[-1])
        ]

    def _listed(self, statuses: Any) -> list[tuple[str, str]]:
        """Each status's path and kind (``file``, ``folder``, ``link``), in a few calls.

        py4j fetches an array's elements one call each, and each one's path and kind with
        more (about five calls a file: a folder of 10,000 files took seconds). The JVM joins
        the paths, and the statuses' descriptions, into one text each instead; a
        description that does not read as expected is asked for element by element.
        """
        if statuses is None or len(statuses) == 0:
            return []
        join = self.java_class("org.apache.hadoop.util.StringUtils").join
        paths = self.java_class("org.apache.hadoop.fs.FileUtil").stat2Paths(statuses)
        paths = join(_SEPARATOR, self._iterable(paths)).split(_SEPARATOR)
        described = join(_SEPARATOR, self._iterable(statuses)).split(_SEPARATOR)
        if len(paths) == len(described) == len(statuses):
            kinds = [_kind(path, text) for path, text in zip(paths, described, strict=True)]
            if None not in kinds:
                return list(zip(paths, kinds, strict=True))  # type: ignore[arg-type]
        return [(status.getPath().toString(), _status_kind(status)) for status in statuses]

    def _iterable(self, array: Any) -> Any:
        """A JVM array as a ``java.lang.Iterable`` (py4j does not pass it to ``T[]``)."""
        wrapped = self.java_class("scala.collection.immutable.ArraySeq").unsafeWrapArray(array)
        return self.java_class("scala.jdk.javaapi.CollectionConverters").asJava(wrapped)

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
        decoder = self._codecs().getCodec(path)
        return decoder.createInputStream(stream) if decoder is not None else stream

    def _codecs(self) -> Any:
        """Hadoop's codec factory (it reads the configuration's codecs: one per JVM)."""
        return _kept(
            self.jvm,
            "codecs",
            lambda: self.java_class("org.apache.hadoop.io.compress.CompressionCodecFactory")(
                self.conf
            ),
        )

    def _codec_endings(self) -> tuple[str, ...] | None:
        """The name endings Hadoop decompresses a file by (``.gz``, …); None if unsure.

        Read once per JVM from the codec factory's description, which lists each ending
        reversed (``{ zg.: …GzipCodec, … }``).
        """
        return _kept(self.jvm, "codec endings", lambda: _endings(str(self._codecs().toString())))

    def _as_is(self, file: str) -> Path | None:
        """A local file whose bytes Hadoop would hand over as they are, to read here.

        A ``file:`` URI or an absolute path, named without a codec's ending, with no
        checksum file beside it (Hadoop's local file system checks a file against one).
        Reading it here costs no call into the JVM (six a file through Hadoop: a stream
        of 10,000 small files took seconds).
        """
        local = local_location(file)
        endings = self._codec_endings()
        if local is None or endings is None or local.name.endswith(endings):
            return None
        if local.with_name(f".{local.name}.crc").exists():
            return None
        return local

    def head(self, file: str, size: int) -> bytes:
        """Up to the first ``size`` bytes of a file as Spark reads it."""
        local = self._as_is(file)
        if local is not None:
            with local.open("rb") as handle:
                return handle.read(size)
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


def _kind(path: str, described: str) -> str | None:
    """A status's kind from its description (``FileStatus.toString``), None if unsure.

    The description starts ``<class>{path=<path>; isDirectory=<bool>`` and names
    ``isSymlink=<bool>`` after the fields that cannot hold it (sizes, times, owner, group).
    """
    marker = f"{{path={path}; isDirectory="
    at = described.find(marker)
    if at < 0:
        return None
    rest = described[at + len(marker) :]
    if rest.startswith("true;"):
        return "folder"
    if not rest.startswith("false;"):
        return None
    link = rest.find("; isSymlink=")
    if link < 0:
        return None
    return "link" if rest[link + len("; isSymlink=") :].startswith("true") else "file"


def _status_kind(status: Any) -> str:
    if status.isDirectory():
        return "folder"
    return "file" if status.isFile() else "link"


def _endings(described: str) -> tuple[str, ...] | None:
    """The name endings in a codec factory's description (``{ zg.: …, 2zb.: … }``)."""
    inner = described.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        return None
    entries = [entry.strip() for entry in inner[1:-1].split(",") if entry.strip()]
    endings = []
    for entry in entries:
        reversed_ending, colon, codec = entry.partition(": ")
        if not colon or not codec:
            return None
        endings.append(reversed_ending[::-1])
    return tuple(endings)
