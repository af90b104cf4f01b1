"""Atomic file replacement: temp file in the same folder, fsync, rename, fsync of the folder."""
from __future__ import annotations

import os

from continuation.host import faults
from continuation.host.paths import ensure_private_dir


def fsync_dir(folder) -> None:
    """Make a rename durable. Skipped where the OS cannot open a folder (Windows)."""
    if os.name == "nt":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _create_temp(folder: str, name: str) -> tuple[int, str]:
    """A new private file ``.<name>.<random>.tmp`` in ``folder`` (what ``tempfile.mkstemp``
    does, without importing ``tempfile``: with ``shutil``, ``random`` and the compression
    modules it pulls in, that import is a tenth of a SessionStart answer)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {name} in {folder}")


def atomic_write(path, data: bytes, mode: int | None = 0o600,
                 fault_points: str | None = "file", durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically and durably. ``mode`` None keeps the temp
    file's private default; ``fault_points`` names the kill points this write passes
    (``<name>.mid_write``, ``.before_rename``, ``.before_dir_fsync``), None for none.
    ``durable`` False: atomic but not synced (a file derived from the store, which a crash may
    leave empty or old and which says so itself, e.g. by its hash): no fsync of the file or
    the folder, the caller syncs the folder once after several."""
    def fault(step: str) -> None:
        if fault_points:
            faults.point(f"{fault_points}.{step}")

    path = os.fspath(path)  # os.path, not pathlib: SessionStart writes through here
    folder, name = os.path.split(os.path.abspath(path))
    ensure_private_dir(folder)
    fd, tmp = _create_temp(folder, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            fh.flush()
            fault("mid_write")
            fh.write(data[half:])
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if mode is not None:
            try:
                os.chmod(tmp, mode)
            except OSError:
                pass  # best effort (Windows)
        fault("before_rename")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fault("before_dir_fsync")
    if durable:
        fsync_dir(folder)


def remove_stale_temps(folder) -> int:
    """Temp files left by a process killed mid-write (never the committed files); ``folder``
    is a ``pathlib.Path``."""
    removed = 0
    if folder.is_dir():
        for tmp in folder.glob(".*.tmp"):
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                pass
    return removed
