"""A throwaway PostgreSQL cluster for the tests: initdb + pg_ctl in a temporary folder, on a
Unix socket only (no TCP port to collide with). As root it runs the server as the
unprivileged ``postgres`` user (the server refuses to run as root). ``None`` with a reason
when no binaries (or no way to run them) exist: the tests that need it skip."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin",
            "/usr/lib/postgresql/17/bin")


def _binary(name: str) -> str | None:
    for folder in BIN_DIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


class Cluster:
    def __init__(self, root: str, as_user: list[str]):
        self.root, self.as_user = root, as_user
        self.data, self.socket = os.path.join(root, "data"), os.path.join(root, "sock")
        self.pg_ctl = _binary("pg_ctl")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.socket}"

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)

    def start(self) -> None:
        self._run(self.pg_ctl, "-D", self.data, "-w", "-l", os.path.join(self.root, "log"),
                  "-o", f"-k {self.socket} -c listen_addresses='' -c fsync=on"
                        " -c max_connections=200", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(self.pg_ctl, "-D", self.data, "-w", "-m", mode, "stop")

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend (no shutdown of any kind)."""
        import signal

        with open(os.path.join(self.data, "postmaster.pid")) as fh:
            postmaster = int(fh.readline())
        children = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        if int(fh.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                            children.append(int(entry))
                except (OSError, ValueError, IndexError):
                    pass
        for pid in [postmaster, *children]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def restart_after_kill(self, timeout: float = 60) -> None:
        """Start again; the killed postmaster's pid file is stale and start recovers from it."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            try:
                self.start()
                return
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def start_cluster() -> tuple[Cluster | None, str]:
    """A running cluster, or None and why not."""
    initdb = _binary("initdb")
    if initdb is None or _binary("pg_ctl") is None:
        return None, "no PostgreSQL binaries (initdb, pg_ctl) on this machine"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (pip install 'continuation-engine[postgres]')"
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses root: run it as the postgres user
        runuser = shutil.which("runuser")
        try:
            import pwd

            user = pwd.getpwnam("postgres")
        except KeyError:
            return None, "running as root and there is no `postgres` user to run the server"
        if runuser is None:
            return None, "running as root and `runuser` is missing"
        as_user = [runuser, "-u", "postgres", "--"]
    root = tempfile.mkdtemp(prefix="continuation-pg-")
    os.makedirs(os.path.join(root, "sock"))
    if as_user:
        for folder in (root, os.path.join(root, "sock")):
            os.chown(folder, user.pw_uid, user.pw_gid)
    cluster = Cluster(root, as_user)
    try:
        cluster._run(initdb, "-D", cluster.data, "-U", "postgres", "--auth=trust",
                     "--no-sync", "-E", "UTF8")
        cluster.start()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(root, ignore_errors=True)
        return None, f"could not start a PostgreSQL cluster: {exc} {detail.decode()[-300:]}"
    return cluster, ""


def remove(cluster: Cluster) -> None:
    try:
        cluster.stop("immediate")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        pass
    shutil.rmtree(cluster.root, ignore_errors=True)


def stop_relays(folder: str) -> None:
    """End the relays listening in ``folder`` (each by the pid it reports) and remove it."""
    import signal

    from continuation.store import relay_wire

    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if not name.endswith(".sock"):
            continue
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(5)
            sock.connect(os.path.join(folder, name))
            relay_wire.send(sock, ["status"])
            os.kill(int(relay_wire.receive(sock)["pid"]), signal.SIGTERM)
        except (OSError, relay_wire.WireError, KeyError, ValueError):
            pass
        finally:
            sock.close()
    shutil.rmtree(folder, ignore_errors=True)
