"""One file lock per workspace serialises snapshots and restores of concurrent threads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from continuation.workspace.errors import WorkspaceBusy
from continuation.workspace.layout import StateLayout

DEFAULT_LOCK_TIMEOUT = 120.0


@contextmanager
def workspace_lock(layout: StateLayout, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    from filelock import FileLock, Timeout  # lazy: keeps `import continuation.workspace` cheap

    layout.ensure()
    lock = FileLock(str(layout.lock_path), timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except Timeout as exc:
        raise WorkspaceBusy(
            f"workspace {layout.state_dir.name} is locked by another snapshot or restore "
            f"(waited {timeout:.0f}s on {layout.lock_path})"
        ) from exc
    try:
        layout.clear_scratch()
        yield
    finally:
        lock.release()
