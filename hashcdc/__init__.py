"""hashcdc: config-driven hash-diff Change Data Capture, a dbt project on Apache Spark."""

__version__ = "0.1.0"
