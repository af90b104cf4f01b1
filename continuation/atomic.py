"""Atomic file replacement: temp file in the same folder, fsync, rename, fsync of the folder."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from . import faults
from .paths import ensure_private_dir


def fsync_dir(folder: Path) -> None:
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


def atomic_write(path: Path, data: bytes, mode: int | None = 0o600,
                 fault_points: str | None = "capsule") -> None:
    """Replace ``path`` with ``data`` atomically and durably. ``mode`` None keeps the temp
    file's private default; ``fault_points`` names the kill points this write passes
    (``<name>.mid_write``, ``.before_rename``, ``.before_dir_fsync``), None for none."""
    def fault(step: str) -> None:
        if fault_points:
            faults.point(f"{fault_points}.{step}")

    path = Path(path)
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            fh.flush()
            fault("mid_write")
            fh.write(data[half:])
            fh.flush()
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
    fsync_dir(path.parent)


def remove_stale_temps(folder: Path) -> int:
    """Temp files left by a process killed mid-write (never the committed files)."""
    removed = 0
    if folder.is_dir():
        for tmp in folder.glob(".*.tmp"):
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                pass
    return removed
