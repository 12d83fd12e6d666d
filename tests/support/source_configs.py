"""Table configs of a PostgreSQL source table: captured as a change feed, or extracted.

Shared by the unit tests that check such a config and the functional tests that run it
against a real server (its port).
"""

from __future__ import annotations

from typing import Any

# The source database the tests make on their PostgreSQL server.
SOURCE_DATABASE = "shop"


def captured_config(port: int, source_table: str, name: str) -> dict[str, Any]:
    """An orders table captured from the server's log (Debezium envelopes, audit history)."""
    return {
        "name": name,
        "extract_type": "changes",
        "source": {
            "path": f"landing/{name}/{{business_date}}",
            "format": "debezium",
            "database": {
                "kind": "postgresql",
                "port": port,
                "database": SOURCE_DATABASE,
                "table": f"public.{source_table}",
                "user_env": "SHOP_USER",
                "slot": f"hashcdc_{source_table}",
            },
        },
        "changes": {"sequence_by": ["source.commit_lsn", "source.lsn"], "history": "audit"},
        "columns": [
            {"name": "order_id", "source_name": "id", "type": "int", "key": True},
            {"name": "item", "type": "string"},
            {"name": "amount", "type": "decimal(10,2)"},
            {"name": "placed", "type": "date"},
            {"name": "paid", "type": "boolean"},
            {"name": "notes", "type": "string"},
        ],
    }


def extracted_config(port: int, source_table: str, name: str) -> dict[str, Any]:
    """A customers table extracted in full from the server (parquet, two parallel reads)."""
    return {
        "name": name,
        "extract_type": "full",
        "source": {
            "path": f"landing/{name}/{{business_date}}",
            "format": "parquet",
            "database": {
                "kind": "postgresql",
                "host": "127.0.0.1",
                "port": port,
                "database": SOURCE_DATABASE,
                "table": f"public.{source_table}",
                "user_env": "SHOP_USER",
                "partition_column": "id",
                "partitions": 2,
            },
        },
        "columns": [
            {"name": "customer_id", "source_name": "id", "type": "int", "key": True},
            {"name": "name", "type": "string"},
            {"name": "balance", "type": "decimal(12,2)"},
            {"name": "born", "type": "date"},
        ],
    }
