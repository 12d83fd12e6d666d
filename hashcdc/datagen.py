"""Synthetic daily extracts in the shape of the article's generator, Spark-native.

The first business date gets ``initial_records`` rows; every later date is an extract
derived from the previous one: ``fraction_deleted`` of the rows are deleted and
replaced by new keys, ``fraction_updated`` get new non-key values, ``fraction_unchanged``
stay as they were, and rows beyond the previous count (``incremental_records`` larger than
``initial_records``) are new keys. Counts are exact: rows are picked per date by an affine
permutation of their position, not by sampling. With ``extract_type: delta`` the later
extracts hold only the rows that are new or updated that date (a delta cannot say that a
key was deleted: the replaced keys are simply not supplied).

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

from hashcdc.errors import HashcdcError


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

    @property
    def later_records(self) -> int:
        """Rows of every extract after the first."""
        return self.incremental_records or self.initial_records

    def validate(self) -> None:
        """Raise a :class:`HashcdcError` naming the first inconsistent option."""
        total = self.fraction_deleted + self.fraction_updated + self.fraction_unchanged
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise HashcdcError(
                f"datagen: fractions deleted + updated + unchanged must add up to 1, got {total}"
            )
        if min(self.fraction_deleted, self.fraction_updated, self.fraction_unchanged) < 0:
            raise HashcdcError("datagen: fractions cannot be negative")
        if self.initial_records < 1 or self.later_records < self.initial_records:
            raise HashcdcError(
                "datagen: need initial records >= 1 and incremental records >= initial records"
            )
        if self.extract_type not in ("full", "delta"):
            raise HashcdcError(
                f"datagen: extract type must be full or delta, got {self.extract_type!r}"
            )
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
    deleted = round(previous_count * options.fraction_deleted)
    updated = round(previous_count * options.fraction_updated)
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
    )


def _uuid_text(digest: Column) -> Column:
    parts = [(1, 8), (9, 4), (13, 4), (17, 4), (21, 12)]
    return F.concat_ws("-", *[F.substring(digest, start, length) for start, length in parts])


def _extract(frame: DataFrame, options: DatagenOptions) -> DataFrame:
    keys = [
        _uuid_text(
            F.md5(F.concat_ws(":", F.lit(options.seed), "born_day", "position", F.lit(k)))
        ).alias(f"key_{k}")
        for k in range(1, options.key_columns + 1)
    ]
    values = [
        (
            _mixed(
                options.seed, F.col("born_day"), F.col("position"), F.col("version_day"), j
            ).cast("double")
            / F.lit(float(2**63))
        ).alias(f"value_{j}")
        for j in range(1, options.non_key_columns + 1)
    ]
    return frame.select(*keys, *values)


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
        "source": {
            "path": f"{options.output_folder}/{{business_date}}",
            "format": "csv",
            "csv": {"delimiter": ",", "header": True},
        },
        "columns": columns,
        **(
            {"expected_counts_seed": options.expected_counts_seed}
            if options.expected_counts_seed
            else {}
        ),
    }


def generate_extracts(
    spark: SparkSession, options: DatagenOptions, project_dir: Path, write_config: bool = True
) -> list[Path]:
    """Write one CSV folder per business date and (optionally) the table config.

    Returns
    -------
    list[Path]
        The folders and the config file written.

    """
    options.validate()
    output_root = Path(options.output_folder)
    if not output_root.is_absolute():
        output_root = project_dir / output_root
    written: list[Path] = []
    positions = spark.range(
        0,
        options.later_records,
        numPartitions=max(2, options.later_records // 2_000_000),
    ).withColumnRenamed("id", "position")
    frame = positions.select("position", F.lit(1).alias("born_day"), F.lit(1).alias("version_day"))
    row_count = options.initial_records
    for day, business_date in enumerate(options.dates, start=1):
        if day > 1:
            frame = _evolve(frame, options, day, row_count)
            row_count = options.later_records
        # localCheckpoint keeps the plan short over many dates.
        frame = frame.localCheckpoint(eager=True) if day % 8 == 0 else frame
        folder = output_root / business_date
        rows = frame.where(F.col("position") < row_count)
        if options.extract_type == "delta" and day > 1:
            rows = rows.where(F.col("version_day") == day)
        (_extract(rows, options).write.mode("overwrite").option("header", True).csv(str(folder)))
        written.append(folder)
    if write_config:
        config_path = project_dir / "tables" / f"{options.table_name}.yml"
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(
            "# Written by `hashcdc datagen`.\n"
            + yaml.safe_dump(table_config(options), sort_keys=False),
            encoding="utf-8",
        )
        written.append(config_path)
    return written
