"""The hook's side of the local relay: a server store whose statements travel over the relay's
Unix socket (:class:`RelayedStore`), with the standard library only, so a hook on the team
store does not import the PostgreSQL driver (most of such a hook's time otherwise).

The relay (``store.relay``) holds the server connection; this process still runs all of the
store's logic (the reducer, the stamps, the payload encoding), so what a hook writes and
answers is the same on both paths. When no relay answers, :func:`open_relayed` says so and
starts one for the next hooks; this hook takes the direct path. The relay acknowledges a
statement only with the server's answer (a COMMIT once the server committed). A relay lost in
the middle of a statement is a lost server (:class:`ServerUnreachable`): the hook records into
the local spool and its stamps keep the drain exactly once, whether or not the commit it was
waiting on happened.

``CONTINUATION_RELAY=off`` turns the relay off (every hook connects itself).
"""
from __future__ import annotations

import os
import sys

from continuation.store import relay_wire
from continuation.store.log_store import ServerUnreachable
from continuation.store.server_store import ServerStore, nul_free

ENV = "CONTINUATION_RELAY"
#: the environment variable the relay reads its server URL from (never its command line:
#: another user can read that)
URL_ENV = "CONTINUATION_RELAY_URL"


class RelayAbsent(Exception):
    """No relay answers for this server (none runs, it was ending, or it refused us): the
    caller connects itself."""


class RelayFailed(Exception):
    """The server refused a statement through the relay (not a lost server): the server's
    error class name, SQLSTATE and message, as the driver would have raised it here."""

    def __init__(self, message: str, kind: str = "", sqlstate: str | None = None):
        super().__init__(message)
        self.kind, self.sqlstate = kind, sqlstate


def enabled() -> bool:
    return (os.environ.get(ENV) or "").strip().lower() not in ("off", "0", "no", "false")


class _Cursor:
    """A statement's result. Inside a transaction it may not have been sent yet: the first
    look at it sends what waits (see :class:`RelayConnection`)."""

    __slots__ = ("conn", "done", "description", "rowcount", "_rows", "_at")

    def __init__(self, conn):
        self.conn, self.done, self._at = conn, False, 0
        self.description, self.rowcount, self._rows = None, -1, []

    def fill(self, answer: dict) -> None:
        names, rows = answer.get("d"), answer.get("r")
        self.description = None if names is None else [(n,) for n in names]
        if not rows:
            self._rows = []
        elif answer.get("p"):  # JSON's own values only (see relay_wire)
            self._rows = [tuple(r) for r in rows]
        else:
            self._rows = [relay_wire.decode_row(r) for r in rows]
        self.rowcount, self.done = answer.get("n", -1), True

    def __getattribute__(self, name):
        if name in ("description", "rowcount") and not object.__getattribute__(self, "done"):
            object.__getattribute__(self, "conn").flush()
        return object.__getattribute__(self, name)

    def fetchone(self):
        if not self.done:
            self.conn.flush()
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self):
        if not self.done:
            self.conn.flush()
        rows, self._at = self._rows[self._at:], len(self._rows)
        return rows

    def __iter__(self):
        return iter(self.fetchall())


#: the statements that end a transaction (``postgres_sql.commit``, ``rollback``)
_ENDS = ("COMMIT", "ROLLBACK")


class RelayConnection:
    """A server connection held by the relay, for as long as this socket is open (a
    transaction begun here is the relay's connection's; the relay rolls it back when this
    socket closes with it open).

    Inside a transaction a statement is not sent until something needs an answer: a result
    looked at, or the COMMIT. What waits then goes in one message, run in order by the relay
    up to the first error, so a hook's writes cost no round trip each. The statements and
    their order are the same as one by one; only a failed write's error is raised at that
    next point instead of at its ``execute`` (it aborts the transaction either way). Outside
    a transaction each statement is sent at once."""

    __slots__ = ("sock", "closed", "schema", "waiting", "in_transaction")

    def __init__(self, sock):
        self.sock, self.closed, self.schema = sock, False, 0
        self.waiting: list = []
        self.in_transaction = False

    def _ask(self, message):
        if self.closed:
            raise ServerUnreachable("lost the store server: the relay connection is closed")
        try:
            relay_wire.send(self.sock, message)
            return relay_wire.receive(self.sock)
        except (OSError, relay_wire.WireError) as exc:
            # the relay died (or was killed) with the statement: whether it reached the
            # server's commit is unknown, as for a server lost mid-write
            self.close()
            raise ServerUnreachable(f"lost the store server: the relay went away ({exc})") from None

    def _raise(self, answer: dict):
        if answer.get("closed"):
            self.close()
        if answer["error"] in ("lost", "unreachable"):
            raise ServerUnreachable(answer.get("message") or "lost the store server")
        raise RelayFailed(answer.get("message") or "the server refused a statement",
                          answer.get("kind") or "", answer.get("sqlstate"))

    def _statement(self, op: str, sql: str, args) -> _Cursor:
        cursor = _Cursor(self)
        self.waiting.append(([op, sql, args], cursor))
        if sql == "BEGIN":
            self.in_transaction = True
        elif sql in _ENDS:
            self.in_transaction = False
        if not self.in_transaction:
            self.flush()
        return cursor

    def flush(self) -> None:
        """Send what waits; raise the first error among it."""
        waiting, self.waiting = self.waiting, []
        if not waiting:
            return
        answers = self._ask(["b", [message for message, _ in waiting]])["a"]
        for (_, cursor), answer in zip(waiting, answers):
            if "error" in answer:
                self.in_transaction = False if answer.get("closed") else self.in_transaction
                self._raise(answer)
            cursor.fill(answer)

    def execute(self, sql: str, args=()):
        return self._statement("x", sql, [relay_wire.encode_value(a) for a in nul_free(args)])

    def executemany(self, sql: str, rows):
        return self._statement("m", sql, [[relay_wire.encode_value(a) for a in nul_free(r)]
                                          for r in rows])

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.waiting = []
            try:
                self.sock.close()
            except OSError:
                pass


def _socket_to(path: str):
    """A connected Unix socket, by ``_socket``: the ``socket`` module's import (``enum`` and
    ``selectors``) is a visible share of a hook run."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(5.0)  # the relay accepts at once; a hung one must not hold the hook
        sock.connect(path)
        sock.settimeout(None)  # a statement may wait on a row lock, as on the direct path
        return sock
    except OSError:
        sock.close()
        raise


def connect(url: str) -> RelayConnection:
    """A connection through this user's relay for ``url``; :class:`RelayAbsent` when none
    answers (the caller connects itself), :class:`ServerUnreachable` when the relay runs but
    cannot reach the server either."""
    folder = relay_wire.private_dir(create=False)
    if folder is None:
        raise RelayAbsent("no private relay folder")
    path = relay_wire.socket_path(folder, url)
    try:
        sock = _socket_to(path)
    except OSError as exc:
        raise RelayAbsent(f"no relay at {path}: {exc}") from None
    conn = RelayConnection(sock)
    try:
        relay_wire.send(sock, ["hello", relay_wire.PROTOCOL])
        answer = relay_wire.receive(sock)
    except (OSError, relay_wire.WireError) as exc:  # it was ending, or refused us: no fact sent
        conn.close()
        raise RelayAbsent(f"the relay at {path} did not answer: {exc}") from None
    if answer.get("error") == "unreachable":
        conn.close()
        raise ServerUnreachable(answer.get("message") or "cannot reach the store server")
    if answer.get("error"):
        conn.close()
        raise RelayAbsent(f"the relay refused: {answer.get('message')}")
    conn.schema = int(answer.get("schema") or 0)
    return conn


class RelayedStore(ServerStore):
    """A :class:`~continuation.store.interface.Store` on a PostgreSQL server, through this
    user's relay (see the module docstring)."""

    relayed = True

    def __init__(self, url: str, conn: RelayConnection, *, home: str | None = None,
                 create: bool = True):
        self._url, self._home, self.conn = url, home, conn
        self._check_schema(create, version=conn.schema)


def open_relayed(url: str, *, home: str | None = None, create: bool = True) -> RelayedStore:
    """The store through the relay; :class:`RelayAbsent` after starting one (the next hooks
    find it; this one connects itself)."""
    try:
        conn = connect(url)
    except RelayAbsent:
        start(url)
        raise
    return RelayedStore(url, conn, home=home, create=create)


def start(url: str) -> int | None:
    """Start this user's relay for ``url`` in the background (its own session, so a runtime
    ending the hook's process group does not end it); the relay itself makes sure only one
    runs. Its pid, or None when it could not be started (the hooks connect themselves)."""
    folder = relay_wire.private_dir(create=True)
    if folder is None:
        return None
    env = dict(os.environ)
    env[URL_ENV] = url
    env.pop(ENV, None)
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
        return os.posix_spawn(sys.executable,
                              [sys.executable, "-P", "-m", "continuation.store.relay"], env,
                              file_actions=actions, setsid=True)
    except OSError:
        return None
    finally:
        os.close(devnull)


def status(url: str) -> dict | None:
    """What the relay for ``url`` reports (pid, since, connections and statements served),
    or None when none runs."""
    folder = relay_wire.private_dir(create=False)
    if folder is None:
        return None
    try:
        sock = _socket_to(relay_wire.socket_path(folder, url))
    except OSError:
        return None
    try:
        sock.settimeout(5.0)
        relay_wire.send(sock, ["status"])
        return relay_wire.receive(sock)
    except (OSError, relay_wire.WireError):
        return None
    finally:
        sock.close()
