"""A class-data-sharing archive of the driver JVM: Spark starts in about half the time.

Before a date's first row is read, the driver JVM loads and verifies tens of thousands of
classes: Spark SQL, Hive's metastore client, DataNucleus, Derby, Delta. Measured on the
2-core machine (session, first catalog call, first Delta read): 14–17 s without an
archive, 6–10 s with one. A HotSpot dynamic CDS archive (``-XX:ArchiveClassesAtExit``)
keeps those classes parsed and verified in a file the JVM maps at start-up
(``-XX:SharedArchiveFile``).

``make install`` builds it once (``python -m hashcdc.runtime.class_archive``): one ``hashcdc run``
of two small dates in a scratch project, in a JVM that writes the archive as it exits.
The archive is valid only for the JVM build and the jars it was made with, so its file
name carries a fingerprint of them (:func:`archive_path`): after a JVM, pyspark or jar
update there is simply no archive under the new name, and Spark starts as before until
``make install`` builds the new one. A JVM that cannot use an archive ignores it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hashcdc.errors import HashcdcError
from hashcdc.runtime.jars import RUNTIME_JARS, jars_dir
from hashcdc.runtime.scaffold import package_root, scratch_project

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
# The JVM writes the archive at exit when this is set (the training run only).
DUMP_VARIABLE = "HASHCDC_CLASS_ARCHIVE_DUMP"
# A JVM that finds the archive unusable says so in a warning: not the user's concern.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
TRAINING_DATES = ("2024-01-01", "2024-01-02")
TRAINING_TABLE = """\
name: training
extract_type: full
source:
  path: landing/training/{business_date}.csv
  format: csv
columns:
  - {name: id, type: int, key: true}
  - {name: amount, type: "decimal(8,2)"}
  - {name: paid_on, type: date}
  - {name: paid_at, type: timestamp}
  - {name: note, type: string}
"""


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def fingerprint() -> str:
    """What an archive is valid for: the JVM's binary, pyspark's version and our jars."""
    import pyspark

    parts = [pyspark.__version__, str(Path(pyspark.__file__).resolve().parent)]
    java = _java()
    if java is not None:
        libjvm = next(java.parent.parent.glob("lib/server/libjvm.so"), java)
        parts += [str(libjvm), str(libjvm.stat().st_size), str(int(libjvm.stat().st_mtime))]
    folder = jars_dir()
    for jar in RUNTIME_JARS:
        path = folder / jar.file_name
        parts += [jar.file_name, str(path.stat().st_size) if path.is_file() else "missing"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def archive_path() -> Path:
    """The archive's file for this JVM and these jars (it may not exist)."""
    return jars_dir() / f"spark-classes-{fingerprint()}.jsa"


def with_class_archive(settings: dict[str, object]) -> dict[str, object]:
    """A session's settings with the driver JVM told to use the archive, when there is one.

    In the training run (``HASHCDC_CLASS_ARCHIVE_DUMP`` set), told to write it instead.
    """
    dump = os.environ.get(DUMP_VARIABLE)
    if dump:
        flag = f"-XX:ArchiveClassesAtExit={dump}"
    else:
        archive = archive_path()
        if not archive.is_file():
            return settings
        flag = f"-XX:SharedArchiveFile={archive} {QUIET}"
    options = str(settings.get(DRIVER_OPTIONS) or "")
    return {**settings, DRIVER_OPTIONS: f"{options} {flag}".strip()}


def build() -> Path:
    """Write the archive: one ``hashcdc run`` of two small dates whose JVM dumps it at exit."""
    source = package_root()
    target = archive_path()
    with tempfile.TemporaryDirectory(prefix="hashcdc-classes-") as folder:
        root = Path(folder) / "project"
        root.mkdir()
        # A process of its own: the archive is written when its JVM exits (not an engine's).
        env = os.environ | scratch_project(source, root) | {"HASHCDC_ENGINE": "off"}
        (root / "tables" / "training.yml").write_text(TRAINING_TABLE)
        landing = root / "landing" / "training"
        landing.mkdir(parents=True)
        for day, business_date in enumerate(TRAINING_DATES):
            rows = [
                f"{i},{i + day}.25,{business_date},{business_date} 10:{i % 60:02d}:00,n{i}"
                for i in range(day, 200)
            ]
            header = "id,amount,paid_on,paid_at,note"
            (landing / f"{business_date}.csv").write_text("\n".join([header, *rows]) + "\n")
        dumped = Path(folder) / "spark-classes.jsa"
        command = [sys.executable, "-m", "hashcdc.cli", "--project-dir", str(root)]
        subprocess.run([*command, "generate"], env=env, check=True, capture_output=True)
        subprocess.run(
            [*command, "run", "--date", *TRAINING_DATES],
            env=env | {DUMP_VARIABLE: str(dumped)},
            check=True,
            capture_output=True,
        )
        if not dumped.is_file():
            raise RuntimeError("the training run's JVM wrote no class archive")
        for stale in target.parent.glob("spark-classes-*.jsa"):
            stale.unlink()
        shutil.move(dumped, target)
    return target


def ensure() -> Path:
    """The archive for this JVM and these jars, built when there is none.

    Raises
    ------
    HashcdcError
        When the training run fails (Spark then starts without an archive, only slower).

    """
    current = archive_path()
    if current.is_file():
        return current
    try:
        return build()
    except (subprocess.CalledProcessError, RuntimeError) as exc:
        output = (getattr(exc, "stderr", b"") or b"").decode("utf-8", "replace")
        raise HashcdcError(
            f"no class archive ({exc}); Spark starts without one, only slower: {output[-2000:]}"
        ) from None


if __name__ == "__main__":
    try:
        print(f"class archive: {ensure()}")
    except HashcdcError as exc:
        # Spark starts without it, only slower: the install goes on.
        print(f"hashcdc: {exc}")
