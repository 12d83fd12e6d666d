"""A shared Hive metastore on a database server, its tables created on first use.

A shared metastore is a Hive metastore database on a server (PostgreSQL, as tested), which
every process reaches through JDBC. :func:`prepare_shared_metastore` creates its tables on
first use, before Spark's Hive client touches it: Hive's lazy, per-table creation
(``datanucleus.schema.autoCreateAll``) deadlocks on PostgreSQL, where adding a foreign key
waits for the open transaction that asked for the table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hashcdc.errors import HashcdcError
from hashcdc.runtime.metastore import (
    CONNECTION_URL,
    HADOOP_PREFIX,
    METASTORE_URIS,
    embedded_metastore_dir,
)

# Hive's object model: DataNucleus creates the metastore's tables from it.
HIVE_MODEL = "package.jdo"
HIVE_METASTORE_JAR = "hive-metastore-*.jar"
# Naming rules Hive's metastore uses (its defaults), so that the tables are Hive's own.
HIVE_DATANUCLEUS_SETTINGS = {
    "datanucleus.identifierFactory": "datanucleus1",
    "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
}
# A table every Hive metastore schema has: its presence means the schema was created.
SCHEMA_MARKER_TABLE = "TBLS"
# Any constant: the PostgreSQL advisory lock that serialises first-use schema creation.
SCHEMA_LOCK_KEY = 0x68617368


def _jdbc_metastore(settings: dict[str, Any] | None) -> dict[str, str] | None:
    """The JDO settings of a metastore database on a server, or None (Derby, or thrift)."""
    settings = settings or {}
    url = str(settings.get(CONNECTION_URL) or "")
    if str(settings.get(METASTORE_URIS) or "").strip() or embedded_metastore_dir(settings):
        return None
    if not url.startswith("jdbc:"):
        raise HashcdcError(
            "the profile names no metastore: set HASHCDC_METASTORE_URL (a JDBC URL such as "
            "jdbc:postgresql://host:5432/metastore) or HASHCDC_METASTORE_URIS (thrift://...)"
        )
    return {
        key.removeprefix(HADOOP_PREFIX): str(value)
        for key, value in settings.items()
        if key.startswith(HADOOP_PREFIX + "javax.jdo.option.")
    }


_PREPARED: set[str] = set()


def prepare_shared_metastore(spark: Any, settings: dict[str, Any] | None) -> None:
    """Create the Hive metastore's tables in a database that has none yet (first use).

    Runs in the session's JVM before anything reaches the catalog; the check is one JDBC
    metadata call, done once per process. Two processes starting at once on an empty
    PostgreSQL database take turns (an advisory lock); the second finds the tables.
    """
    jdo = _jdbc_metastore(settings)
    if jdo is None or jdo["javax.jdo.option.ConnectionURL"] in _PREPARED:
        return
    url = jdo["javax.jdo.option.ConnectionURL"]
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j's gateway to the driver JVM
    try:
        connection = jvm.java.sql.DriverManager.getConnection(
            url,
            jdo.get("javax.jdo.option.ConnectionUserName", ""),
            jdo.get("javax.jdo.option.ConnectionPassword", ""),
        )
    except Exception as exc:  # py4j wraps the JDBC driver's SQLException
        reason = str(exc).split("\n", 1)[0].rsplit(": ", 1)[-1]
        raise HashcdcError(
            f"cannot reach the shared metastore {url}: {reason}. Check that the database "
            "server runs and HASHCDC_METASTORE_URL, HASHCDC_METASTORE_USER and "
            "HASHCDC_METASTORE_PASSWORD; the JDBC driver jar comes from HASHCDC_JDBC_JAR."
        ) from None
    try:
        serialised = url.startswith("jdbc:postgresql:")
        if serialised:
            connection.createStatement().execute(f"select pg_advisory_lock({SCHEMA_LOCK_KEY})")
        if not _has_table(connection, SCHEMA_MARKER_TABLE):
            _create_hive_schema(jdo, spark)
        if serialised:
            connection.createStatement().execute(f"select pg_advisory_unlock({SCHEMA_LOCK_KEY})")
    finally:
        connection.close()
    _PREPARED.add(url)


def _has_table(connection: Any, name: str) -> bool:
    metadata = connection.getMetaData()
    for candidate in (name, name.lower()):
        if metadata.getTables(None, None, candidate, None).next():
            return True
    return False


def _create_hive_schema(jdo: dict[str, str], spark: Any) -> None:
    """Create Hive's metastore tables with DataNucleus's SchemaTool, in one go.

    The tool runs in a JVM of its own on the classpath of Spark's driver (pyspark's jars,
    which hold Hive's model and DataNucleus, and the JDBC driver of ``extraClassPath``).
    """
    from pyspark.find_spark_home import _find_spark_home

    jars = Path(_find_spark_home()) / "jars"
    hive_jar = next(iter(sorted(jars.glob(HIVE_METASTORE_JAR))), None)
    if hive_jar is None:
        raise HashcdcError(f"no {HIVE_METASTORE_JAR} in {jars}: reinstall pyspark")
    extra = spark.sparkContext.getConf().get("spark.driver.extraClassPath", "")
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else "java"
    with tempfile.TemporaryDirectory(prefix="hashcdc_metastore_") as work:
        model = Path(work) / HIVE_MODEL
        with zipfile.ZipFile(hive_jar) as jar:
            model.write_bytes(jar.read(HIVE_MODEL))
        properties = Path(work) / "datanucleus.properties"
        properties.write_text(
            "".join(f"{key}={value}\n" for key, value in (jdo | HIVE_DATANUCLEUS_SETTINGS).items()),
            encoding="utf-8",
        )
        classpath = os.pathsep.join(part for part in (f"{jars}/*", extra) if part)
        done = subprocess.run(
            [
                str(java),
                "-cp",
                classpath,
                "org.datanucleus.store.schema.SchemaTool",
                "-create",
                "-api",
                "JDO",
                "-props",
                str(properties),
                str(model),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0 or "completed successfully" not in done.stdout:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise HashcdcError(
            f"could not create the Hive metastore tables in "
            f"{jdo['javax.jdo.option.ConnectionURL']}: {last[0]}"
        )
    # stderr: `hashcdc query` writes its CSV on stdout.
    print(
        f"hashcdc: created the Hive metastore tables in {jdo['javax.jdo.option.ConnectionURL']}",
        file=sys.stderr,
    )
