"""The driver JVM's class archive: used when built for this JVM and these jars, else not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hashcdc.runtime import class_archive


@pytest.mark.spark
def test_the_test_sessions_jvm_maps_the_archive_make_install_built(spark: Any) -> None:
    """`make install` built the archive, and the driver JVM really maps it (not just told)."""
    from pyspark import SparkContext

    archive = class_archive.archive_path()
    assert archive.is_file(), f"{archive} missing: `make install` builds it"
    jvm_pid = SparkContext._gateway.proc.pid  # noqa: SLF001 - pyspark's JVM process
    assert str(archive) in Path(f"/proc/{jvm_pid}/maps").read_text()
