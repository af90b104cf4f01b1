"""Run a subprocess with a hard time limit and kill its whole process group on expiry.

Agent CLIs start children (shells, hook commands, node helpers); a plain
``subprocess.run(timeout=...)`` kills only the direct child and can leave the
rest running, so each command here gets its own process group (a new session
on POSIX, ``CREATE_NEW_PROCESS_GROUP`` on Windows) and the group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Finished:
    args: list[str]
    returncode: int | None  # None: killed by the time limit
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def tail(self, chars: int = 2000) -> str:
        return f"exit={self.returncode} after {self.seconds:.1f}s\n--- stdout\n{self.stdout[-chars:]}\n--- stderr\n{self.stderr[-chars:]}"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def run_bounded(
    args: Sequence[str | os.PathLike[str]],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
) -> Finished:
    """Run ``args``; return its output, or ``returncode=None`` if it was killed at ``timeout`` s."""
    argv = [str(a) for a in args]
    kwargs: dict = {}
    if os.name == "nt":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        **kwargs,
    )
    try:
        out, err = proc.communicate(stdin_text, timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        code = None
    finally:
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait(timeout=5)
    # Children left behind in the group (a hook still running) go too.
    if os.name != "nt":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass
    return Finished(argv, code, out or "", err or "", time.monotonic() - start)
