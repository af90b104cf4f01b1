"""Is the process that owned a session still running?

A session marker is ``{pid, proc_start, host}``. The hook itself is a short-lived child: the owner
is the runtime (Claude Code, Codex) that launched it, usually through a shell (``sh -c "<hook
command>"``), so :func:`runtime_pid` walks up the parent chain past non-interactive shell and
wrapper processes. A pid is reused by the OS, so a live pid whose start time differs from the
recorded one is a different process: the owner is gone.

Where ``/proc`` is absent (macOS, Windows) the start time is unknown (None) and only "is the pid
alive" is checked; a marker written on another host cannot be checked at all (``unknown``),
until that host has been silent for ``CONTINUATION_REMOTE_SILENCE_S`` seconds (default an hour:
no hook of that session wrote anything since): with a store shared by several machines, host B
then counts host A's session as gone (``dead``), so ``recover`` on B shows the thread A's agent
was running when A died. A long tool call on A writes nothing while it runs, hence the margin.
"""
from __future__ import annotations

import os

PROC = "/proc"

#: programs that only wrap the real parent: a hook run as ``sh -c "continuation hook ..."``
WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "env",
                      "timeout", "nohup", "nice", "stdbuf", "cmd.exe", "cmd", "powershell",
                      "powershell.exe", "pwsh", "pwsh.exe"})
_SHELLS_NEED_C = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox"})
MAX_WALK = 8

ALIVE, DEAD, UNKNOWN = "alive", "dead", "unknown"
REMOTE_SILENCE_S = 3600.0


def remote_silence_s() -> float:
    try:
        return float(os.environ.get("CONTINUATION_REMOTE_SILENCE_S") or REMOTE_SILENCE_S)
    except ValueError:
        return REMOTE_SILENCE_S


def _stat_fields(pid: int) -> tuple[str, list[str]] | None:
    """(comm, fields after the comm) from /proc/<pid>/stat; None without /proc."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    head, _, rest = raw.rpartition(b")")
    comm = head.split(b"(", 1)[-1].decode("utf-8", "replace")
    return comm, rest.decode("ascii", "replace").split()


def proc_start(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (field 22), or None."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    try:
        return fields[1][19]
    except IndexError:
        return None


def parent_pid(pid: int) -> int | None:
    fields = _stat_fields(pid)
    if fields is None:
        return None
    try:
        return int(fields[1][1])
    except (IndexError, ValueError):
        return None


def _argv(pid: int) -> list[str]:
    try:
        with open(f"{PROC}/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _program(pid: int) -> str:
    argv = _argv(pid)
    if argv:
        return os.path.basename(argv[0]).lstrip("-").lower()
    fields = _stat_fields(pid)
    return fields[0].lower() if fields else ""


def is_wrapper(pid: int) -> bool:
    """A non-interactive shell (``sh -c ...``) or a wrapper such as ``env``/``timeout``.

    An interactive shell (no ``-c``) is an owner in its own right: someone typed the hook
    command at a prompt."""
    name = _program(pid)
    if name not in WRAPPERS:
        return False
    if name in _SHELLS_NEED_C:
        return any(a == "-c" or (a.startswith("-") and not a.startswith("--") and "c" in a)
                   for a in _argv(pid)[1:])
    return True


def runtime_pid(start: int | None = None) -> int:
    """The process that owns this hook call: the parent, or above it past wrapper shells."""
    pid = start if start is not None else os.getppid()
    if not os.path.isdir(PROC):
        return pid
    for _ in range(MAX_WALK):
        if pid <= 1 or not is_wrapper(pid):
            return pid
        parent = parent_pid(pid)
        if parent is None or parent <= 1:
            return pid
        pid = parent
    return pid


def _zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return bool(fields and fields[1] and fields[1][0] in ("Z", "X"))


def pid_alive(pid: int) -> bool:
    """Does a process with this pid exist on this host (a zombie counts as gone)?"""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process on Windows
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return not _zombie(pid)


def _windows_pid_alive(pid: int) -> bool:  # pragma: no cover - exercised on Windows only
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def owner_status(marker: dict, *, host: str | None = None) -> str:
    """``alive``, ``dead`` (gone, or its pid now names another process, or its other host has
    been silent too long) or ``unknown`` (recorded on another host)."""
    here = host or hostname()
    if marker.get("host") != here:
        import time

        beat = marker.get("heartbeat")
        if beat is not None and time.time() - float(beat) > remote_silence_s():
            return DEAD  # that host stopped writing long ago (see the module docstring)
        return UNKNOWN
    pid = int(marker.get("pid") or 0)
    if not pid_alive(pid):
        return DEAD
    recorded = marker.get("proc_start")
    if recorded is not None:
        now = proc_start(pid)
        if now is not None and str(now) != str(recorded):
            return DEAD  # the pid was reused by another process
    return ALIVE


def marker(pid: int | None = None) -> dict:
    """The live-session marker of ``pid`` (default: the runtime process behind this hook)."""
    pid = pid or runtime_pid()
    return {"pid": pid, "proc_start": proc_start(pid), "host": hostname()}


def hostname() -> str:
    """This machine's name, as the engine's session marker records it (no socket import: this
    module is on the hook hot path)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return uname().nodename
    return os.environ.get("COMPUTERNAME") or "localhost"
