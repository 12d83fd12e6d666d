"""Synthetic daily extracts in the shape of the article's generator, Spark-native.

The first business date gets ``initial_records`` rows; every later date is an extract
derived from the previous one: ``fraction_deleted`` of the rows are deleted and
replaced by new keys, ``fraction_updated`` get new non-key values, ``fraction_unchanged``
stay as they were, and rows beyond the previous count (``incremental_records`` larger than
``initial_records``) are new keys. Counts are exact: rows are picked per date by an affine
permutation of their position, not by sampling. With ``extract_type: delta`` the later
extracts hold only the rows that are new or updated that date (a delta cannot say that a
key was deleted: the replaced keys are simply not supplied). With ``extract_type: changes``
each date is a Debezium change feed (JSON lines): snapshot reads (``r``) of every row on
the first date, then per date a delete (``d``, before image) and a create (``c``) for each
replaced key, an update (``u``, before and after images) for each updated row and a create
for each new key, ordered by ``source.lsn``. ``redeliver`` also puts the previous date's
files into each date's folder again; ``out_of_order`` writes each date's events shuffled
over several files, so no file and no line order follows the log.

Every value is a pure function of (seed, position, dates): keys are uuid-shaped MD5s of
the date and position a row was born at, non-key values are doubles in [0, 1) from a
64-bit hash of the row's birth, its last update and the column. Nothing runs in Python per
row, and the output is identical for the same options, whatever the partitioning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import EXTRACT_TYPES, SCHEMA_FILE
from hashcdc.errors import HashcdcError
from hashcdc.runtime.hadoop import HadoopFiles, resolve_location


@dataclass(frozen=True)
class DatagenOptions:
    """What to generate (the article's parameters plus dates, output and seed)."""

    table_name: str = "synthetic"
    initial_records: int = 10_000
    incremental_records: int | None = None  # default: initial_records
    key_columns: int = 5
    non_key_columns: int = 10
    fraction_deleted: float = 0.2
    fraction_updated: float = 0.4
    fraction_unchanged: float = 0.4
    dates: tuple[str, ...] | list[str] = ("2019-06-18", "2019-06-19")
    output: str = "landing/{table}"
    seed: int = 42
    extract_type: str = "full"
    expected_counts_seed: str | None = None
    redeliver: bool = False
    out_of_order: bool = False
    # Per later date, its own (deleted, updated, unchanged) fractions; dates beyond the
    # tuple take the three fields above.
    fractions_by_date: tuple[tuple[float, float, float], ...] = ()

    @property
    def later_records(self) -> int:
        """Rows of every extract after the first."""
        return self.incremental_records or self.initial_records

    def fractions(self, day: int) -> tuple[float, float, float]:
        """The (deleted, updated, unchanged) fractions of ``day`` (2 is the first later date)."""
        if 0 <= day - 2 < len(self.fractions_by_date):
            return self.fractions_by_date[day - 2]
        return (self.fraction_deleted, self.fraction_updated, self.fraction_unchanged)

    def validate(self) -> None:
        """Raise a :class:`HashcdcError` naming the first inconsistent option."""
        for day in range(2, len(self.fractions_by_date) + 3):
            fractions = self.fractions(day)
            if not math.isclose(sum(fractions), 1.0, abs_tol=1e-9):
                raise HashcdcError(
                    "datagen: fractions deleted + updated + unchanged must add up to 1, got "
                    f"{sum(fractions)}"
                )
            if min(fractions) < 0:
                raise HashcdcError("datagen: fractions cannot be negative")
        if self.initial_records < 1 or self.later_records < self.initial_records:
            raise HashcdcError(
                "datagen: need initial records >= 1 and incremental records >= initial records"
            )
        if self.extract_type not in EXTRACT_TYPES:
            raise HashcdcError(
                f"datagen: extract type must be one of {', '.join(EXTRACT_TYPES)}, got "
                f"{self.extract_type!r}"
            )
        if (self.redeliver or self.out_of_order) and self.extract_type != "changes":
            raise HashcdcError("datagen: redeliver and out_of_order are for change feeds")
        if self.key_columns < 1 or self.non_key_columns < 0:
            raise HashcdcError("datagen: need at least one key column")
        if not self.dates:
            raise HashcdcError("datagen: give at least one business date")

    @property
    def output_folder(self) -> str:
        """The output folder with ``{table}`` filled in."""
        return self.output.replace("{table}", self.table_name)


def _mixed(seed: int, *parts: Column | int | str) -> Column:
    """A non-negative 63-bit hash of the seed and the parts."""
    columns = [F.lit(seed)] + [p if isinstance(p, Column) else F.lit(p) for p in parts]
    return F.xxhash64(*columns).bitwiseAND(F.lit(0x7FFFFFFFFFFFFFFF))


def _coprime_multiplier(seed: int, day: int, modulus: int) -> int:
    candidate = (seed * 7919 + day * 104729) % modulus or 1
    while math.gcd(candidate, modulus) != 1:
        candidate = candidate % modulus + 1
    return candidate


def _evolve(frame: DataFrame, options: DatagenOptions, day: int, previous_count: int) -> DataFrame:
    """Apply one date's deletes (replaced by new keys), updates and unchanged rows."""
    fraction_deleted, fraction_updated, _ = options.fractions(day)
    deleted = round(previous_count * fraction_deleted)
    updated = round(previous_count * fraction_updated)
    multiplier = _coprime_multiplier(options.seed, day, previous_count)
    offset = (options.seed * 31 + day * 17) % previous_count
    rank = (F.col("position") * multiplier + offset) % previous_count
    is_old = F.col("position") < previous_count
    is_deleted = is_old & (rank < deleted)
    is_updated = is_old & (rank >= deleted) & (rank < deleted + updated)
    is_new = ~is_old | is_deleted
    return frame.select(
        "position",
        F.when(is_new, F.lit(day)).otherwise(F.col("born_day")).alias("born_day"),
        F.when(is_new | is_updated, F.lit(day))
        .otherwise(F.col("version_day"))
        .alias("version_day"),
        F.col("born_day").alias("previous_born_day"),
        F.col("version_day").alias("previous_version_day"),
    )


def _uuid_text(digest: Column) -> Column:
    parts = [(1, 8), (9, 4), (13, 4), (17, 4), (21, 12)]
    return F.concat_ws("-", *[F.substring(digest, start, length) for start, length in parts])


def _image(options: DatagenOptions, born_day: Column, version_day: Column) -> list[Column]:
    """The row's columns for a version (born on ``born_day``, last changed ``version_day``)."""
    keys = [
        _uuid_text(
            F.md5(F.concat_ws(":", F.lit(options.seed), born_day, "position", F.lit(k)))
        ).alias(f"key_{k}")
        for k in range(1, options.key_columns + 1)
    ]
    values = [
        (
            _mixed(options.seed, born_day, F.col("position"), version_day, j).cast("double")
            / F.lit(float(2**63))
        ).alias(f"value_{j}")
        for j in range(1, options.non_key_columns + 1)
    ]
    return keys + values


def _extract(frame: DataFrame, options: DatagenOptions) -> DataFrame:
    return frame.select(*_image(options, F.col("born_day"), F.col("version_day")))


def _change_events(
    frame: DataFrame, options: DatagenOptions, day: int, previous_count: int
) -> DataFrame:
    """The Debezium events that turn the previous date's rows into this date's, as JSON.

    ``frame`` holds this date's ``born_day``/``version_day`` and the previous date's as
    ``previous_born_day``/``previous_version_day``.
    """
    after = F.struct(*_image(options, F.col("born_day"), F.col("version_day")))
    before = F.struct(*_image(options, F.col("previous_born_day"), F.col("previous_version_day")))
    is_old = F.col("position") < previous_count
    replaced = is_old & (F.col("born_day") != F.col("previous_born_day"))
    updated = is_old & ~replaced & (F.col("version_day") != F.col("previous_version_day"))
    first_lsn = F.lit(day * 10**11) + F.col("position") * 2

    # A typed null: every event struct has the same type, with or without an image.
    no_before, no_after = F.when(F.lit(False), before), F.when(F.lit(False), after)

    def event(op: str, before_image: Column, after_image: Column, k: int) -> Column:
        return F.struct(
            F.lit(op).alias("op"),
            before_image.alias("before"),
            after_image.alias("after"),
            (first_lsn + k).alias("lsn"),
        )

    if day == 1:
        events = F.array(event("r", no_before, after, 0))
    else:
        events = (
            F.when(
                replaced,
                F.array(event("d", before, no_after, 0), event("c", no_before, after, 1)),
            )
            .when(updated, F.array(event("u", before, after, 1)))
            .when(~is_old, F.array(event("c", no_before, after, 1)))
        )
    events = F.coalesce(events, F.array_repeat(event("r", no_before, no_after, 0), 0))
    exploded = frame.select(F.explode(events).alias("event"))
    envelope = F.struct(
        F.col("event.before").alias("before"),
        F.col("event.after").alias("after"),
        F.col("event.op").alias("op"),
        (F.lit(1_560_000_000_000) + F.col("event.lsn") % 10**9).alias("ts_ms"),
        F.struct(F.lit("datagen").alias("connector"), F.col("event.lsn").alias("lsn")).alias(
            "source"
        ),
    )
    return exploded.select(
        F.to_json(envelope, {"ignoreNullFields": "false"}).alias("value"),
        F.col("event.lsn").alias("lsn"),
    )


def table_config(options: DatagenOptions) -> dict[str, object]:
    """The ``tables/<name>.yml`` content matching the generated extracts."""
    columns: list[dict[str, object]] = [
        {"name": f"key_{k}", "type": "string", "key": True}
        for k in range(1, options.key_columns + 1)
    ]
    columns += [
        {"name": f"value_{j}", "type": "double"} for j in range(1, options.non_key_columns + 1)
    ]
    return {
        "name": options.table_name,
        "description": (
            f"Synthetic extracts from `hashcdc datagen` (seed {options.seed}): "
            f"{options.key_columns} uuid key columns, {options.non_key_columns} random doubles."
        ),
        "extract_type": options.extract_type,
        "source": (
            {"path": f"{options.output_folder}/{{business_date}}", "format": "debezium"}
            if options.extract_type == "changes"
            else {
                "path": f"{options.output_folder}/{{business_date}}",
                "format": "csv",
                "csv": {"delimiter": ",", "header": True},
            }
        ),
        **(
            {"changes": {"sequence_by": ["source.lsn"]}}
            if options.extract_type == "changes"
            else {}
        ),
        "columns": columns,
        **(
            {"expected_counts_seed": options.expected_counts_seed}
            if options.expected_counts_seed
            else {}
        ),
    }


def _write_feed(events: DataFrame, options: DatagenOptions, day: int, folder: str) -> None:
    """One date's events as JSON lines: in log order in one file, or shuffled over several."""
    if options.out_of_order:
        events = events.orderBy(F.rand(options.seed + day)).repartition(3)
    else:
        events = events.orderBy("lsn").coalesce(1)
    events.select("value").write.mode("overwrite").text(folder)


def _redeliver(files: HadoopFiles, previous_folder: str, folder: str) -> None:
    """Deliver the previous date's files again, next to this date's."""
    previous_date = previous_folder.rstrip("/").rsplit("/", 1)[-1]
    for path in files.data_files(previous_folder):
        name = path.rsplit("/", 1)[-1]
        if not name.startswith("redelivered-"):
            files.copy_file(path, f"{folder}/redelivered-{previous_date}-{name}")


def generate_extracts(
    spark: SparkSession, options: DatagenOptions, project_dir: Path, write_config: bool = True
) -> list[str]:
    """Write one CSV folder per business date and (optionally) the table config.

    The output may be any Hadoop URI (``file:``, ``hdfs:``, ``s3a:``); a relative folder is
    taken from the project folder.

    Returns
    -------
    list[str]
        The folders and the config file written.

    """
    options.validate()
    output_root = resolve_location(options.output_folder, str(project_dir))
    files = HadoopFiles.of(spark)
    written: list[str] = []
    positions = spark.range(
        0,
        options.later_records,
        numPartitions=max(2, options.later_records // 2_000_000),
    ).withColumnRenamed("id", "position")
    frame = positions.select(
        "position",
        *[F.lit(1).alias(name) for name in ("born_day", "version_day")],
        *[F.lit(1).alias(name) for name in ("previous_born_day", "previous_version_day")],
    )
    row_count = options.initial_records
    for day, business_date in enumerate(options.dates, start=1):
        previous_count = row_count
        if day > 1:
            frame = _evolve(frame, options, day, row_count)
            row_count = options.later_records
        # localCheckpoint keeps the plan short over many dates.
        frame = frame.localCheckpoint(eager=True) if day % 8 == 0 else frame
        folder = f"{output_root}/{business_date}"
        rows = frame.where(F.col("position") < row_count)
        if options.extract_type == "changes":
            _write_feed(_change_events(rows, options, day, previous_count), options, day, folder)
            if options.redeliver and day > 1:
                _redeliver(files, f"{output_root}/{options.dates[day - 2]}", folder)
            written.append(folder)
            continue
        if options.extract_type == "delta" and day > 1:
            rows = rows.where(F.col("version_day") == day)
        (_extract(rows, options).write.mode("overwrite").option("header", True).csv(folder))
        written.append(folder)
    if write_config:
        config_path = project_dir / "tables" / f"{options.table_name}.yml"
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(
            f"# yaml-language-server: $schema=../{SCHEMA_FILE.parent.name}/{SCHEMA_FILE.name}\n"
            "# Written by `hashcdc datagen`.\n"
            + yaml.safe_dump(table_config(options), sort_keys=False),
            encoding="utf-8",
        )
        written.append(str(config_path))
    return written
