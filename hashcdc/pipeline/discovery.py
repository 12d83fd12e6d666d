"""Registries filled from their package's modules: a module per entry, found by class.

The input formats (:mod:`hashcdc.pipeline.inputs`) and the transports
(:mod:`hashcdc.pipeline.transports`) are each a package whose modules define one
subclass per entry; importing the package registers every one of them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import Any


def register_modules(
    package: str,
    path: Iterable[str],
    base: type,
    register: Callable[[Any], Any],
    support: tuple[str, ...] = (),
) -> None:
    """Import the package's modules (less ``support``) and register each named subclass.

    A class counts when it subclasses ``base``, is defined in that module, and sets its
    own ``name``.
    """
    for module in pkgutil.iter_modules(path):
        if module.name in support:
            continue
        loaded = importlib.import_module(f"{package}.{module.name}")
        for value in vars(loaded).values():
            if (
                isinstance(value, type)
                and issubclass(value, base)
                and value.__module__ == loaded.__name__
                and "name" in vars(value)
            ):
                register(value)
