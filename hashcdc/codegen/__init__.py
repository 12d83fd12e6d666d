"""Code generation.

dbt models from the table configs, sample configs from data, and synthetic data for the
demo and the bench.
"""
