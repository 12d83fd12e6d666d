"""The engine's wire: one JSON object per line over a local (Unix) socket.

A client sends one request (``command``, ``status`` or ``stop``) and reads frames until
``exit``: ``out``/``err`` (text for its standard output and error), ``ask`` (read one
line of standard input and send it back as ``line``), ``note`` (a line for standard
error from the engine itself).
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any


class Wire:
    """Frames in both directions over one connected socket; sending is thread-safe."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self._reader = connection.makefile("r", encoding="utf-8", newline="\n")
        self._writer = connection.makefile("w", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()

    def send(self, frame: dict[str, Any]) -> None:
        """Send one frame (raises OSError when the other side is gone)."""
        line = json.dumps(frame, separators=(",", ":")) + "\n"
        with self._lock:
            self._writer.write(line)
            self._writer.flush()

    def receive(self) -> dict[str, Any] | None:
        """The next frame, or None when the other side closed the connection."""
        try:
            line = self._reader.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        frame = json.loads(line)
        return frame if isinstance(frame, dict) else None

    def close(self) -> None:
        """Close both directions (quietly: the other side may be gone already)."""
        for closing in (self._writer.close, self._reader.close, self.connection.close):
            try:
                closing()
            except OSError:
                pass
