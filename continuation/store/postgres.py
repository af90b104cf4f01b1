"""The PostgreSQL backend (``CONTINUATION_STORE=postgresql://...``): every machine of a team
(CI jobs, containers, a laptop) records into one server, so the facts outlive the machine.

Same tables, same reducer and the same logic as the SQLite store (``log_store``), on its own
statements (``postgres_sql``) and schema (``schema_postgres``); what a server store is whatever
client carries its statements is ``server_store``. What the server adds: writers on several
hosts serialise per thread on a row lock (``SELECT ... FOR UPDATE`` on the thread row), not on
a file lock; the unique keys (thread, seq), (thread, input id), (thread, call id) and (thread,
generation) refuse a second copy whatever happens. The schema is created and migrated by the
tool (``continuation_schema.version``, under an advisory lock) and a newer server schema is
refused, as with SQLite.

This module is the direct path: psycopg in this process. A hook reaches the server through
the local relay instead when one runs (``relay_client``), which uses this module itself.
"""
from __future__ import annotations

import psycopg

from continuation.store.log_store import ServerUnreachable
from continuation.store.postgres_url import redact
from continuation.store.server_store import ServerStore, ServerTransaction, lost_server, nul_free

__all__ = ["CONNECT_TIMEOUT_S", "PostgresStore", "ServerUnreachable", "connect", "redact"]

CONNECT_TIMEOUT_S = 5
_Transaction = ServerTransaction  # the name the fault tests patch


class _Connection:
    """The two DB-API calls the store makes; a lost server is :class:`ServerUnreachable`."""

    __slots__ = ("raw",)

    def __init__(self, raw: psycopg.Connection):
        self.raw = raw

    def execute(self, sql: str, args=()):
        try:
            return self.raw.execute(sql, nul_free(args))
        except psycopg.Error as exc:
            if lost_server(exc):  # the server went away mid-run, or takes no writes now
                raise ServerUnreachable(f"lost the store server: {first_line(exc)}") from None
            raise

    def executemany(self, sql: str, rows):
        try:
            with self.raw.cursor() as cur:
                cur.executemany(sql, [nul_free(r) for r in rows])
                return cur
        except psycopg.Error as exc:
            if lost_server(exc):
                raise ServerUnreachable(f"lost the store server: {first_line(exc)}") from None
            raise

    @property
    def closed(self) -> bool:
        return self.raw.closed

    def close(self) -> None:
        self.raw.close()


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def connect(url: str) -> psycopg.Connection:
    """An autocommit connection (the store sends its own BEGIN); a hook must not hang on a
    dead server (then it spools): 5 s unless the URL says. :class:`ServerUnreachable` when
    the server cannot be reached."""
    try:
        extra = {} if "connect_timeout=" in url else {"connect_timeout": CONNECT_TIMEOUT_S}
        return psycopg.connect(url, autocommit=True, **extra)
    except psycopg.Error as exc:
        raise ServerUnreachable(f"cannot reach the store {redact(url)}: "
                                f"{first_line(exc)}") from None


class PostgresStore(ServerStore):
    """A :class:`~continuation.store.interface.Store` on a PostgreSQL server, through psycopg
    in this process."""

    def __init__(self, url: str, *, home: str | None = None, create: bool = True):
        self._url, self._home = url, home
        self.conn = _Connection(connect(url))
        self._check_schema(create)
