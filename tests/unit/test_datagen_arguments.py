"""``hashcdc datagen``'s arguments checked before anything is generated."""

from __future__ import annotations

import pytest

from hashcdc.codegen import datagen
from hashcdc.errors import HashcdcError


def test_datagen_rejects_fractions_that_do_not_add_up() -> None:
    with pytest.raises(HashcdcError, match="add up to 1"):
        datagen.DatagenOptions(
            fraction_deleted=0.5, fraction_updated=0.5, fraction_unchanged=0.5
        ).validate()
