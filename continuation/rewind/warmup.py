"""Get the new checkpoint's capsule build ready while a rewind waits for git.

A rewind ends by committing a checkpoint, whose capsule needs the capsule modules (pydantic
and its model schemas, which ``defer_build`` leaves to first use) and, for a thread whose
capsules are counted exactly, the tokenizer: together the largest part of a rewind's own
Python time. Before that it mostly waits for git processes (the preview's status, the safety
snapshot, the restore), which release the interpreter. :func:`start` does the imports and
builds the schemas in a daemon thread during that wait (the tokenizer loads in its own); the
first use of a capsule model in the rewind's own thread calls :func:`wait` first. Nothing here
changes state.
"""
from __future__ import annotations

import threading

#: the modules a checkpoint commit imports (capsule build, rendering, notices, source gathering)
MODULES = ("capsule.source", "capsule.model", "capsule.budget", "capsule.render",
           "capsule.tokens", "continuation.capsule_source", "continuation.recovery.notices")


_worker: threading.Thread | None = None


def start(thread) -> threading.Thread:
    """Start warming up for ``thread``'s next checkpoint; returns the daemon thread that
    imports and builds the schemas (the tokenizer loads in its own, when the thread's capsules
    are counted exactly: ``checkpoints.prefetch_tokenizer``)."""
    from .. import checkpoints

    global _worker
    checkpoints.prefetch_tokenizer(thread)
    if _worker is None:
        _worker = threading.Thread(target=_warm, daemon=True, name="continuation-rewind-warmup")
        _worker.start()
    return _worker


def wait() -> None:
    """Let the warm-up finish before this thread imports a capsule module itself: two threads
    importing modules that import each other can deadlock (Python raises in one of them)."""
    if _worker is not None:
        _worker.join()


def _warm() -> None:
    try:
        import importlib

        for name in MODULES:
            importlib.import_module(name)
        from capsule.model import build_schemas

        build_schemas()
    except Exception:  # noqa: BLE001 - the build imports and builds again, and reports
        pass
