"""Progress of long work, one item at a time (``[3/11] pvc 2.1 s``): on a terminal one live line,
rewritten as items finish and erased at the end; in a log (a pipe, a file) a plain line per item."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


class Progress:
    """Counts finished items out of ``total`` and says each on ``stream`` (default stderr)."""

    def __init__(self, total: int, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.total, self.count = total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_terminal(self.stream) if live is None else live
        self._shown = False

    def line(self, label: str, seconds: float, note: str = "") -> str:
        """The next item's line, counted."""
        self.count += 1
        return f"[{self.count}/{self.total}] {label} {seconds:.1f} s" + (f": {note}" if note else "")

    def done(self, label: str, seconds: float, note: str = "") -> None:
        """One more item finished: the live line now says it, or a plain line is written."""
        text = self.line(label, seconds, note)
        self.stream.write(f"\r\x1b[K{text}" if self.live else f"{text}\n")
        self.stream.flush()
        self._shown = self.live

    def close(self) -> None:
        """Erase the live line (the full report follows it)."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
