"""The dbt project hashcdc runs in: locating it, invoking dbt, opening its Spark session."""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jinja2
import yaml

from hashcdc.errors import HashcdcError
from hashcdc.relations import Relations
from hashcdc.runtime.class_archive import with_class_archive
from hashcdc.runtime.cluster import watch_executors
from hashcdc.runtime.jars import with_table_format
from hashcdc.runtime.metastore import (
    ensure_metastore_free,
    note_spark_jvm,
    release_metastore_on_exit,
)
from hashcdc.runtime.shared_metastore import prepare_shared_metastore


def find_project_dir(start: Path | None = None) -> Path:
    """The folder holding ``dbt_project.yml``: ``start`` or the working directory."""
    folder = (start or Path.cwd()).resolve()
    if not (folder / "dbt_project.yml").is_file():
        raise HashcdcError(
            f"{folder} is not a hashcdc project (no dbt_project.yml): run hashcdc from the "
            "project folder or pass --project-dir"
        )
    return folder


def dbt_args(command: str, project_dir: Path, extra: Sequence[str] = ()) -> list[str]:
    """Arguments for a dbt command against the project and its ``profiles/`` folder.

    Colour codes only on a terminal: never in dbt's log file, a pipe or a redirect.
    """
    return [
        *command.split(),  # "build", or a command and its subcommand: "docs generate"
        "--project-dir",
        str(project_dir),
        "--profiles-dir",
        str(project_dir / "profiles"),
        "--no-use-colors-file",
        *([] if sys.stdout.isatty() else ["--no-use-colors"]),
        *extra,
    ]


# The var that makes a date's run a micro-batch (read by the macro date_command).
MICRO_BATCH_VAR = "hashcdc_micro_batch"
# The var that gives a run's audit rows the transient failures retried before it.
RETRIES_VAR = "hashcdc_retries"
# The vars read only while a command's nodes run (the date_command macro, the guards, the
# audit), never where the manifest takes its shape (refs, configs). A dated command's parse
# leaves them out: dbt parses a whole project again whenever its vars change (6 s for a
# 100-table group), and a stream's batch or a date changes them every time.
RUN_VARS = (
    "business_date",
    MICRO_BATCH_VAR,
    RETRIES_VAR,
    "hashcdc_replay",
    "hashcdc_allow_mass_delete",
)


def run_vars(allow_mass_delete: bool = False, replay: bool = False) -> list[str]:
    """The ``--vars`` argument for a run's rarer switches (none when all are off).

    ``replay`` lets a date older than the latest processed one run (and keeps every state
    snapshot until the replay's last date): only ``hashcdc replay`` sets it.
    """
    values: dict[str, Any] = {}
    if allow_mass_delete:
        values["hashcdc_allow_mass_delete"] = True
    if replay:
        values["hashcdc_replay"] = True
    return ["--vars", json.dumps(values)] if values else []


def invoke_dbt(args: list[str], business_date: str | None = None) -> Any:
    """Run dbt in this process (sharing its SparkSession); returns dbt's result object.

    With ``business_date``, the command runs for that date, given as the dbt var
    ``business_date`` (merged into the ``--vars`` of ``args``), against a manifest parsed
    without it and the other :data:`RUN_VARS`: dbt parses a whole project again whenever
    its vars change (1 s for one table, 6–14 s for a hundred), while these are only read
    when the nodes run. The parse is dbt's own partial parse of the project as the other
    vars leave it, so an edited model is picked up as in any dbt command.
    """
    from dbt.cli.main import dbtRunner

    if business_date is None:
        return dbtRunner().invoke(args)
    parse, command = _date_invocations(args, business_date)
    parsed = dbtRunner().invoke(parse)
    if not parsed.success:
        return parsed
    return dbtRunner(manifest=parsed.result).invoke(command)


# The options of a dbt command that shape its parse (each takes a value), and the switches
# passed on as they are; selection, threads and the like do not change the manifest.
_PARSE_OPTIONS = ("--project-dir", "--profiles-dir", "--profile", "--target", "--log-path")
_PARSE_SWITCHES = ("--no-use-colors", "--no-use-colors-file")


def _date_invocations(args: Sequence[str], business_date: str) -> tuple[list[str], list[str]]:
    """The quiet ``parse`` before a dated command, and the command with the date as a var."""
    values: dict[str, Any] = {}
    rest: list[str] = []
    parse = ["parse", "--quiet", "--no-write-json"]
    position = 0
    while position < len(args):
        arg = args[position]
        if arg == "--vars":
            values.update(yaml.safe_load(args[position + 1]) or {})
            position += 2
            continue
        if arg in _PARSE_OPTIONS and position + 1 < len(args):
            parse += [arg, args[position + 1]]
        elif arg in _PARSE_SWITCHES:
            parse.append(arg)
        rest.append(arg)
        position += 1
    values.pop("business_date", None)
    shaping = {name: value for name, value in values.items() if name not in RUN_VARS}
    if shaping:
        parse += ["--vars", json.dumps(shaping)]
    return parse, [*rest, "--vars", json.dumps({**values, "business_date": business_date})]


def table_selector(table_names: Sequence[str], stages: dict[str, str] | None = None) -> list[str]:
    """Dbt ``--select`` arguments for the named tables (stage, models and tests).

    ``stages``: the stage model that runs a table, where it is not its own (a member of a
    table group runs in its group's stage: :func:`hashcdc.groups.members.stages_of`).
    """
    if not table_names:
        return []
    stages = stages or {}
    chosen = dict.fromkeys(stages.get(name, Relations(name).stage) for name in table_names)
    return ["--select", *[f"{stage}+" for stage in chosen]]


def _render_env(value: Any) -> Any:
    if isinstance(value, str) and "{{" in value:
        env = jinja2.Environment(undefined=jinja2.StrictUndefined)

        def env_var(name: str, default: str | None = None) -> str:
            if name in os.environ:
                return os.environ[name]
            if default is None:
                raise HashcdcError(f"profiles.yml needs the environment variable {name}")
            return default

        return env.from_string(value).render(env_var=env_var)
    if isinstance(value, dict):
        return {k: _render_env(v) for k, v in value.items()}
    return value


def profile_output(project_dir: Path, target: str | None = None) -> dict[str, Any]:
    """The rendered output (target) of the project's profile."""
    profiles = yaml.safe_load((project_dir / "profiles" / "profiles.yml").read_text())
    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text())
    profile = profiles[project["profile"]]
    chosen = target or _render_env(profile.get("target", "local"))
    if chosen not in profile["outputs"]:
        raise HashcdcError(f"profiles/profiles.yml has no target '{chosen}'")
    return _render_env(profile["outputs"][chosen])


# What the JVM prints on every start that says nothing to a user: Spark 4's launcher always
# adds the incubating vector module, and the JVM announces it.
JVM_NOISE = (b"WARNING: Using incubator modules",)


def _forward_without_noise(source: int, destination: int) -> None:
    with os.fdopen(source, "rb", buffering=0) as lines, os.fdopen(destination, "wb", 0) as out:
        for line in iter(lines.readline, b""):
            if not line.startswith(JVM_NOISE):
                out.write(line)


@contextlib.contextmanager
def jvm_noise_filtered() -> Iterator[None]:
    """Start the Spark JVM (if it starts here) with its stderr filtered of :data:`JVM_NOISE`.

    The JVM inherits standard error when it is launched: for that moment, standard error is
    a pipe read by a thread that passes every other line on, for as long as the JVM lives.
    """
    from pyspark import SparkContext

    if SparkContext._gateway is not None:  # the JVM runs already
        yield
        return
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    kept = os.dup(2)
    threading.Thread(target=_forward_without_noise, args=(read_end, kept), daemon=True).start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(kept, 2)


# How long a process waits, as it ends, for its Spark JVM to stop (Derby shuts down in it).
JVM_EXIT_SECONDS = 60


def stop_spark_and_wait() -> None:
    """Stop the session and wait until its JVM has ended (registered to run at exit).

    Without it the process ends first and its JVM goes on for a second or two, still
    holding the embedded metastore: the next command would find it busy. PySpark's JVM
    ends when its standard input closes.
    """
    from pyspark import SparkContext

    release_metastore_on_exit()
    context = SparkContext._active_spark_context  # noqa: SLF001 - pyspark's own handle
    gateway = SparkContext._gateway  # noqa: SLF001
    process = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):  # an ending process: stop what can be stopped
        if context is not None:
            context.stop()
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(Exception):
        gateway.shutdown()
    with contextlib.suppress(OSError):
        if process.stdin:
            process.stdin.close()
    try:
        process.wait(timeout=JVM_EXIT_SECONDS)
    except Exception:  # noqa: BLE001 - a JVM that does not stop is killed
        process.kill()
        process.wait()


def quiet_query_context_loggers() -> None:
    """Keep pyspark from logging every failed statement's stack to stderr.

    PySpark logs an analysis error with its Java and Python stack (a JSON line) before
    raising it; the error itself reaches dbt and the CLI, which say it in one line.
    """
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def session_with(settings: dict[str, Any] | None) -> Any:
    """The process's SparkSession with Hive support and ``settings``.

    ``settings`` are a profile's ``server_side_parameters``; the session is created on
    first use and shared after that (dbt's connections and the Python models alike). Before
    anything reaches the catalog, the metastore is checked: an embedded one must be free, a
    shared one gets its tables on first use. On a cluster, a run that gets no executor
    says so (:func:`hashcdc.runtime.cluster.watch_executors`).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    ensure_metastore_free(settings)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in with_class_archive(with_table_format(settings)).items():
        builder = builder.config(key, str(value))
    first = SparkContext._active_spark_context is None  # noqa: SLF001
    with jvm_noise_filtered():
        spark = builder.getOrCreate()
    if first:
        atexit.register(stop_spark_and_wait)
        note_spark_jvm(getattr(getattr(SparkContext._gateway, "proc", None), "pid", None))  # noqa: SLF001
        quiet_query_context_loggers()
    prepare_shared_metastore(spark, settings)
    watch_executors(spark)
    return spark


def files_session(project_dir: Path, target: str | None = None) -> Any:
    """A SparkSession that only reads files from the driver (``hashcdc check``).

    No metastore (it works while a run holds the embedded one) and no executors; the
    profile's storage settings (``spark.hadoop.*``, extra jars) apply.
    """
    from pyspark.sql import SparkSession

    settings = profile_output(project_dir, target).get("server_side_parameters") or {}
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for key, value in settings.items():
        if key.startswith("spark.hadoop.") or key in (
            "spark.driver.extraClassPath",
            "spark.driver.extraJavaOptions",
            "spark.jars",
        ):
            builder = builder.config(key, str(value))
    with jvm_noise_filtered():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_session(project_dir: Path, target: str | None = None) -> Any:
    """A SparkSession configured like the profile's target (same warehouse and metastore)."""
    output = profile_output(project_dir, target)
    spark = session_with(output.get("server_side_parameters"))
    spark.sparkContext.setLogLevel("ERROR")
    schema = output["schema"]
    spark.sql(f"create database if not exists `{schema}`")
    spark.catalog.setCurrentDatabase(schema)
    return spark
