"""Hash algorithm version 2 in plain Python, independent of Spark (the ``xxhash`` package).

The golden vectors of the functional tier compare Spark's hashes with it; the unit tier
checks the frozen vector with it alone.
"""

from __future__ import annotations

import struct
from typing import Any

import xxhash

from hashcdc.pipeline.hashing import HASH_LANES

SPARK_XXHASH64_SEED = 42
UNIT_ENCODERS = {
    "str": lambda v: v.encode("utf-8"),
    "int": lambda v: struct.pack("<i", v),
    "long": lambda v: struct.pack("<q", v),
    "double": lambda v: struct.pack("<d", v),
    "bool": lambda v: struct.pack("<i", 1 if v else 0),
}


def reference_hash(units: list[tuple[str, Any]]) -> str:
    """Hash algorithm version 2 in plain Python: two XXH64 chains over the units."""
    digest = b""
    for lane in HASH_LANES:
        state = SPARK_XXHASH64_SEED
        for kind, value in [("int", lane), *units]:
            state = xxhash.xxh64_intdigest(UNIT_ENCODERS[kind](value), seed=state)
        digest += state.to_bytes(8, "big")
    return digest.hex()


def pair(name: str, kind: str, value: Any) -> list[tuple[str, Any]]:
    return [("str", name), (kind, value)]


FROZEN_UNITS = (
    pair("active", "bool", False)
    + pair("amount", "str", "10.5")
    + pair("born", "int", 10956)
    + pair("id", "str", "42")
    + pair("region", "str", "eu")
    + pair("score", "double", 0.25)
)
FROZEN_HASH = "016de29ed8d3732f55de10308b895f6d"
