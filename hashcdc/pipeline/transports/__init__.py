"""Transports: where a table's extracts or events land, one module each, asked by the table.

Each module of this package defines a :class:`~hashcdc.pipeline.transports.base.Transport`
subclass (its name, which tables it carries, a date's locations, how they are read as
lines, a record's partition and number, the stream's watch); the extract, the stage, the
change-feed path, the rejects and ``hashcdc stream`` ask :func:`transport_of` and never
switch on the kind. Modules here are imported when the package is: adding a transport is
adding a module (docs/architecture.md, "Adding a transport"); :func:`register` adds one
from elsewhere (a plugin, a test). ``files`` carries every table no other claims.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hashcdc.pipeline.discovery import register_modules
from hashcdc.pipeline.transports.base import StreamLimits, StreamRead, Transport, Watch

if TYPE_CHECKING:
    from hashcdc.config import TableConfig

__all__ = ["StreamLimits", "StreamRead", "Transport", "Watch", "register", "transport_of"]

_TRANSPORTS: dict[str, Transport] = {}
# Modules of this package that hold no transport.
_SUPPORT_MODULES = ("base",)
# The transport of the tables no other one carries.
DEFAULT = "files"


def register(transport: type[Transport]) -> type[Transport]:
    """Make a transport class the one of its name (usable as a class decorator)."""
    _TRANSPORTS[transport.name] = transport()
    return transport


def transport_of(table: TableConfig) -> Transport:
    """The transport that carries ``table``: the one that claims it, else ``files``.

    Raises
    ------
    ValueError
        When two transports claim the table (their configs overlap).

    """
    claims = [t for name, t in _TRANSPORTS.items() if name != DEFAULT and t.carries(table)]
    if len(claims) > 1:
        raise ValueError(
            f"table '{table.name}' is claimed by transports {', '.join(t.name for t in claims)}"
        )
    return claims[0] if claims else _TRANSPORTS[DEFAULT]


register_modules(__name__, __path__, Transport, register, _SUPPORT_MODULES)
