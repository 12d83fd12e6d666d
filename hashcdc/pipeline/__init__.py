"""The daily pipeline's Python half.

An extract read, cast and hashed once (the stage), change feeds, the checks before
anything is written, rejected rows, and the stage kept in the Spark session.
"""
