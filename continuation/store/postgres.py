"""The PostgreSQL backend (``CONTINUATION_STORE=postgresql://...``): every machine of a team
(CI jobs, containers, a laptop) records into one server, so the facts outlive the machine.

Same tables, same reducer and the same logic as the SQLite store (``log_store``), on its own
statements (``postgres_sql``) and schema (``schema_postgres``). What the server adds: writers on several hosts serialise per thread on a row lock (``SELECT ... FOR
UPDATE`` on the thread row), not on a file lock; the unique keys (thread, seq), (thread,
input id), (thread, call id) and (thread, generation) refuse a second copy whatever happens.
The schema is created and migrated by the tool (``continuation_schema.version``, under an
advisory lock) and a newer server schema is refused, as with SQLite.
"""
from __future__ import annotations


import psycopg

from continuation.store import log_store, postgres_sql
from continuation.store.log_store import LogStore, ServerUnreachable, StoreError, StoreVersionError
from continuation.store.postgres_url import redact
from continuation.store.schema import SCHEMA_VERSION
from continuation.store.schema_postgres import MIGRATIONS

CONNECT_TIMEOUT_S = 5
_MIGRATION_LOCK = 7_246_001  # pg_advisory_xact_lock key: one migrator at a time


class _Connection:
    """The two DB-API calls the store makes; a lost server is :class:`ServerUnreachable`."""

    __slots__ = ("raw",)

    def __init__(self, raw: psycopg.Connection):
        self.raw = raw

    def execute(self, sql: str, args=()):
        try:
            return self.raw.execute(sql, _params(args))
        except psycopg.OperationalError as exc:  # the server went away mid-run
            raise ServerUnreachable(f"lost the store server: {_first_line(exc)}") from None

    def executemany(self, sql: str, rows):
        try:
            with self.raw.cursor() as cur:
                cur.executemany(sql, [_params(r) for r in rows])
                return cur
        except psycopg.OperationalError as exc:
            raise ServerUnreachable(f"lost the store server: {_first_line(exc)}") from None

    def close(self) -> None:
        self.raw.close()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _params(args):
    # PostgreSQL text holds no NUL character (SQLite does): derived columns get U+FFFD; the
    # event row keeps the exact text, JSON-escaped
    return [a.replace("\x00", "\ufffd") if isinstance(a, str) and "\x00" in a else a
            for a in args]


class _Transaction:
    __slots__ = ("conn",)

    def __init__(self, conn: _Connection):
        self.conn = conn

    def __enter__(self) -> _Connection:
        self.conn.execute(postgres_sql.begin)
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None and self.conn.raw.closed:
            return False  # the connection is gone: so is the transaction
        self.conn.execute(postgres_sql.rollback if exc_type is not None else postgres_sql.commit)
        return False


class PostgresStore(LogStore):
    """A :class:`~continuation.store.interface.Store` on a PostgreSQL server."""

    sql = postgres_sql

    def __init__(self, url: str, *, home: str | None = None, create: bool = True):
        self._url, self._home = url, home
        try:
            # a hook must not hang on a dead server (then it spools): 5 s unless the URL says
            extra = {} if "connect_timeout=" in url else {"connect_timeout": CONNECT_TIMEOUT_S}
            raw = psycopg.connect(url, autocommit=True, **extra)
        except psycopg.Error as exc:
            raise ServerUnreachable(f"cannot reach the store {redact(url)}: "
                                    f"{_first_line(exc)}") from None
        self.conn = _Connection(raw)
        version = self._version()
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
        row = self.conn.raw.execute(
            "SELECT to_regclass('continuation_schema') IS NOT NULL").fetchone()
        if not row[0]:
            return 0
        row = self.conn.raw.execute("SELECT max(version) FROM continuation_schema").fetchone()
        return int(row[0] or 0)

    def _migrate(self) -> None:
        raw = self.conn.raw
        with self.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            raw.execute("CREATE TABLE IF NOT EXISTS continuation_schema (version BIGINT NOT NULL,"
                        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            version = self._version()  # another host may have migrated while we waited
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number]:
                    raw.execute(statement)
                raw.execute("INSERT INTO continuation_schema (version) VALUES (%s)",
                            (number + 1,))

    @property
    def schema_version(self) -> int:
        return self._version()

    @property
    def location(self) -> str:
        return redact(self._url)

    @property
    def path(self):
        raise StoreError("a PostgreSQL store has no file path (see `location`)")

    def close(self) -> None:
        self.conn.close()

    def leave_open(self) -> None:
        """Nothing to bound: the server's session ends with the process."""

    def transaction(self) -> _Transaction:
        return _Transaction(self.conn)

    def _stamp_in(self, c, thread_key, seq, etype, data) -> None:
        if log_store.STAMPS is not None:
            origin, n = log_store.STAMPS.mark(etype, data)
            c.execute(self.sql.mark_drained, (origin, thread_key, n))
