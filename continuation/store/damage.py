"""A damaged SQLite store: telling damage from other failures, and setting the file aside.

Damage is what only a changed file explains: SQLite's "malformed" and "not a database", a
schema it cannot parse, stored text that is not UTF-8, a stored row that is not the JSON the
store wrote. A full disk, a lock held too long or a read-only folder are not damage (the store
is whole; the write failed). A damaged file is never deleted: it is renamed beside the store
(``store.sqlite3.damaged-<UTC time>``, with its write-ahead log), a new store takes the new
facts, and ``continuation doctor --salvage`` copies every readable event of it back.
"""
from __future__ import annotations

import os
import sqlite3
import time

from continuation.store.log_store import StoreError

SET_ASIDE_MARK = ".damaged-"


class StoreDamaged(StoreError):
    """The store's file is damaged; ``detail`` says how."""

    def __init__(self, path: str, detail: str):
        shown = detail if len(detail) <= 160 else detail[:157] + "..."
        super().__init__(f"the store {path} is damaged ({shown}); run `continuation doctor`"
                         " (`continuation doctor --salvage` recovers its readable events into"
                         " a new store)")
        self.path, self.detail = path, detail


def _in_store_code(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if "/continuation/store/" in name or name.endswith("/statemachine/records.py"):
            return True
        tb = tb.tb_next
    return False


def damage_of(exc: BaseException) -> str | None:
    """How ``exc`` says the store's file is damaged, or None when it does not."""
    if isinstance(exc, StoreDamaged):
        return exc.detail
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        return text if ("decode" in text or "malformed" in text) else None
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
            exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        return str(exc)  # malformed image or schema, not a database
    if isinstance(exc, UnicodeDecodeError) and _in_store_code(exc):
        return f"stored text is not UTF-8: {exc}"
    if type(exc).__name__ == "JSONDecodeError" and _in_store_code(exc):
        return f"a stored row is not JSON: {exc}"
    return None


def set_aside(path: str, detail: str, *, seen_inode: int | None = None) -> str | None:
    """Rename the damaged store ``path`` (and its write-ahead log and index) to a name of its
    own beside it; the name, or None when another process set it aside first (``path`` is no
    longer the file of inode ``seen_inode``) or there is nothing to move."""
    from filelock import FileLock

    with FileLock(path + ".aside.lock", timeout=60, mode=0o600):
        try:
            inode = os.stat(path).st_ino
        except FileNotFoundError:
            return None
        if seen_inode is not None and inode != seen_inode:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = f"{path}{SET_ASIDE_MARK}{stamp}-{os.getpid()}"
        for suffix in ("-wal", "-shm", "-marks", ""):  # the file last: it marks it done
            try:
                os.rename(path + suffix, target + suffix)
            except FileNotFoundError:
                pass
        with open(target + ".why", "w", encoding="utf-8") as fh:
            fh.write(detail + "\n")
        return target


def set_aside_copies(home: str, store_file_name: str) -> list[str]:
    """The damaged stores set aside in ``home``, oldest first."""
    prefix = store_file_name + SET_ASIDE_MARK
    try:
        names = os.listdir(home)
    except OSError:
        return []
    return sorted(os.path.join(home, n) for n in names
                  if n.startswith(prefix)
                  and not n.endswith(("-wal", "-shm", "-marks", ".why", ".salvaged")))
