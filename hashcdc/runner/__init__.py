"""The code that calls dbt: a command's preamble, one invocation and its audit, the loops."""
