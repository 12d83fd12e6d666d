"""``hashcdc extract``: a live table's snapshot, landed as the extract of a business date.

The table (or query) of ``source.database`` is read through Spark's JDBC source with the
configured columns selected by their source names, and written whole to a folder beside
the date's ``source.path``, then moved there in one step: a run never sees a half-landed
extract. Credentials come from the environment variables the config names, never from the
config, the logs or the audit.

MariaDB is read on one connection, in one statement (a consistent read). PostgreSQL reads
in parallel (``partition_column``, ``partitions``: ranges of the column,
one connection each) from one consistent snapshot: a connection the driver holds exports
its repeatable-read snapshot (``pg_export_snapshot()``), the range bounds are read in it,
and every reading connection starts its transaction in it (``SET TRANSACTION SNAPSHOT``)
before its query, so the parts add up to the table at one instant, however busy it is.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from hashcdc.config import DatabaseSource, TableConfig
from hashcdc.errors import HashcdcError, InputDataError
from hashcdc.pipeline.inputs.csv import spark_csv_options
from hashcdc.pipeline.transports.files import resolve_source_path
from hashcdc.runtime.hadoop import HadoopFiles

DEFAULT_PORTS = {"postgresql": 5432, "mariadb": 3306}
DRIVERS = {"postgresql": "org.postgresql.Driver", "mariadb": "org.mariadb.jdbc.Driver"}
# MariaDB's driver, reached by the jdbc:mysql scheme, so that Spark reads it with its MySQL
# dialect (its types and its quoting: Spark 4.0 has no dialect for jdbc:mariadb).
URL_SCHEMES = {"postgresql": "postgresql", "mariadb": "mysql"}
URL_OPTIONS = {"postgresql": "", "mariadb": "?permitMysqlScheme"}
# The name the selected columns' subquery takes in the reading query.
SOURCE_ALIAS = "hashcdc_source"


@dataclass(frozen=True)
class LandedExtract:
    """What ``hashcdc extract`` landed for one table and date."""

    table: str
    path: str
    rows: int
    seconds: float


def java_message(error: Exception) -> str:
    """The message of the Java exception behind a py4j error (its first line), or the text."""
    for line in str(error).splitlines():
        if "Exception: " in line:
            return line.split("Exception: ", 1)[1].strip()
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def jdbc_url(database: DatabaseSource) -> str:
    """The JDBC URL of a database source."""
    port = database.port or DEFAULT_PORTS[database.kind]
    where = f"{database.host}:{port}/{database.database}"
    return f"jdbc:{URL_SCHEMES[database.kind]}://{where}{URL_OPTIONS[database.kind]}"


def _environment(table: TableConfig, variable: str, field: str, what: str) -> str:
    value = os.environ.get(variable)
    if value is None:
        raise HashcdcError(
            f"table '{table.name}': the environment variable {variable} "
            f"(source.database.{field} in {table.config_file}) is not set: export the "
            f"database {what} in it"
        )
    return value


def credentials(table: TableConfig) -> dict[str, str]:
    """The user and password, from the environment variables the config names."""
    database = database_of(table)
    found = {"user": _environment(table, database.user_env, "user_env", "user's name")}
    if database.password_env:
        found["password"] = _environment(
            table, database.password_env, "password_env", "user's password"
        )
    return found


def connection_properties(table: TableConfig) -> dict[str, str]:
    """The JDBC driver, user and password (from the environment variables the config names)."""
    return {"driver": DRIVERS[database_of(table).kind], **credentials(table)}


def database_of(table: TableConfig) -> DatabaseSource:
    """The table's ``source.database``; an error naming the config when it has none."""
    if table.source.database is None:
        raise HashcdcError(
            f"table '{table.name}' has no source.database in {table.config_file}: its "
            "extracts are delivered as files, not read from a database"
        )
    return table.source.database


def _quoted(name: str, kind: str = "postgresql") -> str:
    quote = "`" if kind == "mariadb" else '"'
    return quote + name.replace(quote, quote * 2) + quote


def source_relation(table: TableConfig) -> str:
    """The relation read: the configured columns of the table, or the configured query."""
    database = database_of(table)
    if database.query:
        return f"({database.query}) as {SOURCE_ALIAS}"
    columns = ", ".join(_quoted(column.source_field, database.kind) for column in table.columns)
    return f"(select {columns} from {database.table}) as {SOURCE_ALIAS}"


class _ExportedSnapshot:
    """A driver-side connection holding the repeatable-read snapshot every reader shares.

    PostgreSQL's ``pg_export_snapshot()`` names it; it lives until the transaction ends.
    """

    def __init__(self, spark: SparkSession, url: str, properties: dict[str, str]) -> None:
        jvm = spark.sparkContext._jvm  # noqa: SLF001
        registry = jvm.org.apache.spark.sql.execution.datasources.jdbc.DriverRegistry
        registry.register(properties["driver"])
        info = jvm.java.util.Properties()
        for key, value in properties.items():
            info.setProperty(key, value)
        try:
            self.connection = registry.get(properties["driver"]).connect(url, info)
        except Exception as exc:  # py4j's error carries the driver's own message
            raise HashcdcError(
                f"cannot connect to {url} as {properties['user']}: {java_message(exc)}"
            ) from None
        self.connection.setAutoCommit(False)
        self.connection.setTransactionIsolation(jvm.java.sql.Connection.TRANSACTION_REPEATABLE_READ)
        self.snapshot_id = self.one_value("select pg_export_snapshot()")

    def one_value(self, sql: str) -> Any:
        """The first column of the first row of a query, in the exported snapshot."""
        statement = self.connection.createStatement()
        try:
            result = statement.executeQuery(sql)
            result.next()
            return result.getString(1)
        finally:
            statement.close()

    def close(self) -> None:
        """End the transaction (nothing was written) and close the connection."""
        try:
            self.connection.rollback()
        finally:
            self.connection.close()


def read_snapshot(
    spark: SparkSession, table: TableConfig
) -> tuple[DataFrame, _ExportedSnapshot | None]:
    """The table's rows as one consistent snapshot, and the connection that holds it open.

    Close the snapshot once the rows are written (the readers join it when they start).
    MariaDB's rows are one statement on one connection (a consistent read of InnoDB; its
    snapshot cannot be shared, so the config refuses parallel reads): nothing to hold.
    """
    database = database_of(table)
    url = jdbc_url(database)
    properties = connection_properties(table)
    if database.kind != "postgresql":
        reader = spark.read.format("jdbc").option("url", url)
        reader = reader.option("dbtable", source_relation(table))
        return reader.option("fetchsize", str(database.fetch_size)).options(
            **properties
        ).load(), None
    snapshot = _ExportedSnapshot(spark, url, properties)
    try:
        begin = (
            "begin transaction isolation level repeatable read; "
            f"set transaction snapshot '{snapshot.snapshot_id}'"
        )
        reader = (
            spark.read.format("jdbc")
            .option("url", url)
            .option("dbtable", source_relation(table))
            .option("fetchsize", str(database.fetch_size))
            .option("sessionInitStatement", begin)
            .options(**properties)
        )
        if database.partition_column and database.partitions > 1:
            column = _quoted(database.partition_column)
            bounds = (
                f"select min({column})::text || ',' || max({column})::text "
                f"from {source_relation(table)}"
            )
            lowest_highest = snapshot.one_value(bounds)
            if lowest_highest is not None:
                lowest, highest = lowest_highest.split(",", 1)
                reader = (
                    reader.option("partitionColumn", column)
                    .option("lowerBound", lowest)
                    .option("upperBound", highest)
                    .option("numPartitions", str(database.partitions))
                )
        return reader.load(), snapshot
    except Exception:
        snapshot.close()
        raise


def land_snapshot(
    spark: SparkSession, table: TableConfig, business_date: str, replace: bool = False
) -> LandedExtract:
    """Read the table's snapshot and land it as the extract of ``business_date``.

    Raises
    ------
    InputDataError
        When the date's extract is already there (``replace`` lands it again), or the
        source path is a glob.

    """
    started = time.monotonic()
    target = resolve_source_path(table, business_date).rstrip("/")
    if any(character in target for character in "*?["):
        raise InputDataError(
            f"table '{table.name}': source.path in {table.config_file} is a pattern "
            f"({target}); a database snapshot lands in one folder: give its path"
        )
    files = HadoopFiles.of(spark)
    if files.exists(target) and not replace:
        raise InputDataError(
            f"table '{table.name}': the extract of {business_date} is already at {target}; "
            "nothing was read. Run `hashcdc extract` with --replace to land it again."
        )
    landing = f"{target}.__landing_{os.getpid()}"
    files.delete(landing)
    frame, snapshot = read_snapshot(spark, table)
    try:
        writer = frame.write.mode("errorifexists")
        if table.source.format == "parquet":
            writer.parquet(landing)
        else:
            writer.options(**spark_csv_options(table)).csv(landing)
    finally:
        if snapshot is not None:
            snapshot.close()
    rows = _landed_rows(spark, table, landing)
    if files.exists(target):
        replaced = f"{target}.__replaced_{os.getpid()}"
        files.rename(target, replaced)
        files.rename(landing, target)
        files.delete(replaced)
    else:
        files.rename(landing, target)
    return LandedExtract(table.name, target, rows, time.monotonic() - started)


def _landed_rows(spark: SparkSession, table: TableConfig, landing: str) -> int:
    """The rows of the landed files (read back: the snapshot itself is read once)."""
    if table.source.format == "parquet":
        return spark.read.parquet(landing).count()
    return spark.read.options(**spark_csv_options(table), multiLine=True).csv(landing).count()
