"""The driver JVM's class archive: used only when it exists, and one per jar set."""

from __future__ import annotations

from pathlib import Path

import pytest

from hashcdc.runtime import class_archive
from hashcdc.runtime.jars import RUNTIME_JARS

OPTIONS = class_archive.DRIVER_OPTIONS


def _jars(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder.mkdir(exist_ok=True)
    for jar in RUNTIME_JARS:
        (folder / jar.file_name).write_bytes(b"jar")
    monkeypatch.setenv("HASHCDC_JARS_DIR", str(folder))
    monkeypatch.delenv(class_archive.DUMP_VARIABLE, raising=False)


def test_a_session_uses_the_archive_only_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _jars(tmp_path / "jars", monkeypatch)
    settings = {OPTIONS: "-Dderby.stream.error.file=target/derby.log", "spark.app.name": "x"}
    assert class_archive.with_class_archive(settings) == settings  # none built: as before

    archive = class_archive.archive_path()
    archive.write_bytes(b"archive")
    options = class_archive.with_class_archive(settings)[OPTIONS]
    assert options.startswith("-Dderby.stream.error.file=target/derby.log ")
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert class_archive.with_class_archive({})[OPTIONS].startswith("-XX:SharedArchiveFile=")

    monkeypatch.setenv(class_archive.DUMP_VARIABLE, str(tmp_path / "out.jsa"))
    dumping = class_archive.with_class_archive(settings)[OPTIONS]
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'out.jsa'}" in dumping
    assert "SharedArchiveFile" not in dumping


def test_another_jar_means_another_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _jars(tmp_path / "jars", monkeypatch)
    before = class_archive.archive_path()
    (tmp_path / "jars" / RUNTIME_JARS[0].file_name).write_bytes(b"a rebuilt jar")
    after = class_archive.archive_path()
    assert before != after and after.parent == before.parent
