"""Transient failures retried with backoff for a while, then given up: one rule for all.

The capture retries a lost database server, the stream a broker away, a busy metastore
or a concurrent Delta commit. Both wait 1, 2, 4 … seconds (at most 30, and not past the
time) between attempts and give up once the failures have lasted longer than their time
(``--retry-seconds``, ``retry_for``); a success in between starts the count again. Each
retry is counted: the stream records those a micro-batch rode through in its audit row
(``retries``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

# The longest pause between two attempts, in seconds.
LONGEST_PAUSE = 30.0
# The project var that says how long the stream retries a table without `retry_for`.
RETRY_FOR_VAR = "hashcdc_retry_for"
RETRY_FOR_DEFAULT = "5m"


@dataclass
class Retries:
    """The retries of one thing (a capture's server, a stream's table) since its last success.

    ``seconds``: how long failures may go on before :meth:`failed` gives up.
    """

    seconds: float
    clock: Callable[[], float] = time.monotonic
    # When the failures since the last success began (monotonic seconds); None: none.
    since: float | None = None
    # Failures since the last success.
    count: int = 0
    # The reason of the latest failure.
    reason: str = ""
    # Every retry since this object was made (a stream's stop says how many).
    total: int = 0

    def failed(self, reason: str) -> float | None:
        """A failure: the pause before the next attempt, or None when the time is up."""
        now = self.clock()
        if self.since is None:
            self.since = now
        self.count += 1
        self.reason = reason
        if now - self.since > self.seconds:
            return None
        self.total += 1
        # The last pause ends just past the time: the attempt after it is the last one.
        left = self.seconds - (now - self.since)
        return min(2.0 ** (self.count - 1), LONGEST_PAUSE, left + 0.1)

    @property
    def lasted(self) -> float:
        """Seconds since the first failure after the last success (0: none)."""
        return 0.0 if self.since is None else self.clock() - self.since

    def succeeded(self) -> int:
        """A success: the count of failures it followed (now retried), the count reset."""
        retried, self.since, self.count, self.reason = self.count, None, 0, ""
        return retried
