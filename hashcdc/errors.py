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
