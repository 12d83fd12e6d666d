"""What every input format's reader offers the pipeline (:class:`Reader`).

The stage, the rejects, the checks and the change-feed path ask a table's reader
(:func:`hashcdc.pipeline.inputs.reader_for`) instead of switching on ``source.format``: how its
files are checked before anything is read, how they become rows of text (or raw change
events), and how a rejected row's position becomes a row and a line number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from hashcdc.pipeline.extract import refuse_files_not_text
from hashcdc.pipeline.inputs.events import raw_table_events

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from hashcdc.config import TableConfig


class Reader:
    """One input format (``source.format``): a subclass per format, registered by name.

    Attributes
    ----------
    name : str
        The value of ``source.format``.
    description : str
        What the format is, for the config's schema and the docs.
    carries_events : bool
        The format holds change events only (with their own operation and positions): a
        table reading it is a change feed, and needs no ``changes.operation_column``.
    is_text : bool
        Files are text: each is checked for a compressed, archive or binary file first.
    row_id_is_file_row : bool
        ``_row_id`` of :meth:`read_rows` is the row's index in its file, so a rejected
        row's number needs no count of the rows of earlier splits.
    malformed_row : str
        The reason given for a row that :meth:`read_rows` could not split into fields.
    line_holds_event : bool
        The raw events' ``_line`` holds each event's whole text as JSON writes it, so a
        scan of the text can rule out a value (that JSON does not escape) before any
        line is parsed.
    options : type | None
        The declared options of the format (a dataclass of :func:`~hashcdc.config.setting`
        fields), given in ``source.<name>``; the config's schema and defaults are written
        from it by ``python -m hashcdc.registries``.

    """

    name: ClassVar[str]
    description: ClassVar[str]
    carries_events: ClassVar[bool] = False
    is_text: ClassVar[bool] = True
    row_id_is_file_row: ClassVar[bool] = False
    line_holds_event: ClassVar[bool] = False
    malformed_row: ClassVar[str] = "malformed row"
    options: ClassVar[type | None] = None

    def encoding(self, table: TableConfig) -> str:
        """The text encoding of the table's files."""
        return "UTF-8"

    def header_lines(self, table: TableConfig) -> int:
        """Lines before a file's first row (a row's line number is its number plus these)."""
        return 0

    def rows_span_lines(self, table: TableConfig) -> bool:
        """Whether a row may span lines (then only its row number is exact)."""
        return False

    def check_extract(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        business_date: str,
        sampled: list[str] | None = None,
    ) -> None:
        """Refuse files that cannot be read as the config says, before anything is read.

        ``table`` is the whole config; :meth:`check_columns` gets the table as read on the
        date (``sampled``: the fields of its :meth:`column_sample`, read already).

        Raises
        ------
        InputDataError
            A file that is not text, or columns other than the config's.

        """
        heads = {}
        if self.is_text:
            heads = refuse_files_not_text(spark, table, files, business_date, self.encoding(table))
        self.check_columns(spark, table, files, business_date, sampled, heads)

    def check_columns(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        business_date: str,
        sampled: list[str] | None = None,
        heads: dict[str, bytes] | None = None,
    ) -> None:
        """Refuse (or report) columns that differ from the config; nothing by default.

        ``heads``: the first bytes of files the not-text check read (a file is opened once).
        """
        del spark, table, files, business_date, sampled, heads

    def column_sample(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        lines: DataFrame | None = None,
        by: Column | None = None,
    ) -> DataFrame | None:
        """The fields (``key``) a sample of the rows carries, when the check reads one.

        A table group's stage reads its members' in one query and hands each its own
        (:meth:`check_columns`' ``sampled``); None: the check reads no sample. ``lines``:
        the files' lines (:func:`~hashcdc.pipeline.extract.read_event_lines`), already read.
        ``by``: the lines are of several tables alike, each line's named by this column:
        the fields of all the lines, per table (``table_name``).
        """
        del spark, table, files, lines, by
        return None

    def read_rows(self, spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
        """The extract with every source column as text, named as in the lake.

        Also ``_corrupt_record`` (a malformed row's raw text, else null) and where each
        row sits: ``_source_file``, ``_block_start`` (its split) and ``_row_id`` (growing
        within the split).
        """
        raise NotImplementedError

    def raw_events(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        lines: DataFrame | None = None,
    ) -> DataFrame:
        """A change feed's events as text, in the shape :mod:`hashcdc.pipeline.feed` casts.

        By default the rows of :meth:`read_rows`, whose operation and sequence are columns
        (``changes.operation_column``, ``changes.sequence_by``). ``lines``: the files'
        lines, already read, for a reader whose lines are its events
        (``line_holds_event``).
        """
        del lines
        return raw_table_events(self.read_rows(spark, table, files), table)
