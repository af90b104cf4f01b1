"""The local relay: one process per user and server connection that holds PostgreSQL
connections, so a hook speaks to the team store over a Unix socket instead of importing the
driver and connecting itself (``python -P -m continuation.store.relay``, started by the first
hook that finds none: see ``relay_client``).

- It only carries statements: the hook runs the store's logic itself, and its transaction is
  the relay connection's for as long as the hook's socket is open. A statement is answered
  with the server's own answer: a COMMIT once the server committed. A socket that closes with
  a transaction open (the hook killed) rolls it back.
- Killed itself (even with SIGKILL) mid-statement, its server connections close and the server
  rolls back what was not committed; the hook waiting on it takes it for a lost server and
  spools (see ``relay_client``).
- Private: the socket is mode 0600 in a folder of mode 0700 that this user owns, and every
  connection's peer is checked (``SO_PEERCRED``): another user's process is refused.
- Leaves when idle: no connection open and none made for ``CONTINUATION_RELAY_IDLE_S``
  seconds (default 600); it removes its socket first, so a hook arriving then starts another.
  It leaves too once its socket's name no longer names its socket (its folder was removed,
  say by a cleaner of /tmp: no hook can reach it, and the relay started since owns the name,
  which this one then leaves alone).
- One at a time: a lock file beside the socket, held while it runs.
"""
from __future__ import annotations

import os
import socket
import struct
import sys
import threading
import time

import psycopg

from continuation.host import faults
from continuation.store import relay_wire
from continuation.store.postgres import connect, first_line
from continuation.store.postgres_url import redact
from continuation.store.server_store import SCHEMA_TABLE_EXISTS, SCHEMA_VERSION_NOW, lost_server

IDLE_ENV = "CONTINUATION_RELAY_IDLE_S"
DEFAULT_IDLE_S = 600.0
#: server connections kept open for the next hooks (more are made while more hooks run)
POOL_SIZE = 4
#: the column types (PostgreSQL type oids) psycopg reads as JSON's own values: integers,
#: floats, text, booleans, and arrays of those; anything else (bytea, numeric, times, json)
#: is tagged value by value (``relay_wire.encode_value``)
_PLAIN_TYPES = frozenset((16, 20, 21, 23, 26, 700, 701, 25, 1043, 1042, 19, 705,
                          1000, 1005, 1007, 1016, 1021, 1022, 1009, 1015))
#: how long a read of the server's schema version stands for the hooks that follow
SCHEMA_RECHECK_S = 2.0


def peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end of ``conn`` (``SO_PEERCRED``)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class Relay:
    def __init__(self, url: str, path: str, idle_s: float):
        self.url, self.path, self.idle_s = url, path, idle_s
        self.bound: tuple[int, int] | None = None  # (device, inode) of the socket it listens on
        self.owner = os.getuid()
        self.started = time.time()
        self.connections = self.statements = self.refused = 0
        self.active = 0
        self.last_activity = time.monotonic()
        self.pool: list[psycopg.Connection] = []
        self.schema, self.schema_read_at = 0, float("-inf")
        self.lock = threading.Lock()
        self.log_path = path[:-len(".sock")] + ".log"

    # -- server connections -------------------------------------------------------------------
    def checkout(self) -> tuple[psycopg.Connection, int]:
        """A healthy server connection and the server's schema version.

        The version is read again once it is older than :data:`SCHEMA_RECHECK_S` (a host
        migrating the server between a hook's check and its write is a race the direct path
        has too), or with a pooled connection that has something to read while idle: the
        server closed it (a restart), or said something; it is then tried with that read."""
        while True:
            with self.lock:
                raw = self.pool.pop() if self.pool else None
                fresh = time.monotonic() - self.schema_read_at < SCHEMA_RECHECK_S
            if raw is None:
                raw = connect(self.url)  # ServerUnreachable: the hook spools
                return raw, self.read_schema(raw)
            if fresh and not _readable(raw):
                return raw, self.schema
            try:
                return raw, self.read_schema(raw)
            except psycopg.Error:  # closed by the server since (a restart): the next one
                _close_quietly(raw)

    def read_schema(self, raw: psycopg.Connection) -> int:
        version = _schema_version(raw)
        with self.lock:
            self.schema, self.schema_read_at = version, time.monotonic()
        return version

    def checkin(self, raw: psycopg.Connection) -> None:
        if raw.closed or raw.broken:
            return
        try:
            if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raw.execute("ROLLBACK")  # the hook went away inside its transaction
        except psycopg.Error:
            _close_quietly(raw)
            return
        with self.lock:
            if len(self.pool) < POOL_SIZE:
                self.pool.append(raw)
                return
        _close_quietly(raw)

    # -- one hook's socket ---------------------------------------------------------------------
    def serve(self, conn: socket.socket) -> None:
        raw = None
        try:
            uid = peer_uid(conn)
            if not self.allowed(uid):
                with self.lock:
                    self.refused += 1
                self.log(f"refused a connection from uid {uid}")
                return
            while True:
                try:
                    message = relay_wire.receive(conn)
                except (OSError, relay_wire.WireError):
                    return
                op = message[0] if isinstance(message, list) and message else None
                if op == "status":
                    relay_wire.send(conn, self.status())
                    return
                if op == "hello":
                    if raw is not None:
                        relay_wire.send(conn, {"error": "protocol", "message": "hello twice"})
                        return
                    try:
                        raw, schema = self.checkout()
                    except Exception as exc:  # noqa: BLE001 - the hook spools on it
                        relay_wire.send(conn, {"error": "unreachable", "message": str(exc)})
                        return
                    with self.lock:
                        self.connections += 1
                    relay_wire.send(conn, {"schema": schema, "pid": os.getpid()})
                    continue
                if op != "b" or raw is None:
                    relay_wire.send(conn, {"error": "protocol", "message": f"unknown {op!r}"})
                    return
                answers = []
                for statement_op, sql, args in message[1]:  # in order, up to an error
                    answers.append(self.run(raw, statement_op, sql, args))
                    if "error" in answers[-1]:
                        break
                with self.lock:
                    self.statements += len(answers)
                if answers and answers[-1].get("closed"):
                    _close_quietly(raw)
                    raw = None
                relay_wire.send(conn, {"a": answers})
                if raw is None:
                    return
        except OSError:
            pass
        finally:
            conn.close()
            if raw is not None:
                self.checkin(raw)
            with self.lock:
                self.active -= 1
                self.last_activity = time.monotonic()

    def reachable(self) -> bool:
        """Whether the socket's name still names the socket this relay listens on."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.bound

    def allowed(self, uid: int) -> bool:
        return uid == self.owner

    def run(self, raw: psycopg.Connection, op: str, sql: str, args) -> dict:
        commit = sql == "COMMIT"
        try:
            if commit:
                faults.point("relay.before_commit")
            if op == "x":
                cur = raw.execute(sql, [relay_wire.decode_value(a) for a in args])
                if cur.description is None:
                    answer = {"d": None, "r": None, "n": cur.rowcount}
                elif all(d.type_code in _PLAIN_TYPES for d in cur.description):
                    # JSON's own values only: the rows as they are (a long read stays in C)
                    answer = {"d": [d.name for d in cur.description], "r": cur.fetchall(),
                              "n": cur.rowcount, "p": 1}
                else:
                    answer = {"d": [d.name for d in cur.description],
                              "r": [[relay_wire.encode_value(v) for v in row]
                                    for row in cur.fetchall()],
                              "n": cur.rowcount}
            else:
                with raw.cursor() as cur:
                    cur.executemany(sql, [[relay_wire.decode_value(a) for a in r] for r in args])
                    answer = {"n": cur.rowcount}
            if commit:
                faults.point("relay.after_commit")
            return answer
        except psycopg.Error as exc:
            if lost_server(exc):  # what the direct path calls a lost server: the connection
                # goes (a read-only one too: the next hook's is made anew, after a failover)
                return {"error": "lost", "message": f"lost the store server: {first_line(exc)}",
                        "closed": True}
            return {"error": "db", "kind": type(exc).__name__, "sqlstate": exc.sqlstate,
                    "message": first_line(exc), "closed": raw.closed or raw.broken}
        except (TypeError, ValueError) as exc:  # a value the wire or the driver cannot carry
            return {"error": "db", "kind": type(exc).__name__, "message": str(exc),
                    "closed": False}

    def status(self) -> dict:
        with self.lock:
            return {"pid": os.getpid(), "since": self.started, "connections": self.connections,
                    "statements": self.statements, "refused": self.refused,
                    "active": self.active - 1,  # not this status request's own
                    "pooled": len(self.pool),
                    "server": redact(self.url), "idle_s": self.idle_s}

    def log(self, line: str) -> None:
        try:
            fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} {line}\n")
        except OSError:
            pass

    # -- the listening socket ------------------------------------------------------------------
    def run_forever(self, listener: socket.socket) -> None:
        listener.settimeout(1.0)
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                with self.lock:
                    idle = self.active == 0 and (
                        time.monotonic() - self.last_activity > self.idle_s)
                    if self.active == 0 and not idle and not self.reachable():
                        self.log("its socket was removed: leaving")
                        return
                if idle:
                    return
                continue
            conn.settimeout(None)
            with self.lock:
                self.active += 1
                self.last_activity = time.monotonic()
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()


def _readable(raw: psycopg.Connection) -> bool:
    """Whether an idle connection's socket has something to read (EOF included)."""
    import select

    try:
        return bool(select.select([raw.fileno()], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


def _schema_version(raw: psycopg.Connection) -> int:
    if not raw.execute(SCHEMA_TABLE_EXISTS).fetchone()[0]:
        return 0
    return int(raw.execute(SCHEMA_VERSION_NOW).fetchone()[0] or 0)


def _close_quietly(raw: psycopg.Connection) -> None:
    try:
        raw.close()
    except Exception:  # noqa: BLE001 - it is being dropped
        pass


def idle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S


def main() -> int:
    from continuation.store.relay_client import URL_ENV

    url = os.environ.pop(URL_ENV, "")
    folder = relay_wire.private_dir(create=True)
    if not url or folder is None:
        return 2
    path = os.path.abspath(relay_wire.socket_path(folder, url))
    os.chdir("/")  # not the first hook's workspace: a long-lived process holds no project open
    if len(path) > relay_wire.MAX_SOCKET_PATH:
        return 2
    import fcntl

    lock = os.open(path[:-len(".sock")] + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another relay runs for this server
    relay = Relay(url, path, idle_seconds())
    try:
        os.unlink(path)  # a killed relay's socket: nobody listens on it
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    st = os.lstat(path)
    relay.bound = (st.st_dev, st.st_ino)
    listener.listen(64)
    relay.log(f"listening for {redact(url)}")
    try:
        relay.run_forever(listener)
    finally:
        try:  # the socket goes first (its own only): a hook arriving now starts a new relay
            if relay.reachable():
                os.unlink(path)
        except FileNotFoundError:
            pass
        listener.close()
        relay.log(f"idle: leaving after {relay.connections} connections, "
                  f"{relay.statements} statements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
