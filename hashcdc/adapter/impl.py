"""The hashcdc adapter: dbt-spark with a ``session`` Python submission method."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from dbt.adapters.base import BaseRelation, PythonJobHelper, available
from dbt.adapters.base.relation import InformationSchema
from dbt.adapters.exceptions.connection import InvalidConnectionError
from dbt.adapters.spark.impl import (
    LIST_RELATIONS_MACRO_NAME,
    LIST_RELATIONS_SHOW_TABLES_MACRO_NAME,
    SCHEMA_NOT_FOUND_MESSAGES,
    TABLE_OR_VIEW_NOT_FOUND_MESSAGES,
    SparkAdapter,
)
from dbt_common.clients.agate_helper import table_from_data
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from hashcdc.adapter.connections import HashcdcConnectionManager
from hashcdc.adapter.python_submissions import SessionPythonJobHelper
from hashcdc.dates import parse_business_date
from hashcdc.errors import HashcdcError
from hashcdc.groups import outcomes
from hashcdc.groups.evolution import member_shape_changes
from hashcdc.pipeline.session_stage import StageCounts, kept_counts, known_empty, session_stage
from hashcdc.runtime.sessions import thread_session
from hashcdc.state.maintenance import compact_if_due, deletion_vectors_by_size
from hashcdc.state.plan import DateCommand, member_restores, plan_date, plan_of
from hashcdc.state.versions import (
    applied_versions,
    commit_metadata_statement,
    restore,
    restore_members,
    table_properties,
)

# Listing a schema while another process replaces one of its tables: tries, then a
# slower listing that tolerates it.
LISTING_ATTEMPTS = 4
LISTING_PAUSE_SECONDS = 0.5
# What a listed view says of itself (dbt-spark reads the type from it).
VIEW_INFORMATION = "Type: VIEW\n"


class HashcdcAdapter(SparkAdapter):
    """dbt-spark's adapter whose Python models run in the dbt process's SparkSession."""

    ConnectionManager = HashcdcConnectionManager

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """The schema's relations: each one's name, type and provider, what a run asks.

        ``show table extended`` describes every relation, hundreds for a few table groups
        (1.5 s a date for a group of 100 tables, whose 500 views are definitions over a few
        tables). The schema's views are named by ``show views`` and only its tables are
        described (their provider: Delta, Iceberg); a view's columns are left to
        ``describe``, as dbt-spark does for a relation listed without them. ``dbt docs
        generate`` still lists every relation's columns at once
        (:meth:`_get_one_catalog`).
        """
        return self._listed(schema_relation, lean=True)

    def _listed(self, schema_relation: BaseRelation, lean: bool) -> list[BaseRelation]:
        """The schema's relations, also while another process replaces one of them.

        ``show table extended`` fails when a table it listed is dropped before it is
        described, which happens on a shared metastore while another run rewrites its stage
        table. dbt-spark takes that failure for an empty schema: a run would then try to
        create tables that exist, and ``dbt docs generate`` would write an empty catalog.
        Here the listing is tried again, and in the end done table by table.
        """
        kwargs = {"schema_relation": schema_relation}
        for attempt in range(LISTING_ATTEMPTS):
            try:
                if lean:
                    return self._lean_listing(schema_relation)
                rows = self.execute_macro(LIST_RELATIONS_MACRO_NAME, kwargs=kwargs)
            except DbtRuntimeError as exc:
                message = getattr(exc, "msg", "") or str(exc)
                if any(m in message for m in SCHEMA_NOT_FOUND_MESSAGES):
                    return []
                if not any(m in message for m in TABLE_OR_VIEW_NOT_FOUND_MESSAGES):
                    return super().list_relations_without_caching(schema_relation)
                time.sleep(LISTING_PAUSE_SECONDS * (attempt + 1))
                continue
            return self._build_spark_relation_list(
                row_list=rows, relation_info_func=self._get_relation_information
            )
        rows = self.execute_macro(LIST_RELATIONS_SHOW_TABLES_MACRO_NAME, kwargs=kwargs)
        return self._build_spark_relation_list(
            row_list=rows, relation_info_func=self._get_relation_information_using_describe
        )

    def _lean_listing(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Views by ``show views``, tables by ``show table extended`` of their names alone."""
        schema = schema_relation.schema
        _, named = self.execute(f"show tables in {schema}", fetch=True)
        _, viewed = self.execute(f"show views in {schema}", fetch=True)
        # A session's temporary views are listed too: they are no relation of the schema.
        views = sorted({str(row[1]) for row in viewed if not row[2]})
        tables = sorted({str(row[1]) for row in named if not row[2]} - set(views))
        rows = [(schema, view, False, VIEW_INFORMATION) for view in views]
        if tables:
            # The pattern's names are alternatives ("a|b"); the session catalog's names
            # hold letters, digits and _ alone (INVALID_SCHEMA_OR_RELATION_NAME), no wildcard.
            pattern = "|".join(tables)
            _, extended = self.execute(
                f"show table extended in {schema} like '{pattern}'", fetch=True
            )
            rows += [tuple(row) for row in extended]
        return self._build_spark_relation_list(
            row_list=rows, relation_info_func=self._get_relation_information
        )

    def _get_one_catalog(
        self,
        information_schema: InformationSchema,
        schemas: set[str],
        used_schemas: frozenset[tuple[str, str]],
    ) -> Any:
        """The catalog of one schema: every relation's columns, from one full listing.

        dbt-spark reads them from the relations' cached descriptions, which the lean
        listing leaves out for views (each would be described on its own).
        """
        if len(schemas) != 1:
            raise CompilationError(f"Expected only one schema in _get_one_catalog, found {schemas}")
        schema = next(iter(schemas))
        relation = self.Relation.create(schema=schema, identifier="")
        columns: list[dict[str, Any]] = []
        for listed in self._listed(relation, lean=False):
            columns.extend(self._get_columns_for_catalog(listed))
        return table_from_data(columns, list(columns[0]) if columns else [])

    def _session(self) -> Any:
        """The SparkSession of the calling thread's connection (opened here if need be).

        A node's calls (its hooks' restore, compaction, the stage it reads) run in the
        session its statements run in (:mod:`hashcdc.runtime.sessions`).
        """
        with contextlib.suppress(InvalidConnectionError):
            _ = self.connections.get_thread_connection().handle
        return thread_session()

    @available
    def hashcdc_business_date(self, value: Any) -> str:
        """``value`` checked as a business date (:func:`hashcdc.dates.parse_business_date`).

        The ``business_date`` macro's check: the rule the CLI checks ``--date`` by.
        """
        try:
            return parse_business_date(value)
        except HashcdcError as exc:
            raise DbtRuntimeError(str(exc)) from None

    @available
    def hashcdc_applied_versions(self, relation: BaseRelation) -> list[dict[str, Any]]:
        """The business dates a state table holds, each with the version that applied it.

        Read from the table's Delta log (:func:`hashcdc.state.versions.applied_versions`); none
        when the table does not exist (yet).
        """
        spark = self._session()
        table = f"{relation.schema}.{relation.identifier}"
        if not spark.catalog.tableExists(table):
            return []
        return [
            {
                "version": applied.version,
                "business_date": applied.business_date,
                "last_version": applied.last_version,
                "is_open": applied.is_open,
                "first_version": applied.first_version,
            }
            for applied in applied_versions(spark, table)
        ]

    @available
    def hashcdc_date_plan(
        self, relation: BaseRelation | None, command: dict[str, Any], table_name: str = ""
    ) -> dict[str, Any]:
        """The table-date's plan (:func:`hashcdc.state.plan.plan_of`) for the macros.

        ``relation`` None (parse time): the plan of a state with no log.
        """
        asked = DateCommand.from_dict(command)
        if relation is None:
            return plan_date(asked, [], lambda version: True, table_name).to_macro()
        table = f"{relation.schema}.{relation.identifier}"
        return plan_of(self._session(), table, asked, table_name).to_macro()

    @available
    def hashcdc_session_stage(
        self,
        relation: BaseRelation,
        table_config: dict[str, Any],
        business_date: str,
        partitions: Any = None,
    ) -> str:
        """The temporary view of a stage for a date (:mod:`hashcdc.pipeline.session_stage`).

        The view the stage model kept in this session, or — when a command runs a consumer
        without its stage — one computed again from the extract.
        """
        try:
            return session_stage(
                self._session(),
                f"{relation.schema}.{relation.identifier}",
                table_config,
                business_date,
                int(partitions) if partitions else None,
            )
        except HashcdcError as exc:
            raise DbtRuntimeError(str(exc)) from None

    @available
    def hashcdc_stage_counts(
        self, relation: BaseRelation, business_date: str
    ) -> StageCounts | None:
        """A kept stage's rows as its checks counted them (:func:`kept_counts`), or None."""
        return kept_counts(
            self._session(), f"{relation.schema}.{relation.identifier}", business_date
        )

    @available
    def hashcdc_known_empty(self, relation: BaseRelation) -> bool:
        """Whether a relation of the node's session has no rows, known without reading it.

        True only when its plan is an empty local relation (:func:`known_empty`): a Python
        model's rows built empty (:func:`hashcdc.pipeline.rejects.no_rows`). Never a job.
        """
        return known_empty(self._session().table(relation.render()))

    @available
    def hashcdc_members_run(self, group: str, business_date: str, members: list[str]) -> list[str]:
        """Of a group's enabled members, those its date runs (:func:`outcomes.members_run`)."""
        return outcomes.members_run(group, parse_business_date(business_date), members)

    @available
    def hashcdc_refused_members(self, group: str, business_date: str) -> dict[str, str]:
        """The members a group's stage refused for the date, each with why."""
        return outcomes.refused(group, parse_business_date(business_date))

    @available
    def hashcdc_member_shape_changes(
        self, relation: BaseRelation, members: list[str], declared: dict[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """A group's members' shape changes, as declared and as its state records them.

        ``declared``: the generator's, from the configs (:func:`member_shape_changes`).
        """
        spark = self._session()
        table = f"{relation.schema}.{relation.identifier}"
        if not spark.catalog.tableExists(table):
            return {}
        return member_shape_changes(table_properties(spark, table), members, declared)

    @available
    def hashcdc_refuse_member(
        self, group: str, business_date: str, member: str, reason: str
    ) -> str:
        """Record that a group's date refused a member (:func:`outcomes.refuse`); returns ''."""
        outcomes.refuse(group, parse_business_date(business_date), member, reason)
        return ""

    @available
    def hashcdc_restore_members(
        self, relation: BaseRelation, command: dict[str, Any], members: list[str]
    ) -> str:
        """Undo what a table group's date undoes first, member by member, in one commit.

        Each member's own plan says (:func:`hashcdc.state.plan.member_restores`); its rows
        are put back to its version, never the group's (:func:`restore_members`). Returns
        what was undone, for the log ('' when nothing).
        """
        spark = self._session()
        table = f"{relation.schema}.{relation.identifier}"
        if not spark.catalog.tableExists(table):
            return ""
        undone = member_restores(spark, table, DateCommand.from_dict(command), members)
        if not undone:
            return ""
        restore_members(spark, table, undone)
        return f"{table}: " + ", ".join(
            f"{m} {'emptied' if v is None else f'put back to version {v}'}"
            for m, v in sorted(undone.items())
        )

    @available
    def hashcdc_restore_state(self, relation: BaseRelation, version: int) -> str:
        """Restore a state to ``version`` (:func:`hashcdc.state.versions.restore`); returns ''."""
        restore(self._session(), f"{relation.schema}.{relation.identifier}", version)
        return ""

    @available
    def hashcdc_compact_if_due(self, relation: BaseRelation, every_dates: int, kept: int) -> str:
        """Compact a table when its policy says so (``maintenance.compact_if_due``).

        Returns what was done, for the log ('' when nothing was due).
        """
        table = f"{relation.schema}.{relation.identifier}"
        done = compact_if_due(self._session(), table, int(every_dates), int(kept))
        return done.summary() if done else ""

    @available
    def hashcdc_deletion_vectors_by_size(self, relation: BaseRelation, from_mib: Any) -> str:
        """Switch a state's deletion vectors on by size (``maintenance``); '' or the log line."""
        table = f"{relation.schema}.{relation.identifier}"
        done = deletion_vectors_by_size(self._session(), table, float(from_mib))
        return done or ""

    @available
    def hashcdc_commit_metadata_statement(
        self,
        business_date: str | None,
        reset: bool = False,
        micro_batch: bool = False,
        members: list[str] | None = None,
    ) -> str:
        """The ``set`` (or, without a date, ``reset``) of the next commits' ``userMetadata``.

        ``members``: a table group's, the members whose date the commit applies.
        """
        return commit_metadata_statement(business_date, reset, micro_batch, members)

    @property
    def default_python_submission_method(self) -> str:
        """Python models run in the active SparkSession unless a model asks otherwise."""
        return "session"

    @property
    def python_submission_helpers(self) -> dict[str, type[PythonJobHelper]]:
        """dbt-spark's Databricks helpers plus the in-process ``session`` helper."""
        return {**super().python_submission_helpers, "session": SessionPythonJobHelper}

    def generate_python_submission_response(self, submission_result: Any) -> Any:
        """Report a Python model like a SQL statement (no rows affected are known)."""
        return self.connections.get_response(None)
