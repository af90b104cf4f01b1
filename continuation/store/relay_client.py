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

A relay that stops answering (stopped, wedged) never holds a hook: one that does not answer
the hello within :func:`hello_timeout` is ended (it is this user's own process; the server
rolls back whatever it held) and the hook connects itself; inside a hook run, an answer that
takes longer than :func:`answer_timeout` (``CONTINUATION_RELAY_WAIT_S``, default 20 s: well
within the runtimes' hook timeouts, 30 s as installed) is a lost server: the hook spools, as
above, and ends the relay too (whatever held it, a wedged server connection or a long row
lock, its transactions are rolled back and the next hook starts a fresh one). A command
waits on a slow answer, as on the direct path (Ctrl-C stops it).

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
#: what a hello may take beyond the server's connect timeout (the relay answers it at once
#: from its pool, or after connecting to the server)
HELLO_MARGIN_S = 5.0
#: the longest a hook run waits on one answer through the relay before taking the server for
#: lost (a statement waiting on another writer's row lock included); ``WAIT_ENV`` overrides
ANSWER_TIMEOUT_S = 20.0
WAIT_ENV = "CONTINUATION_RELAY_WAIT_S"


class RelayAbsent(Exception):
    """No relay answers for this server (none runs, it was ending, or it refused us): the
    caller connects itself. ``hung``: one held the socket without answering (it was ended)."""

    def __init__(self, message: str, *, hung: bool = False):
        super().__init__(message)
        self.hung = hung


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

    __slots__ = ("sock", "path", "closed", "schema", "waiting", "in_transaction")

    def __init__(self, sock, path: str = ""):
        self.sock, self.path, self.closed, self.schema = sock, path, False, 0
        self.waiting: list = []
        self.in_transaction = False

    def _ask(self, message):
        if self.closed:
            raise ServerUnreachable("lost the store server: the relay connection is closed")
        try:
            relay_wire.send(self.sock, message)
            return relay_wire.receive(self.sock)
        except TimeoutError:
            waited = self.sock.gettimeout()
            pid = _end_silent_relay(self.sock, self.path, "an answer")
            self.close()
            raise ServerUnreachable("lost the store server: the relay did not answer within "
                                    f"{waited:g}s (pid {pid}: ended)") from None
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
    conn = RelayConnection(sock, path)
    try:
        sock.settimeout(hello_timeout(url))
        relay_wire.send(sock, ["hello", relay_wire.PROTOCOL])
        answer = relay_wire.receive(sock)
    except TimeoutError:  # it holds the socket but does not answer: end it, connect ourselves
        pid = _end_silent_relay(sock, path, "its hello")
        conn.close()
        raise RelayAbsent(f"the relay at {path} (pid {pid}) did not answer its hello within "
                          f"{hello_timeout(url):g}s: ended", hung=True) from None
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
    from continuation.store import log_store

    # a hook run takes a silent relay for a lost server (it spools); a command waits
    sock.settimeout(answer_timeout() if log_store.STAMPS is not None else None)
    return conn


def answer_timeout() -> float:
    try:
        return max(0.1, float(os.environ.get(WAIT_ENV) or ANSWER_TIMEOUT_S))
    except ValueError:
        return ANSWER_TIMEOUT_S


def hello_timeout(url: str) -> float:
    """How long a hello may take: the server's connect timeout (``connect_timeout=N`` in the
    URL, else the direct path's 5 s) and :data:`HELLO_MARGIN_S`."""
    seconds = 5.0
    at = url.find("connect_timeout=")
    if at >= 0:
        digits = url[at + len("connect_timeout="):].split("&", 1)[0]
        if digits.isdigit():
            seconds = float(digits)
    return seconds + HELLO_MARGIN_S


def _end_silent_relay(sock, path: str, what: str) -> int | None:
    """SIGKILL the relay at the other end of ``sock`` (its pid from ``SO_PEERCRED``), when it
    is this user's: it holds the socket (so no other relay can start) but answers nothing.
    Its server connections close and the server rolls back what they held, as when it is
    killed mid-request. Its pid, or None when it could not be told."""
    import _socket

    try:
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        pid = int.from_bytes(creds[0:4], sys.byteorder)
        uid = int.from_bytes(creds[4:8], sys.byteorder)
    except (OSError, AttributeError):
        return None
    if uid != os.getuid() or pid in (0, os.getpid()):
        return None
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return None
    try:  # beside the relay's own log lines (its log: the socket's name, .log)
        import time

        fd = os.open(path[:-len(".sock")] + ".log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} ended relay "
                     f"pid={pid}: no answer to {what} in time\n")
    except OSError:
        pass
    return pid


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
    if relay_wire.too_long(relay_wire.relay_dir()):  # it could not listen there
        return None
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
