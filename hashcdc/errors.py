"""Errors that hashcdc reports to users as a message, never as a stack trace."""


class HashcdcError(Exception):
    """A problem the user can act on: bad config, bad input, a refused run."""


class ConfigError(HashcdcError):
    """One or more table configs are invalid."""


class InputDataError(HashcdcError):
    """An extract cannot be processed (missing, unreadable, or values that fail to cast)."""
