"""Benchmarks: ``hashcdc bench`` measures, it never asserts (the tests do).

* :mod:`~hashcdc.bench.run`: the pipeline's bench, sizes and days against the peers;
* :mod:`~hashcdc.bench.peer`: the peers (a dbt snapshot on DuckDB, on dbt-spark);
* :mod:`~hashcdc.bench.report`: the figures as docs/benchmarks.md's tables;
* :mod:`~hashcdc.bench.formats`: a Delta and an Iceberg state side by side (``--formats``);
* :mod:`~hashcdc.bench.capture`: capture from a live database (``--capture``).
"""
