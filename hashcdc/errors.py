"""Errors that hashcdc reports to users as a message, never as a stack trace."""


class HashcdcError(Exception):
    """A problem the user can act on: bad config, bad input, a refused run."""


class ConfigError(HashcdcError):
    """One or more table configs are invalid."""


class InputDataError(HashcdcError):
    """An extract cannot be processed (missing, unreadable, or values that fail to cast)."""


# What a failure's message says when it may pass by itself: a broker or a database server
# away, a metastore that does not answer or is busy, a concurrent Delta commit, a table
# lock held by another run. The stream retries these (`retry_for`); anything else (bad
# input, a refused check, a failed test) pauses the table at once.
TRANSIENT_MARKS = (
    "no Kafka broker answers",
    "org.apache.kafka.common.errors",
    "Connection refused",
    "Connection to ",  # PostgreSQL's driver: "Connection to host:port refused"
    "Unable to fetch table",  # Hive: its metastore database did not answer
    "Connection reset",
    "connection timed out",
    "Communications link failure",
    "MetaException",
    "metastore",
    "JDODataStoreException",
    "JDOFatalDataStoreException",
    "SQLTransientConnectionException",
    "SQLNonTransientConnectionException",
    "Concurrent",
    "DELTA_CONCURRENT",
    "MetadataChangedException",
    "ProtocolChangedException",
    "is being processed by another run",
)


def is_transient(message: str) -> bool:
    """Whether a failure's message says it may pass by itself (:data:`TRANSIENT_MARKS`)."""
    lowered = message.lower()
    return any(mark.lower() in lowered for mark in TRANSIENT_MARKS)


def telling_line(error: BaseException) -> str:
    """An error's first telling line: a JVM error's own, not Py4J's "An error occurred…"."""
    lines = [line.strip().lstrip(": ") for line in str(error).strip().splitlines()]
    telling = [line for line in lines if line and not line.startswith("An error occurred")]
    return telling[0] if telling else type(error).__name__
