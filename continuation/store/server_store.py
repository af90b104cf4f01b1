"""A store on a PostgreSQL server, whichever client carries its statements: the driver in this
process (``postgres.PostgresStore``, psycopg) or the local relay holding the server connection
(``relay_client.RelayedStore``, the standard library only).

Everything here is the same on both paths: the statements (``postgres_sql``), the schema check
and migration, the transaction, the hook run's stamps. A connection gives ``execute`` and
``executemany`` (a cursor: ``fetchone``, ``fetchall``, ``description``, ``rowcount``),
``close`` and ``closed``, and raises :class:`ServerUnreachable` when the server is lost.
"""
from __future__ import annotations

from continuation.store import log_store, postgres_sql
from continuation.store.log_store import LogStore, StoreError, StoreVersionError
from continuation.store.schema import SCHEMA_VERSION

MIGRATION_LOCK = 7_246_001  # pg_advisory_xact_lock key: one migrator at a time
SCHEMA_TABLE_EXISTS = "SELECT to_regclass('continuation_schema') IS NOT NULL"
SCHEMA_VERSION_NOW = "SELECT max(version) FROM continuation_schema"


def lost_server(exc) -> bool:
    """Whether a driver error means the server cannot take the write now, so the facts wait
    in the spool (:class:`~continuation.store.log_store.ServerUnreachable`): the connection
    failed or went away (psycopg's ``OperationalError``: the server gone, shutting down, out
    of room or connections, a deadlock), or the server takes no writes at the moment (SQLSTATE
    25006: a standby, or a primary turned read-only by a failover). Any other error is a
    refusal of this write (counted as a lost write by the hook)."""
    import psycopg  # only on the direct path or in the relay, which have it loaded

    return isinstance(exc, psycopg.OperationalError) or getattr(exc, "sqlstate", None) == "25006"


def nul_free(args):
    """PostgreSQL text holds no NUL character (SQLite does): derived columns get U+FFFD; the
    event row keeps the exact text, JSON-escaped."""
    return [a.replace("\x00", "\ufffd") if isinstance(a, str) and "\x00" in a else a
            for a in args]


class ServerTransaction:
    __slots__ = ("conn",)

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute(postgres_sql.begin)
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None and self.conn.closed:
            return False  # the connection is gone: so is the transaction
        self.conn.execute(postgres_sql.rollback if exc_type is not None else postgres_sql.commit)
        return False


class ServerStore(LogStore):
    """A :class:`~continuation.store.interface.Store` on a PostgreSQL server; a subclass sets
    ``conn`` and then calls :meth:`_check_schema`."""

    sql = postgres_sql
    _url: str

    def _check_schema(self, create: bool, version: int | None = None) -> None:
        """Refuse a newer schema, create or migrate an older one. ``version``: the server's,
        when the connection already read it."""
        version = self._version() if version is None else version
        if version > SCHEMA_VERSION:
            self.close()
            raise StoreVersionError(
                f"the store {self.location} has schema version {version}, newer than this "
                f"continuation understands ({SCHEMA_VERSION}); upgrade continuation")
        if version < SCHEMA_VERSION:
            if not create and version == 0:
                self.close()
                raise StoreError(f"no store at {self.location}")
            self._migrate()

    def _version(self) -> int:
        row = self.conn.execute(SCHEMA_TABLE_EXISTS, ()).fetchone()
        if not row[0]:
            return 0
        row = self.conn.execute(SCHEMA_VERSION_NOW, ()).fetchone()
        return int(row[0] or 0)

    def _migrate(self) -> None:
        from continuation.store.schema_postgres import MIGRATIONS

        with self.transaction() as c:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            c.execute("CREATE TABLE IF NOT EXISTS continuation_schema (version BIGINT NOT NULL,"
                      " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())", ())
            version = self._version()  # another host may have migrated while we waited
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number]:
                    c.execute(statement, ())
                c.execute("INSERT INTO continuation_schema (version) VALUES (%s)", (number + 1,))

    @property
    def schema_version(self) -> int:
        return self._version()

    @property
    def location(self) -> str:
        from continuation.store.postgres_url import redact  # `re`: only for a message

        return redact(self._url)

    @property
    def path(self):
        raise StoreError("a PostgreSQL store has no file path (see `location`)")

    def close(self) -> None:
        self.conn.close()

    def leave_open(self) -> None:
        """Nothing to bound: the server's session ends with the process."""

    def _remember_encryption(self, meta) -> None:
        from continuation.store import sealed

        try:
            sealed.remember(getattr(self, "_home", None), meta)
        except OSError:
            pass  # a read-only state home: the spool then follows what it saw last

    def after_reseal(self) -> None:
        for statement in self.sql.after_reseal:
            self.conn.execute(statement, ())

    def transaction(self) -> ServerTransaction:
        return ServerTransaction(self.conn)

    def _stamp_in(self, c, thread_key, seq, etype, data) -> None:
        if log_store.STAMPS is not None:
            origin, n = log_store.STAMPS.mark(etype, data)
            c.execute(self.sql.mark_drained, (origin, thread_key, n))
