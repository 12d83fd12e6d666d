"""The JVM packages hashcdc adds to Spark: the table format (Delta Lake), JDBC drivers, a peer.

They are fetched once from Maven Central by the machine's Maven into a folder hashcdc
owns (:func:`jars_dir`: ``HASHCDC_JARS_DIR``, else ``jars/`` of a source checkout, else the
user's cache, ``~/.cache/hashcdc/jars``), never while a date runs: ``make install`` or
``hashcdc setup`` fetch them, and the first command that needs Spark fetches what is
still missing (one line of progress per jar). Every session gets the runtime jars through
``spark.jars``, which also ships them to a cluster's executors, and the Delta settings
(:data:`TABLE_FORMAT_SETTINGS`); a profile that sets any of these keys keeps its own value.

``python -m hashcdc.runtime.jars`` fetches what is missing, the bench's and the tests'
too (``make install`` runs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hashcdc.errors import HashcdcError


@dataclass(frozen=True)
class MavenJar:
    """One artifact of Maven Central and the file ``mvn dependency:copy`` makes of it."""

    group: str
    artifact: str
    version: str

    @property
    def coordinate(self) -> str:
        """``group:artifact:version``, as Maven takes it."""
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def file_name(self) -> str:
        """The jar's name in the folder."""
        return f"{self.artifact}-{self.version}.jar"


# Delta Lake 4.0 is built for Spark 4.0 and Scala 2.13, like pyspark 4.0.1. delta-spark's
# other dependency (antlr4-runtime) is already among Spark's own jars.
RUNTIME_JARS = (
    MavenJar("io.delta", "delta-spark_2.13", "4.0.0"),
    MavenJar("io.delta", "delta-storage", "4.0.0"),
    # `hashcdc extract` reads PostgreSQL and MariaDB tables through Spark's JDBC source.
    MavenJar("org.postgresql", "postgresql", "42.7.14"),
    MavenJar("org.mariadb.jdbc", "mariadb-java-client", "3.5.6"),
    # A table with source.kafka reads its topic through Spark's Kafka source. Its other
    # dependencies (lz4, snappy, zstd, scala-parallel-collections) are among Spark's jars.
    MavenJar("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.0.1"),
    # 4.0.1's build of it is not on Maven Central; it holds delegation-token helpers only,
    # unchanged between the two patch releases.
    MavenJar("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", "4.0.0"),
    MavenJar("org.apache.kafka", "kafka-clients", "3.9.1"),
    MavenJar("org.apache.commons", "commons-pool2", "2.12.0"),
)
# Only `hashcdc bench --formats` loads it: the measurement behind the choice of format.
ICEBERG_JAR = MavenJar("org.apache.iceberg", "iceberg-spark-runtime-4.0_2.13", "1.10.0")
ALL_JARS = (*RUNTIME_JARS, ICEBERG_JAR)
# A Kafka broker for the tests and `hashcdc bench` (single node, KRaft), with its
# dependencies: a folder of its own under the jar folder, never on Spark's classpath.
BROKER = MavenJar("org.apache.kafka", "kafka_2.13", "4.1.1")
BROKER_FOLDER = "kafka-broker"

TABLE_FORMAT_SETTINGS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Reading a table's version replays its log in this many tasks (Delta's default, 50,
    # is for logs of millions of files): a state's log is a checkpoint and a few commits,
    # and each 50-task replay cost ~2 s per time-travelled read on 2 cores. A profile
    # may set its own.
    "spark.databricks.delta.snapshotPartitions": "2",
}


def jars_dir() -> Path:
    """Where the jars are: ``HASHCDC_JARS_DIR``, a checkout's ``jars/``, or the user's cache.

    A source checkout (hashcdc run from the repository, as ``make install`` sets it up)
    keeps them beside ``pyproject.toml``; an installed hashcdc (a wheel) in
    ``$XDG_CACHE_HOME/hashcdc/jars`` (``~/.cache/hashcdc/jars``), shared by its projects.
    """
    configured = os.environ.get("HASHCDC_JARS_DIR")
    if configured:
        return Path(configured)
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "hashcdc").is_dir():
        return checkout / "jars"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "hashcdc" / "jars"


def jar_paths(jars: tuple[MavenJar, ...] = RUNTIME_JARS) -> list[Path]:
    """The files of ``jars``, fetching the missing ones first (progress on stderr)."""
    folder = jars_dir()
    paths = [folder / jar.file_name for jar in jars]
    if not all(path.is_file() for path in paths):
        fetch(jars, progress=True)
    return paths


def with_table_format(settings: dict[str, object] | None) -> dict[str, object]:
    """A profile's Spark settings with the table format's jars and settings added."""
    merged: dict[str, object] = dict(TABLE_FORMAT_SETTINGS)
    merged.update(settings or {})
    ours = ",".join(str(path) for path in jar_paths())
    theirs = str(merged.get("spark.jars") or "")
    merged["spark.jars"] = ",".join(part for part in (ours, theirs) if part)
    return merged


def _maven_copy(jars: tuple[MavenJar, ...], folder: Path, transitive: bool, quiet: bool) -> None:
    """Copy ``jars`` (with their dependencies when ``transitive``) into ``folder``: one mvn run."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise HashcdcError(
            f"{', '.join(jar.file_name for jar in jars)} not found in {folder}, and mvn is "
            "not installed to fetch them: install Maven, or copy them there (or set "
            "HASHCDC_JARS_DIR to a folder that has them)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    # The jars alone: `dependency:copy` of the listed items (no dependency tree, whose
    # descriptors are not all on Maven Central); with their dependencies, the broker's way.
    listed = "".join(
        f"<{tag}><groupId>{jar.group}</groupId><artifactId>{jar.artifact}</artifactId>"
        f"<version>{jar.version}</version></{tag}>"
        for jar in jars
        for tag in ["dependency" if transitive else "artifactItem"]
    )
    content, goal = (
        (f"<dependencies>{listed}</dependencies>", "dependency:copy-dependencies")
        if transitive
        else (
            "<build><plugins><plugin><artifactId>maven-dependency-plugin</artifactId>"
            f"<configuration><artifactItems>{listed}</artifactItems></configuration>"
            "</plugin></plugins></build>",
            "dependency:copy",
        )
    )
    with tempfile.TemporaryDirectory(prefix="hashcdc-jars-") as scratch:
        pom = Path(scratch) / "pom.xml"
        pom.write_text(
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0'
            "</modelVersion><groupId>hashcdc</groupId><artifactId>jars</artifactId>"
            f"<version>1</version>{content}</project>",
            encoding="utf-8",
        )
        try:
            subprocess.run(
                [mvn, "--batch-mode", "--quiet", "-f", str(pom), goal, "-DincludeScope=runtime",
                 f"-DoutputDirectory={folder}"],
                check=True,
                capture_output=quiet,
            )  # fmt: skip
        except subprocess.CalledProcessError as exc:
            said = (exc.stdout or b"").decode("utf-8", "replace").strip().splitlines()
            raise HashcdcError(
                f"mvn could not fetch {', '.join(jar.coordinate for jar in jars)} into "
                f"{folder}{': ' + said[-1] if said else ''} (is Maven Central reachable?)"
            ) from None


def fetch(jars: tuple[MavenJar, ...] = ALL_JARS, progress: bool = False) -> list[Path]:
    """Copy the missing ones of ``jars`` from Maven Central into the folder (one mvn run).

    ``progress``: say on stderr what is fetched, and keep mvn's own output (a first
    command waits for it).
    """
    folder = jars_dir()
    missing = tuple(jar for jar in jars if not (folder / jar.file_name).is_file())
    if not missing:
        return []
    if progress:
        print(
            f"hashcdc: fetching {len(missing)} JVM package(s) from Maven Central into {folder} "
            f"(once): {', '.join(jar.coordinate for jar in missing)}",
            file=sys.stderr,
            flush=True,
        )
    _maven_copy(missing, folder, transitive=False, quiet=progress)
    return [folder / jar.file_name for jar in missing]


def broker_classpath() -> list[Path]:
    """The Kafka broker's jars; missing: an error that says how to fetch them."""
    folder = jars_dir() / BROKER_FOLDER
    paths = sorted(folder.glob("*.jar"))
    if not any(path.name == BROKER.file_name for path in paths):
        raise HashcdcError(
            f"{BROKER.file_name} not found in {folder}: run `make install` or `hashcdc "
            "setup --bench` once to fetch it from Maven Central"
        )
    return paths


def fetch_broker() -> Path | None:
    """Copy the Kafka broker and its dependencies into their folder with ``mvn`` (once)."""
    folder = jars_dir() / BROKER_FOLDER
    if (folder / BROKER.file_name).is_file():
        return None
    _maven_copy((BROKER,), folder, transitive=True, quiet=False)
    return folder


if __name__ == "__main__":
    try:
        for path in fetch():
            print(f"fetched {path}")
        if broker := fetch_broker():
            print(f"fetched the Kafka broker into {broker}")
    except (HashcdcError, subprocess.CalledProcessError) as exc:
        sys.exit(f"hashcdc jars: {exc}")
