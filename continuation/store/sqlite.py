"""The embedded SQLite store: the log and its derived tables (``log_store``) in one file.

Durability contract (docs/design.md, "Store"): WAL with ``synchronous=FULL``; every append runs in
``BEGIN IMMEDIATE`` with a busy timeout, so concurrent hook processes serialise instead of
failing; the event row and every table derived from it are written in the same transaction;
the derived lifecycle tables are produced by the same reducer that a full replay uses.
"""
from __future__ import annotations

import os
import sqlite3
import time

from continuation.store import marks, sealed, sqlite_sql
from continuation.store.log_store import LogStore, StoreError, StoreVersionError
from continuation.store.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_S = 60.0
#: path -> inode of the store file this process opened (a damaged one is set aside only if
#: it is still the file there: another process may have set it aside and made a new one)
OPENED: dict[str, int] = {}
#: how large the write-ahead log may grow in a store that processes leave open (a hook ends
#: with ``os._exit``) before the process leaving it folds it into the database: see
#: :meth:`SqliteStore.leave_open`
WAL_FOLD_BYTES = 1 << 20


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error). A class, not
    ``contextlib.contextmanager``: contextlib's import is a visible share of a hook run."""

    __slots__ = ("conn", "store")

    def __init__(self, conn: sqlite3.Connection, store: "SqliteStore"):
        self.conn, self.store = conn, store

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> bool:
        acknowledged, self.store._acknowledged = self.store._acknowledged, {}
        if exc_type is not None:
            self.conn.execute("ROLLBACK")
            return False
        if acknowledged:  # inside the write lock: writers never write them out of order
            for key, seq in acknowledged.items():
                marks.write(self.store._marks, key, seq)
        self.conn.execute("COMMIT")
        return False


def file_integrity(path, mode: str) -> tuple[int, list[str]]:
    """(schema version, ``integrity_check`` lines) of the SQLite file at ``path``, opened with
    the URI ``mode`` (``mode=ro``, ``immutable=1``) by a connection of its own: doctor reads a
    store file it may not be able to open as a store."""
    conn = sqlite3.connect(f"file:{path}?{mode}", uri=True, timeout=10)
    try:
        return (conn.execute("PRAGMA user_version").fetchone()[0],
                [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()])
    finally:
        conn.close()


class SqliteStore(LogStore):
    sql = sqlite_sql
    #: keeps acknowledged high-water marks (``marks``); a spool, emptied by its drain, does not
    KEEPS_MARKS = True
    _acknowledged: dict = {}

    def __init__(self, path, *, create: bool = True):
        self._path = os.fspath(path)
        self._marks, self._acknowledged = marks.folder_of(self._path), {}
        try:
            found = os.stat(self._path)
            size = found.st_size
            OPENED[self._path] = found.st_ino  # the file a damage found later is in
        except FileNotFoundError:
            if not create:
                raise StoreError(f"no store at {self._path}") from None
            self._create()
            size = None
        if size == 0 and create:
            # A store is born whole (see _create), so an empty one was truncated: its events
            # are gone. SQLite would silently start afresh; say so, and remember it.
            from continuation.host import lost_writes

            lost_writes.note_store_reset(os.path.dirname(self._path) or ".", self._path,
                                         "found truncated to 0 bytes")
        home = os.path.dirname(self._path) or "."
        if not os.path.exists(os.path.join(home, "lost-writes.json")):
            from continuation.host import lost_writes  # allocated while there is room: see lost_writes

            lost_writes.ensure(home)
        try:
            self.conn = sqlite3.connect(
                self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
            self.conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            from continuation.store.damage import StoreDamaged, damage_of

            detail = damage_of(exc)
            if detail is not None:
                raise StoreDamaged(self._path, detail) from None
            raise StoreError(
                f"cannot read the store {self.path}: {exc} (run `continuation doctor`)"
            ) from None
        if version > SCHEMA_VERSION:
            self.conn.close()
            raise StoreVersionError(
                f"the store {self.path} has schema version {version}, newer than this "
                f"continuation understands ({SCHEMA_VERSION}); upgrade continuation"
            )
        self.conn.execute("PRAGMA synchronous=FULL")
        if version < SCHEMA_VERSION:
            self._migrate()

    # -- setup -------------------------------------------------------------------------------
    def _create(self) -> None:
        """Build the empty store beside its place, then link it in: a store file is never seen
        half-made (0 bytes), so an empty one later means it was truncated. Two processes
        creating it at once: the first link wins, the other's copy is dropped."""
        from continuation.host.paths import ensure_private_dir

        folder = os.path.dirname(self._path) or "."
        ensure_private_dir(folder)
        tmp = f"{self._path}.{os.getpid()}.{time.time_ns()}.new"
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                for statement in ";".join(MIGRATIONS[:SCHEMA_VERSION]).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                remembered = sealed.remembered_text(folder)
                if remembered:  # a store made anew in an encrypted state home seals too
                    conn.execute(self.sql.store_meta_put, (sealed.META_KEY, remembered))
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            finally:
                conn.close()  # checkpoints the WAL into the file and removes it
            try:
                os.link(tmp, self._path)
            except FileExistsError:
                pass  # another process made it first
            except OSError:  # no hard links here: rename (which refuses to replace on Windows)
                if not os.path.exists(self._path):
                    os.rename(tmp, self._path)
        finally:
            for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass

    def _migrate(self) -> None:
        if self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self.conn.execute("PRAGMA journal_mode=WAL")
        with self.transaction():
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def after_reseal(self) -> None:
        for statement in self.sql.after_reseal:
            self.conn.execute(statement).fetchall()

    def _remember_encryption(self, meta) -> None:
        try:
            sealed.remember(os.path.dirname(self._path) or ".", meta)
        except OSError:
            pass  # a read-only state home

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def leave_open(self) -> None:
        """This process ends now without closing the store (``hooks.end_process``): every
        commit is durable already, and a close (the last connection checkpoints the WAL into
        the database and deletes it: 5 fdatasync calls) is skipped. But the WAL must stay
        bounded: a process opening the store alone rebuilds the WAL's index by reading every
        frame, and the index it rebuilds has lost what was already checkpointed, so SQLite's
        own auto-checkpoint can never restart the log: left alone it grows by every commit
        (~16 pages per tool call), each hook reading more of it and, past 1,000 pages,
        copying all of it back into the database at each commit. So once the WAL passes
        ``WAL_FOLD_BYTES`` it is checkpointed and truncated here; without waiting: when
        another connection is busy this is only a partial checkpoint, and a later process
        folds it."""
        try:
            size = os.stat(self._path + "-wal").st_size
        except OSError:
            return
        if size < WAL_FOLD_BYTES:
            return
        try:
            self.conn.execute("PRAGMA busy_timeout=0")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass  # committed facts are safe in the WAL: the next process can fold it

    @property
    def path(self):
        from pathlib import Path

        return Path(self._path)

    @property
    def location(self) -> str:
        return self._path

    def transaction(self) -> _Transaction:
        """``BEGIN IMMEDIATE``: take the write lock up front, so two writers never deadlock
        on a read-to-write upgrade; the busy timeout makes the second one wait."""
        return _Transaction(self.conn, self)

    def _acknowledge_in(self, thread_key: str, seq: int) -> None:
        if self.KEEPS_MARKS:
            self._acknowledged[thread_key] = seq

    def acknowledged_marks(self) -> dict[str, int]:
        """Thread key -> the last seq a commit acknowledged (see ``store.marks``)."""
        return marks.read_all(self._marks)

    def delete_thread_rows(self, thread_key: str) -> dict[str, int]:
        deleted = super().delete_thread_rows(thread_key)
        marks.forget(self._marks, thread_key)
        return deleted
