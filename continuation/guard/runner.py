"""Run the guard's check command: a shell command line in the workspace root, with a timeout.

On POSIX the command runs under a small watchdog process (:data:`WATCHDOG`) that leads a session
of its own: it ends the check and everything the check started at the timeout, when the hook
that started it is gone (a runtime ends a hook past its own timeout, with SIGKILL that no handler
sees: the check must not run on unbounded), and, once the check's shell has exited, whatever it
left running in the background (a daemon a test forked, a server it never stopped: one more at
every run otherwise). Only a process that leaves the session itself (``setsid``) escapes. Its
stdin is empty and its output (stdout and stderr together, in order) goes to an unnamed
temporary file, never to the hook's stdout (the runtime reads the hook's answer there).
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


#: the watchdog (``python -I -S -c WATCHDOG TIMEOUT OUT_FD COMMAND``): it forks the shell with
#: the output file as its stdout and stderr, waits for it (woken by SIGCHLD, looking every
#: quarter second whether its parent is still there), writes ``exit N``, ``signal N``,
#: ``timeout`` or ``orphaned`` to its own stdout (a pipe to the runner), then ends its process
#: group: what the check left behind, and itself
WATCHDOG = r"""
import os, signal, sys, time
timeout, out, command = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
parent = os.getppid()
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
pid = os.fork()
if pid == 0:
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.execv("/bin/sh", ["/bin/sh", "-c", command])
    finally:
        os._exit(127)
end = time.monotonic() + timeout
said = None
while said is None:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        said = ("exit %d" % os.WEXITSTATUS(status) if os.WIFEXITED(status)
                else "signal %d" % os.WTERMSIG(status))
    elif os.getppid() != parent:
        said = "orphaned"
    elif time.monotonic() >= end:
        said = "timeout"
    else:
        signal.sigtimedwait([signal.SIGCHLD], max(0.001, min(0.25, end - time.monotonic())))
try:
    os.write(1, said.encode())
except OSError:  # the runner is gone (orphaned): nobody reads it
    pass
os.killpg(0, signal.SIGKILL)
"""
#: seconds the runner waits for the watchdog beyond the check's timeout before ending it itself
WATCHDOG_GRACE_S = 5.0


def run_check(command: str, cwd: str, *, timeout: float, output_bytes: int = 4000,
              fatal_codes=()) -> CheckRun:
    import tempfile

    # No bytecode cache from the check: a source rewritten within the same second at the same
    # size (a wrong line fixed after a rewind) would be judged by the cached wrong one, and the
    # check leaves no files of its own in the workspace it judges.
    env = dict(os.environ, CONTINUATION_GUARD="1", PYTHONDONTWRITEBYTECODE="1")
    started = time.monotonic()
    watched = sys.platform != "win32" and bool(sys.executable) and os.path.exists("/bin/sh")
    with tempfile.TemporaryFile() as out:
        try:
            if watched:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", WATCHDOG, repr(float(timeout)),
                     str(out.fileno()), command], cwd=cwd, stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=out, env=env, pass_fds=(out.fileno(),),
                    start_new_session=True)
            else:
                proc = subprocess.Popen(command, shell=True, cwd=cwd, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=sys.platform != "win32")
        except OSError as exc:
            return CheckRun(command, exit_code=None, seconds=time.monotonic() - started,
                            output="", output_total=0, error=f"cannot start: {exc}")
        try:
            code, timed_out, error = (_watched(proc, timeout) if watched
                                      else _waited(proc, timeout))
        except BaseException:
            _end(proc)
            raise
        seconds = time.monotonic() - started
        total = out.seek(0, os.SEEK_END)
        text = _bounded_text(out, total, output_bytes)
    return CheckRun(command, exit_code=code, seconds=seconds, output=text, output_total=total,
                    timed_out=timed_out, error=error, fatal_codes=tuple(fatal_codes))


def _waited(proc: subprocess.Popen, timeout: float) -> tuple[int | None, bool, str | None]:
    try:
        return proc.wait(timeout=timeout), False, None
    except subprocess.TimeoutExpired:
        _end(proc)
        return None, True, None


def _watched(proc: subprocess.Popen, timeout: float) -> tuple[int | None, bool, str | None]:
    """(exit code, timed out, error) from the watchdog's word: a check ended by a signal has
    the negative signal number as its code, as ``subprocess`` says it."""
    try:
        said, _ = proc.communicate(timeout=timeout + WATCHDOG_GRACE_S)
    except subprocess.TimeoutExpired:
        _end(proc)
        return None, True, None
    word, _, number = said.decode("ascii", "replace").partition(" ")
    if word == "exit" and number.isdigit():
        return int(number), False, None
    if word == "signal" and number.isdigit():
        return -int(number), False, None
    if word == "timeout":
        return None, True, None
    return None, False, f"the check's watchdog ended without a result ({said[:100]!r})"
