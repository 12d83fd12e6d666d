"""Input formats: a reader per ``source.format``, the one place that knows the format.

Each module of this package defines a :class:`~hashcdc.pipeline.inputs.base.Reader` subclass per
format it reads (its name, options, file and header checks, how its files become rows of
text or raw change events, how a rejected row is numbered); the pipeline asks
:func:`reader_for` and never switches on the format. Modules here are imported when the
package is: adding a format is adding a module (docs/architecture.md, "Adding an input
format"); :func:`register` adds one from elsewhere (a plugin, a test).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hashcdc.config.schema import declare_format
from hashcdc.pipeline.discovery import register_modules
from hashcdc.pipeline.inputs.base import Reader

if TYPE_CHECKING:
    from hashcdc.config import TableConfig

_READERS: dict[str, Reader] = {}
# Modules of this package that hold no format.
_SUPPORT_MODULES = ("base", "events")
# The first formats in the config's schema and docs; the others follow by name.
_FIRST = ("csv", "parquet")


def register(reader: type[Reader]) -> type[Reader]:
    """Make a reader class the one for its format name (usable as a class decorator)."""
    _READERS[reader.name] = reader()
    declare_format(reader.name, reader.carries_events)
    return reader


def reader_for(format_name: str) -> Reader:
    """The reader of a ``source.format``."""
    try:
        return _READERS[format_name]
    except KeyError:
        raise ValueError(
            f"no reader for source.format {format_name!r}; formats: {', '.join(format_names())}"
        ) from None


def table_reader(table: TableConfig) -> Reader:
    """The reader of a table's extracts (its ``source.format``)."""
    return reader_for(table.source.format)


def format_names() -> tuple[str, ...]:
    """The registered formats: csv and parquet first, then the others by name."""
    first = [name for name in _FIRST if name in _READERS]
    return (*first, *sorted(set(_READERS) - set(first)))


def event_format_names() -> tuple[str, ...]:
    """The formats that carry change events only (their tables are change feeds)."""
    return tuple(name for name in format_names() if _READERS[name].carries_events)


register_modules(__name__, __path__, Reader, register, _SUPPORT_MODULES)
