"""A progress line on stderr for a long step a command waits on (a first snapshot of many
files): what the step is doing and for how long.

The code doing the work says what it is at (:func:`step`; nothing happens when no command
listens, so the hooks pay one global read). A command that may wait long opens a
:class:`StepLine`: after ``AFTER_SECONDS`` it shows ``continuation checkpoint: storing 6,400
new and changed files in the snapshot, 3 s`` on stderr, rewritten in place every
``EVERY_SECONDS``, and ends it with a newline when the command is done. Only when stderr is a
terminal (as git's progress): a pipe or a log gets nothing. A step is one long call (git
hashing thousands of files), so the line is redrawn by a timer thread, not by the work.
"""
from __future__ import annotations

import os
import sys
import time

AFTER_SECONDS = 2.0
EVERY_SECONDS = 0.5

_listener = None


def step(what: str) -> None:
    """The work is now at ``what`` (shown by an open :class:`StepLine`, else nothing)."""
    if _listener is not None:
        _listener(what)


def _after() -> float:
    try:
        return max(0.0, float(os.environ.get("CONTINUATION_PROGRESS_AFTER", AFTER_SECONDS)))
    except ValueError:
        return AFTER_SECONDS


class StepLine:
    """``with StepLine("continuation checkpoint"):`` shows the steps of a long wait."""

    def __init__(self, label: str, *, stream=None, enabled: bool | None = None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            try:
                enabled = bool(self.stream.isatty())
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = enabled
        self.what = "working"
        self.shown = False
        self._width = 0
        self._stop = None
        self._thread = None

    def __enter__(self) -> "StepLine":
        global _listener
        if not self.enabled:
            return self
        import threading

        self.start = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        _listener = self._set
        self._thread = threading.Thread(target=self._run, name="progress-line", daemon=True)
        self._thread.start()
        return self

    def _set(self, what: str) -> None:
        self.what = what

    def _run(self) -> None:
        if self._stop.wait(_after()):
            return
        while True:
            self._draw()
            if self._stop.wait(EVERY_SECONDS):
                return

    def _draw(self, final: str = "") -> None:
        with self._lock:
            line = f"{self.label}: {final or self.what}, {time.monotonic() - self.start:.0f} s"
            try:
                self.stream.write("\r" + line + " " * max(0, self._width - len(line))
                                  + ("\n" if final else ""))
                self.stream.flush()
            except (OSError, ValueError):
                self._stop.set()
                return
            self._width = 0 if final else len(line)
            self.shown = True

    def __exit__(self, *exc) -> None:
        global _listener
        if not self.enabled:
            return
        _listener = None
        self._stop.set()
        self._thread.join()
        if self.shown:
            self._draw("interrupted" if exc[0] is not None else "done")
