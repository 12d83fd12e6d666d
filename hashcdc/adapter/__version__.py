"""Adapter version, read by dbt's adapter factory."""

version = "1.11.0"
