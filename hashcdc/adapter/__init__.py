"""The hashcdc dbt adapter plugin: dbt-spark plus Python models on the active SparkSession.

Installed as ``dbt.adapters.hashcdc`` so that a profile with ``type: hashcdc`` loads it.
It inherits everything from dbt-spark (``dependencies=["spark"]``, so every ``spark__``
macro and materialization applies) and adds one thing: a ``session`` Python submission
method that runs a compiled dbt Python model in the SparkSession of the dbt process.
"""

from pathlib import Path

from dbt.adapters.base import AdapterPlugin

from hashcdc.adapter.connections import HashcdcConnectionManager, HashcdcCredentials
from hashcdc.adapter.impl import HashcdcAdapter

__all__ = ["HashcdcAdapter", "HashcdcConnectionManager", "HashcdcCredentials", "Plugin"]

Plugin = AdapterPlugin(
    adapter=HashcdcAdapter,  # type: ignore[arg-type]
    credentials=HashcdcCredentials,
    include_path=str(Path(__file__).parent / "include"),
    project_name="dbt_hashcdc",
    dependencies=["spark"],
)
