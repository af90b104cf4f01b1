"""The local spool: when the server store cannot be reached, facts go to a SQLite store under
the state home (``spool.sqlite3``) instead of being lost, and the next process that reaches
the server drains them into it, in order, exactly once.

Exactly once: each drained event is appended on the server in the same transaction as a row
``(origin, thread_key, local seq)`` in ``spool_drained``, whose primary key refuses a second
drain of it (two hooks draining at once, or a drain killed before the spool was emptied); the
spool's ``origin`` is a random id written into it when it is made. A fact the server's
reducer refuses (it knew more than the spool did) is dropped and counted, like a duplicate.

While the spool is in use, reads see only what was recorded on this machine since the server
was lost: ``stale`` says so (``continuation status`` prints it).
"""
from __future__ import annotations

import os

from continuation.store import log_store
from continuation.store.sqlite import SqliteStore

SPOOL_FILE = "spool.sqlite3"


class SpoolStore(SqliteStore):
    """The local SQLite store standing in for an unreachable server (``stale`` view). It holds
    the spool's file lock while open, so a drain never empties the file under a writer."""

    stale = True
    KEEPS_MARKS = False  # emptied by its drain: the server holds the facts

    def __init__(self, home: str, server: str, reason: str):
        from filelock import FileLock

        self._home = home
        self._lock = FileLock(spool_path(home) + ".lock", timeout=60, mode=0o600)
        self._lock.acquire()
        try:
            super().__init__(spool_path(home))
        except BaseException:
            self._lock.release()
            raise
        self.server, self.reason = server, reason
        self.ensure_spool_origin()

    def encryption(self) -> dict | None:
        """The server's, as last seen (``sealed.REMEMBERED``): a fact spooled while the server is
        away is sealed as the server would seal it."""
        from continuation.store import sealed

        return sealed.parse_meta(sealed.remembered_text(self._home)) or super().encryption()

    def _stamp_in(self, c, thread_key, seq, etype, data) -> None:
        if log_store.STAMPS is not None:
            c.execute(self.sql.keep_spool_stamp,
                      (thread_key, seq, *log_store.STAMPS.mark(etype, data)))

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._lock.release()


def spool_path(home: str) -> str:
    return os.path.join(home, SPOOL_FILE)


def pending(home: str) -> int:
    """How many facts wait in the spool (0 when there is none)."""
    return _count(spool_path(home))


def drain(home: str, server) -> tuple[int, int]:
    """Move the spooled facts into ``server`` (a reachable server store), thread by thread in
    their order; (appended, dropped as duplicates or refused). The spool file goes when
    empty. One drainer at a time per machine (a file lock); the drained-keys table makes it
    exactly once across machines and crashes too."""
    from filelock import FileLock, Timeout

    path = spool_path(home)
    lock = FileLock(path + ".lock", timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        return 0, 0  # another process drains it, or spools into it: a later one drains
    try:
        if not os.path.exists(path):
            return 0, 0
        return _drain_locked(path, server)
    finally:
        lock.release()


def _drain_locked(path: str, server) -> tuple[int, int]:
    spool = SqliteStore(path, create=False)
    spool._codec = server.codec  # sealed as the server seals (see SpoolStore.encryption)
    appended = dropped = 0
    try:
        spool.ensure_spool_origin()  # a spool an older version made has no stamps table
        origin = spool.spool_origin()
        for thread in spool.threads():
            key = server.ensure_thread(
                thread["runtime"], thread["session_id"], workspace_root=thread["workspace_root"],
                forked_from=thread["forked_from"], forked_at_seq=thread["forked_at_seq"],
                name=thread["name"])
            for event in spool.events(thread["thread_key"]):
                stamp = spool.spool_stamp(thread["thread_key"], event["seq"])
                done = server.append_drained(*(stamp or (origin, event["seq"])), key, event)
                appended, dropped = appended + done, dropped + (1 - done)
                spool.forget_event(thread["thread_key"], event["seq"])
            for session in spool.sessions(thread["thread_key"]):
                if session.get("ended_at") is None:
                    server.heartbeat(key, session)
    finally:
        spool.close()
    if _count(path) == 0:  # under the lock: no writer has it open
        for leftover in (path, path + "-wal", path + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass
    return appended, dropped


def _count(path: str) -> int:
    if not os.path.exists(path):
        return 0
    store = SqliteStore(path, create=False)
    try:
        return store.event_count()
    finally:
        store.close()
