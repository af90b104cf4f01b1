"""Which backend a state home uses: ``CONTINUATION_STORE``, else the first line of the file
``store-url`` under the state home (so a machine set up once needs no variable in every
agent's environment), else ``sqlite``.

``sqlite``: the embedded SQLite file under the state home (the default).
``postgresql://...`` (or ``postgres://``): a PostgreSQL server shared by every machine of a
team (``pip install 'continuation-engine[postgres]'``). Kept light: the hook hot path calls
this, so nothing here imports a database driver until that backend is chosen.
"""
from __future__ import annotations

import os

from continuation.store.log_store import StoreError
from continuation.store.sqlite import SqliteStore

STORE_FILE = "store.sqlite3"
ENV = "CONTINUATION_STORE"
URL_FILE = "store-url"


def store_url(home: str | None = None) -> str:
    """The configured backend: ``sqlite`` or a PostgreSQL URL."""
    url = (os.environ.get(ENV) or "").strip()
    if not url and home is not None:
        try:
            with open(os.path.join(home, URL_FILE), encoding="utf-8") as fh:
                url = fh.readline().strip()
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read {os.path.join(home, URL_FILE)}: {exc}") from None
    return url or "sqlite"


def backend_name(url: str | None = None, home: str | None = None) -> str:
    url = store_url(home) if url is None else url
    if url == "sqlite":
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    from continuation.store.postgres_url import redact

    raise StoreError(f"store {redact(url)!r} ({ENV} or {URL_FILE}) is not a store: use `sqlite`"
                     " or a postgresql:// URL")


def store_file(home: str) -> str | None:
    """The store's file under ``home`` when the backend keeps one (SQLite), else None."""
    return os.path.join(home, STORE_FILE) if backend_name(home=home) == "sqlite" else None


#: why this process stopped trying the server (it was lost in the middle of a write): from
#: then on its facts go to the spool (see :func:`spool_from_now`)
_server_lost: str | None = None


def spool_from_now(reason: str) -> None:
    """The server was lost mid-write: this process records into the local spool from now on,
    without waiting on the server again (a hook has a deadline; the next hook tries it)."""
    global _server_lost
    _server_lost = reason


def open_store(home: str, *, create: bool = True, url: str | None = None):
    """The store of the state home ``home`` (a :class:`~continuation.store.interface.Store`)."""
    url = store_url(home) if url is None else url
    if backend_name(url) == "sqlite":
        return SqliteStore(os.path.join(home, STORE_FILE), create=create)
    if _server_lost is not None:
        return _spool(home, url, _server_lost)
    from continuation.store.log_store import ServerUnreachable
    from continuation.store.spool import SPOOL_FILE

    spooled = os.path.exists(os.path.join(home, SPOOL_FILE))
    try:
        store = _relayed(home, url, create) or _direct(home, url, create)
    except ServerUnreachable as exc:
        if not create and not spooled:
            raise
        return _spool(home, url, str(exc))  # no fact is lost: it waits here for the server
    if spooled:
        from continuation.store.spool import drain

        drain(home, store)
    return store


def _relayed(home: str, url: str, create: bool):
    """The store through this user's relay, or None (none runs: one is started for the next
    hooks) when this process does not use it: a process of the command line does (a hook, a
    command); a library caller, living long, connects itself once."""
    from continuation.host import process_role

    if not process_role.COMMAND_LINE:
        return None
    from continuation.store import relay_client

    if not relay_client.enabled():
        return None
    try:
        return relay_client.open_relayed(url, home=home, create=create)
    except relay_client.RelayAbsent:
        return None


def _direct(home: str, url: str, create: bool):
    try:
        from continuation.store.postgres import PostgresStore  # psycopg: only when chosen
    except ImportError as exc:
        raise StoreError(f"{ENV} names a PostgreSQL server but its driver is missing ({exc}):"
                         " pip install 'continuation-engine[postgres]'") from None
    return PostgresStore(url, home=home, create=create)


def _spool(home: str, url: str, reason: str):
    from continuation.store.postgres_url import redact
    from continuation.store.spool import SpoolStore

    return SpoolStore(home, redact(url), reason)
