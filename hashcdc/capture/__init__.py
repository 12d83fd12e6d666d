"""Capture from live databases: a table's snapshot as a business date's extract.

:mod:`hashcdc.capture.snapshot` reads a configured table (``source.database``) through
Spark's JDBC source and lands it where the table's extracts land, so that the ordinary
pipeline (``hashcdc run``) diffs it like any delivered extract (docs/capture.md).
"""
