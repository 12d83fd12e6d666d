"""What the JVM joins into one text: a listing's kinds and the codecs' name endings."""

from __future__ import annotations

import pytest

from hashcdc.runtime.hadoop import _endings, _kind

FILE = (
    "DeprecatedRawLocalFileStatus{path=file:/landing/t/x 1.json; isDirectory=false; "
    "length=2; replication=1; blocksize=33554432; modification_time=1; access_time=1; "
    "owner=; group=; permission=rw-rw-rw-; isSymlink=false; hasAcl=false; "
    "isEncrypted=false; isErasureCoded=false}"
)


def test_a_file_a_folder_and_a_link_are_told_apart() -> None:
    assert _kind("file:/landing/t/x 1.json", FILE) == "file"
    folder = "FileStatus{path=hdfs://nn/landing/t; isDirectory=true; modification_time=1}"
    assert _kind("hdfs://nn/landing/t", folder) == "folder"
    link = FILE.replace("isSymlink=false", "isSymlink=true; symlink=file:/elsewhere")
    assert _kind("file:/landing/t/x 1.json", link) == "link"


@pytest.mark.parametrize(
    "described",
    [
        FILE.replace("{path=", "{location="),  # another shape: asked element by element
        FILE.replace("isDirectory=false", "isDirectory=maybe"),
        FILE.replace("; isSymlink=false", ""),
    ],
)
def test_a_description_that_does_not_read_as_expected_is_not_guessed(described: str) -> None:
    assert _kind("file:/landing/t/x 1.json", described) is None


def test_a_path_that_holds_the_markers_is_read_from_its_own_start() -> None:
    path = "file:/landing/t/odd; isDirectory=true; name"
    described = FILE.replace("file:/landing/t/x 1.json", path)
    assert _kind(path, described) == "file"


def test_the_codecs_endings_are_read_back_from_their_reversed_keys() -> None:
    described = (
        "{ 2zb.: org.apache.hadoop.io.compress.BZip2Codec, "
        "zg.: org.apache.hadoop.io.compress.GzipCodec }"
    )
    assert _endings(described) == (".bz2", ".gz")
    assert _endings("{  }") == ()
    assert _endings("CompressionCodecFactory@1f2e") is None
    assert _endings("{ zg. }") is None
