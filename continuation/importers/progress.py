"""A progress line on stderr for a long import: how far reading and writing have got.

"Long": running for more than ``AFTER_SECONDS`` (2 s; ``CONTINUATION_IMPORT_PROGRESS_AFTER``
overrides it, in seconds). Nothing is shown before that, so a short import prints exactly what
it did before. Shown by default only when stderr is a terminal (like ``git``): the line is then
rewritten in place (``\\r``) at most every ``TTY_EVERY`` seconds and finished with a newline.
``continuation import --progress`` shows it when stderr is not a terminal too, one
newline-terminated line every ``PIPE_EVERY`` seconds (a log stays readable);
``--no-progress`` never shows it. stdout is never touched: the report (and ``--json``) stay
the same.
"""
from __future__ import annotations

import os
import sys
import time

AFTER_SECONDS = 2.0
TTY_EVERY = 0.5
PIPE_EVERY = 5.0
_MB = 1024 * 1024


def _after() -> float:
    try:
        return max(0.0, float(os.environ.get("CONTINUATION_IMPORT_PROGRESS_AFTER", AFTER_SECONDS)))
    except ValueError:
        return AFTER_SECONDS


class Progress:
    """``enabled``: ``None`` decides by whether ``stream`` is a terminal."""

    def __init__(self, total_bytes: int | None, *, stream=None, enabled: bool | None = None,
                 label: str = "continuation import"):
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self.enabled = self.tty if enabled is None else enabled
        self.total = total_bytes or 0
        self.label = label
        self.start = time.monotonic()
        self.after = _after()
        self.every = TTY_EVERY if self.tty else PIPE_EVERY
        self._next = self.start + self.after
        self.shown = False
        self._width = 0

    def reading(self, done_bytes: int) -> None:
        if self.enabled and time.monotonic() >= self._next:
            pct = f" ({100 * done_bytes // self.total}%)" if self.total else ""
            self._show(f"reading {done_bytes / _MB:.0f}/{self.total / _MB:.0f} MB{pct}")

    def writing(self, done: int, total: int) -> None:
        if self.enabled and time.monotonic() >= self._next:
            pct = f" ({100 * done // total}%)" if total else ""
            self._show(f"writing events: {done:,}/{total:,} ops{pct}")

    def done(self, bytes_read: int, events: int) -> None:
        """The closing line, only when a progress line was shown (a long import)."""
        if self.shown:
            self._show(f"done: {bytes_read / _MB:.0f} MB read, {events:,} events written",
                       final=True)

    def end_line(self) -> None:
        """An import that stopped early (an error, Ctrl-C): a terminal's rewritten line ends,
        so what is printed next starts on a line of its own."""
        if self.tty and self.shown and self._width:
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._width = 0

    def _show(self, what: str, *, final: bool = False) -> None:
        now = time.monotonic()
        self._next = now + self.every
        line = f"{self.label}: {what}, {now - self.start:.0f} s"
        try:
            if self.tty:
                pad = " " * max(0, self._width - len(line))
                self.stream.write("\r" + line + pad + ("\n" if final else ""))
                self._width = 0 if final else len(line)
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # stderr closed or gone: the import itself goes on
            return
        self.shown = True
