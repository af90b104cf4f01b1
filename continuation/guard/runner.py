"""Run the guard's check command: a shell command line in the workspace root, with a timeout.

The command runs in a session of its own (POSIX) so that a timeout ends it and everything it
started; its stdin is empty and its output (stdout and stderr together, in order) goes to an
unnamed temporary file, never to the hook's stdout (the runtime reads the hook's answer there).
Only the first and the last part of the output are kept (``output_bytes`` in all): a check that
prints megabytes costs disk for a moment, not the store.

Verdicts: ``pass`` (exit 0), ``fail`` (any other exit), ``fatal`` (an exit code the
configuration lists as fatal), ``timeout`` (still running at the timeout: ended and counted as a
failure), ``error`` (the command could not run at all: the shell's 126 / 127, or no shell). An
``error`` is the configuration's problem, not the agent's: the loop tells the user and does
nothing else.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

#: the shell's "found but not executable" and "not found"
NOT_RUNNABLE = (126, 127)
VERDICTS = ("pass", "fail", "fatal", "timeout", "error")


class CheckRun:
    __slots__ = ("command", "exit_code", "seconds", "output", "output_total", "timed_out",
                 "error", "verdict")

    def __init__(self, command: str, *, exit_code: int | None, seconds: float, output: str,
                 output_total: int, timed_out: bool = False, error: str | None = None,
                 fatal_codes=()):
        self.command = command
        self.exit_code = exit_code
        self.seconds = seconds
        self.output = output
        self.output_total = output_total
        self.timed_out = timed_out
        self.error = error
        if error is not None:
            self.verdict = "error"
        elif timed_out:
            self.verdict = "timeout"
        elif exit_code == 0:
            self.verdict = "pass"
        elif exit_code in NOT_RUNNABLE:
            self.verdict = "error"
            self.error = f"the shell could not run it (exit {exit_code})"
        elif exit_code in fatal_codes:
            self.verdict = "fatal"
        else:
            self.verdict = "fail"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_data(self) -> dict:
        return {"command": self.command, "exit_code": self.exit_code,
                "seconds": round(self.seconds, 3), "output": self.output,
                "output_bytes": self.output_total, "timed_out": self.timed_out,
                "error": self.error, "verdict": self.verdict}


def _bounded_text(fh, total: int, keep: int) -> str:
    """The output, or its first and last ``keep // 2`` bytes with the cut said between."""
    fh.seek(0)
    if total <= keep:
        return fh.read().decode("utf-8", "replace")
    half = keep // 2
    head = fh.read(half).decode("utf-8", "replace")
    fh.seek(total - half)
    tail = fh.read(half).decode("utf-8", "replace")
    return f"{head}\n[... {total - 2 * half} bytes of output left out ...]\n{tail}"


def _end(proc: subprocess.Popen) -> None:
    """End the check and what it started (its process group), then reap it."""
    try:
        if sys.platform != "win32":
            import signal

            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (OSError, ProcessLookupError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_check(command: str, cwd: str, *, timeout: float, output_bytes: int = 4000,
              fatal_codes=()) -> CheckRun:
    import tempfile

    env = dict(os.environ, CONTINUATION_GUARD="1")
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(command, shell=True, cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=sys.platform != "win32")
        except OSError as exc:
            return CheckRun(command, exit_code=None, seconds=time.monotonic() - started,
                            output="", output_total=0, error=f"cannot start: {exc}")
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _end(proc)
            code = None
        except BaseException:
            _end(proc)
            raise
        seconds = time.monotonic() - started
        total = out.seek(0, os.SEEK_END)
        text = _bounded_text(out, total, output_bytes)
    return CheckRun(command, exit_code=code, seconds=seconds, output=text, output_total=total,
                    timed_out=timed_out, fatal_codes=tuple(fatal_codes))
