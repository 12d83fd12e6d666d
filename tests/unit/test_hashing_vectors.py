"""The frozen hash vector and the algorithm's version, without Spark (the unit tier).

The functional tier (``tests/functional/test_hashing.py``) checks the same vector, and
every golden vector, on the JVM functions the stage uses.
"""

from __future__ import annotations

from reference_hash import FROZEN_HASH, FROZEN_UNITS, reference_hash

from hashcdc.pipeline.hashing import HASH_ALGORITHM_VERSION


def test_frozen_units_hash_with_the_reference_xxh64() -> None:
    """The unit tier's check of the frozen vector: no Spark, the independent XXH64 only."""
    assert reference_hash(FROZEN_UNITS) == FROZEN_HASH


def test_algorithm_version_is_pinned() -> None:
    assert HASH_ALGORITHM_VERSION == 2
