"""Which backend a state home uses: ``CONTINUATION_STORE``.

Unset or ``sqlite``: the embedded SQLite file under the state home (the default).
``postgresql://...`` (or ``postgres://``): a PostgreSQL server shared by every machine of a
team (``pip install 'continuation-engine[postgres]'``). Kept light: the hook hot path calls
this, so nothing here imports a database driver until that backend is chosen.
"""
from __future__ import annotations

import os

from .sqlite import SqliteStore, StoreError

STORE_FILE = "store.sqlite3"
ENV = "CONTINUATION_STORE"


def store_url() -> str:
    """The configured backend: ``sqlite`` or a PostgreSQL URL."""
    return (os.environ.get(ENV) or "").strip() or "sqlite"


def backend_name(url: str | None = None) -> str:
    url = store_url() if url is None else url
    if url == "sqlite":
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    raise StoreError(f"{ENV}={url!r} is not a store: use `sqlite` or a postgresql:// URL")


def store_file(home: str) -> str | None:
    """The store's file under ``home`` when the backend keeps one (SQLite), else None."""
    return os.path.join(home, STORE_FILE) if backend_name() == "sqlite" else None


def open_store(home: str, *, create: bool = True, url: str | None = None):
    """The store of the state home ``home`` (a :class:`~continuation.store.interface.Store`)."""
    url = store_url() if url is None else url
    if backend_name(url) == "sqlite":
        return SqliteStore(os.path.join(home, STORE_FILE), create=create)
    try:
        from .postgres import PostgresStore, ServerUnreachable, redact  # psycopg: only when chosen
    except ImportError as exc:
        raise StoreError(f"{ENV} names a PostgreSQL server but its driver is missing ({exc}):"
                         " pip install 'continuation-engine[postgres]'") from None
    from .spool import SPOOL_FILE

    spooled = os.path.exists(os.path.join(home, SPOOL_FILE))
    try:
        store = PostgresStore(url, home=home, create=create)
    except ServerUnreachable as exc:
        if not create and not spooled:
            raise
        from .spool import SpoolStore  # no fact is lost: it waits here for the server

        return SpoolStore(home, redact(url), str(exc))
    if spooled:
        from .spool import drain

        drain(home, store)
    return store
