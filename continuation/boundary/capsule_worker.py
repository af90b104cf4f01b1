"""A process that builds a boundary's capsule while the boundary's own process does the rest.

A checkpoint's capsule needs pydantic, the capsule models' schemas and, near its budget, the
tokenizer: about 110 ms of one core's work before its first byte is built. The
boundary's process also reads the store and waits on git, and a thread cannot take that import
work off its path (one interpreter lock). So a boundary starts this worker first: it imports
and warms the capsule stack on another core while the boundary's process gathers the source as
plain data (``capsule_source.gather_plain``, no pydantic) and snapshots the workspace; then the
worker validates that source and builds with the very function a build in process uses
(``capsule.fitted.build_fitted``), and sends back the encoded capsule and its rendering. The
boundary's process commits them (the store, the generation claim and every fault point stay
there): the worker writes nothing but its ranks cache.

Used (:func:`should_use`) on POSIX with at least two CPUs this process may run on, when the
capsule stack is not imported here yet (a process that holds it, e.g. the Python API or a test
run, builds in place), unless ``CONTINUATION_CAPSULE_WORKER=0``. Whatever goes wrong with the
worker (it cannot start, dies, sends nothing within :data:`REPLY_TIMEOUT_S` or something
malformed, reports an error), the boundary builds the capsule in process: the same capsule,
only later. The reason is kept in :attr:`CapsuleWorker.problem`.

A compaction hook starts its worker first thing (:func:`start_early`, as soon as its payload
is parsed: ~15 ms sooner than its boundary would), and the boundary takes it over
(:func:`take_early`).

How it starts (:meth:`CapsuleWorker.start`): forked from the boundary's process on Linux when
that process runs one thread (:func:`can_fork`), so its interpreter is up and its first
modules imported already: a new interpreter took ~20 ms to reach its first line, ~15 ms of CPU
a 2-core boundary shares with git. The child keeps only its two pipes and /dev/null (the
runtime reads the hook's stdout and stderr to EOF). Elsewhere, from a process with a second
thread, or with ``CONTINUATION_CAPSULE_WORKER=spawn``: a new interpreter
(``sys.executable -P -c``) on this package's folder.

Protocol: frames of an 8-byte big-endian length and a pickle, over the worker's stdin and
stdout; both ends are this package (the same code: forked, or started on this package's
folder). The worker imports pydantic and builds the models' schemas, then reads the first frame,
``{"exact": bool}`` (:meth:`CapsuleWorker.prepare`: whether the thread's capsules need the
tokenizer, loaded next when so, and then ``"temp_folder": str`` too); then requests
``{"source": dict, "exact_first": bool}``, each answered
``{"data": bytes, "rendered": str, "version": int}`` or ``{"error": str}``, until its stdin
closes (a boundary that lost a generation race sends another request).
"""
from __future__ import annotations

import os
import sys

#: how long a boundary waits for the worker's reply before building in process instead
REPLY_TIMEOUT_S = 20.0
_LENGTH = 8
#: a reply larger than this is not one (the capsule's budget is in KiB)
MAX_REPLY_BYTES = 64 << 20


_early: CapsuleWorker | None = None


#: modules a boundary's process and its forked worker both import: imported once, before the
#: fork, instead of by each process after it. Measured (a PreCompact hook, 20,000-file
#: repository): 72 modules imported by both after the fork, ~25 ms of CPU each process paid;
#: imported here first, the hook is as fast alone (medians 161 / 162 ms, 12 alternating rounds)
#: and, beside a process busy on one core, 225 against 242 ms. Top-level names (what they
#: import comes along); one a Python lacks is skipped. A test (``tests/test_phase_marks.py``)
#: fails when both processes import a module after the fork again.
SHARED_MODULES = (
    "typing", "dataclasses", "pathlib", "hashlib", "json", "datetime", "decimal", "logging",
    "platform", "secrets", "threading", "concurrent.futures.thread", "contextvars", "locale",
    "select", "zlib", "shutil", "fcntl", "capsule.tokens", "capsule.work_record",
)


def _import_shared() -> None:
    for name in SHARED_MODULES:
        try:
            __import__(name)
        except ImportError:
            pass


def start_early(home) -> None:
    """Start this process's boundary worker now (a compaction hook, as soon as it has parsed
    its payload); :func:`take_early` hands it to the boundary. Never raises: a hook must go on."""
    global _early
    try:
        if _early is None:
            _early = CapsuleWorker.start(home)
    except Exception:  # noqa: BLE001 - the boundary starts one, or builds itself
        _early = None


def take_early(home) -> CapsuleWorker | None:
    """The worker :func:`start_early` started for this state home, once."""
    global _early
    worker, _early = _early, None
    if worker is not None and worker.home != _same_home(home):
        worker.close()
        return None
    return worker


def _same_home(home) -> str:
    """A state home as compared here (a hook names it by string, an engine by path)."""
    return os.path.normpath(os.path.abspath(os.fspath(home)))


def should_use() -> bool:
    """A worker pays off here: POSIX, two CPUs or more for this process, pydantic not imported
    yet (else the stack is, or is being, loaded in process), not switched off."""
    if os.environ.get("CONTINUATION_CAPSULE_WORKER", "").strip() == "0":
        return False
    if os.name != "posix" or "pydantic" in sys.modules:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return cpus >= 2


def can_fork() -> bool:
    """The worker may be forked from this process: Linux (macOS's system libraries are not
    safe to use in a child forked without exec, so Python's own ``multiprocessing`` spawns
    there), a single thread (a lock another thread holds would stay held in the child), not
    switched to spawning (``CONTINUATION_CAPSULE_WORKER=spawn``)."""
    if os.environ.get("CONTINUATION_CAPSULE_WORKER", "").strip() == "spawn":
        return False
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def _own_std_fds(requests_r: int, replies_w: int) -> None:
    """In a forked worker: stdin the request pipe, stdout the reply pipe, stderr /dev/null.
    The runtime waits for EOF on the hook's stdout and stderr: the worker holds none of them.
    Each source is first copied above 2 (a parent started with a closed stdin has pipes
    there), so no dup2 overwrites another's source."""
    import fcntl

    null = os.open(os.devnull, os.O_RDWR)
    sources = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3) for fd in (requests_r, replies_w, null)]
    for target, source in enumerate(sources):
        os.dup2(source, target)


def _close_inherited() -> None:
    """Close every descriptor above stderr (the store's, a lock's, the parent's pipes): the
    ones open here, listed, rather than a range up to the limit (a million where
    ``close_range`` is missing)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        fds = range(3, 1024)
    for fd in fds:
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass


#: forked workers closed before they had exited: a long-lived process (the Python API) reaps
#: them at its next fork rather than keeping one zombie per boundary
_unreaped: list[_ForkedProcess] = []


def _reap_forked() -> None:
    _unreaped[:] = [proc for proc in _unreaped if proc.poll() is None]


class _ForkedProcess:
    """A forked worker as :class:`subprocess.Popen` would show it, for what the boundary's end
    uses: ``stdin``, ``stdout``, ``poll``, ``kill``, ``wait``."""

    def __init__(self, pid: int, requests_fd: int, replies_fd: int):
        self.pid, self.returncode = pid, None
        self.stdin = open(requests_fd, "wb", buffering=0)  # noqa: SIM115 - closed by close()
        self.stdout = open(replies_fd, "rb", buffering=0)  # noqa: SIM115

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float | None = None) -> int:
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                import subprocess

                raise subprocess.TimeoutExpired(f"capsule worker {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode


class CapsuleWorker:
    """The boundary's end of one worker process."""

    def __init__(self, proc, home=None):
        self._proc = proc
        self.home = _same_home(home) if home is not None else None
        #: what :meth:`prepare` was told (None until then: not prepared): a caller that prepared
        #: the worker early (a rewind) does not read the thread's newest capsule again to know it
        self.exact: bool | None = None
        self.problem: str | None = None

    @classmethod
    def start(cls, home) -> CapsuleWorker | None:
        """A started worker (its caller calls :meth:`prepare`), or None when :func:`should_use`
        says no or it cannot be started: forked where :func:`can_fork` says so, else spawned."""
        if not should_use():
            return None
        return (cls.fork(home) if can_fork() else None) or cls.spawn(home)

    @classmethod
    def fork(cls, home) -> CapsuleWorker | None:
        """A worker forked from this process (None when the fork fails): it starts where this
        process is, its interpreter up and its modules imported, ~20 ms before a spawned one
        would have run its first line. Call only where :func:`can_fork` says so."""
        import gc
        import pickle  # noqa: F401 - both ends frame with it: imported once, before the fork

        _reap_forked()
        _import_shared()
        from continuation.host import phase_marks

        phase_marks.mark_modules("the boundary at its worker's fork")
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (requests_r, requests_w, replies_r, replies_w):
                os.close(fd)
            return None
        if pid == 0:  # the worker: never returns into the caller's code
            code = 70
            try:
                # no collection, ever (see serve()): the parent's objects are not ours to
                # collect (or close) here, nor worth copying page by page to look at
                gc.disable()
                _own_std_fds(requests_r, replies_w)
                _close_inherited()
                # a stray print goes where stderr does (/dev/null), never into the reply pipe
                sys.stdout = sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                code = serve(home, 0, 1)
            finally:
                os._exit(code)
        os.close(requests_r)
        os.close(replies_w)
        return cls(_ForkedProcess(pid, requests_w, replies_r), home)

    @classmethod
    def spawn(cls, home, *, exact: bool | None = None) -> CapsuleWorker | None:
        """A worker started as a new interpreter, whatever :func:`should_use` says (None when
        it cannot start)."""
        import subprocess

        if not sys.executable:  # an embedded interpreter: nothing to start
            return None
        # the package folder this process imported (a source tree, a venv): the worker imports
        # the same code, and ``-P`` keeps a project's own ``continuation/`` folder out
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "from continuation.boundary.capsule_worker import main; raise SystemExit(main(sys.argv[2:]))")
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-c", code, root, os.fspath(home)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
        except OSError:
            return None
        worker = cls(proc, home)
        if exact is not None:
            worker.prepare(exact)
        return worker

    def prepare(self, exact: bool, *, tell_temp_folder: bool = True) -> None:
        """Say whether the build will count exactly (the worker loads the tokenizer then, and
        is told the system's temporary folder, where tiktoken's cache is looked for:
        ``capsule.tokens.use_temp_folder``); once: later calls change nothing.
        ``tell_temp_folder=False``: the worker finds the folder itself (``tempfile``, ~1-3
        ms), for a caller whose worker waits for its request anyway (a rewind's, while the
        restore runs) and whose own path this process is."""
        if self.exact is not None or self.problem is not None:
            return
        self.exact = bool(exact)
        import pickle

        first: dict = {"exact": bool(exact)}
        if exact and tell_temp_folder:
            from capsule.tokens import temp_folder

            try:
                first["temp_folder"] = temp_folder()
            except OSError:  # no usable temporary folder: the worker's tokenizer decides there
                pass
        try:
            _send(self._proc.stdin.fileno(), pickle.dumps(first, protocol=5))
        except Exception as exc:  # noqa: BLE001 - the boundary builds itself
            self._failed(f"{type(exc).__name__}: {exc}")

    def build(self, source: dict, *, exact_first: bool) -> tuple[bytes, str, int] | None:
        """(capsule bytes, rendering, schema version) of ``source`` (plain data), or None with
        :attr:`problem` set; a worker that failed once is not asked again."""
        self.prepare(exact_first)
        if self.problem is not None:
            return None
        import pickle

        try:
            _send(self._proc.stdin.fileno(),
                  pickle.dumps({"source": source, "exact_first": exact_first}, protocol=5))
            reply = pickle.loads(_receive(self._proc.stdout.fileno()))
        except Exception as exc:  # noqa: BLE001 - whatever it is, the boundary builds itself
            return self._failed(f"{type(exc).__name__}: {exc}")
        if not isinstance(reply, dict):
            return self._failed("a malformed reply")
        if "error" in reply:
            return self._failed(str(reply["error"]))
        data, rendered, version = reply.get("data"), reply.get("rendered"), reply.get("version")
        if not (isinstance(data, bytes) and data and isinstance(rendered, str)
                and isinstance(version, int)):
            return self._failed("a malformed reply")
        return data, rendered, version

    def _failed(self, why: str) -> None:
        self.problem = f"capsule worker: {why}; the capsule was built in process"
        self._stop()
        return None

    def close(self) -> None:
        """End the worker: its stdin closes and it exits on its own. Not waited for (the kernel
        takes ~7 ms to free its memory): ``subprocess`` reaps a spawned one later, the next
        fork a forked one (:func:`_reap_forked`), or init does once this process has ended."""
        try:
            self._proc.stdin.close()
            self._proc.stdout.close()
        except OSError:
            pass
        if self._proc.poll() is None and isinstance(self._proc, _ForkedProcess):
            _unreaped.append(self._proc)

    def _stop(self) -> None:
        try:
            self._proc.kill()
            self._proc.wait(timeout=2)
        except Exception:  # noqa: BLE001 - gone already
            pass


def _send(fd: int, payload: bytes) -> None:
    import select
    import time

    timeout = REPLY_TIMEOUT_S  # read now: a test shortens it
    data = memoryview(len(payload).to_bytes(_LENGTH, "big") + payload)
    deadline = time.monotonic() + timeout
    os.set_blocking(fd, False)  # a write never waits past the deadline on a worker not reading
    while data:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
            raise TimeoutError("the worker took no request in time")
        try:
            data = data[os.write(fd, data[:65536]):]
        except BlockingIOError:
            pass  # the pipe filled between select and write: wait again


def _receive(fd: int) -> bytes:
    import select
    import time

    deadline = time.monotonic() + REPLY_TIMEOUT_S

    def exactly(n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError("no reply in time")
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise EOFError("the worker ended without a reply")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    size = int.from_bytes(exactly(_LENGTH), "big")
    if size > MAX_REPLY_BYTES:  # a capsule and its rendering are a few dozen KiB
        raise ValueError(f"a reply of {size} bytes")
    return exactly(size)


# --- the worker's side ------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    """A spawned worker: requests on stdin, replies on stdout."""
    return serve(argv[0], 0, 1)


def serve(home: str, requests_fd: int, replies_fd: int) -> int:
    """Warm the capsule stack, then answer requests until the request pipe closes.

    Without the cyclic garbage collector: importing pydantic and building the schemas
    allocates ~40,000 objects that live as long as the worker, and the collections they
    set off cost ~10 ms of its ~120; a worker builds a capsule or two and exits, freeing
    by reference count all it does not keep."""
    import gc
    import pickle

    from continuation.host import phase_marks

    gc.disable()
    phase_marks.boundary_pid = os.getppid()
    phase_marks.mark("worker: started")

    def read_exactly(n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = os.read(requests_fd, min(n - got, 1 << 20))
            if not chunk:
                # the boundary is done: end without the interpreter's teardown (freeing the
                # tokenizer's ranks and the models took ~30 ms the boundary would wait for)
                phase_marks.mark_modules("the worker")
                os._exit(0)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def frame():
        return pickle.loads(read_exactly(int.from_bytes(read_exactly(_LENGTH), "big")))

    warm_problem = None
    try:
        _without_pydantic_plugins()
        _warm_models()
        phase_marks.mark("worker: models ready")
        first = frame()
        if first.get("exact"):
            _warm_tokenizer(home, first.get("temp_folder"), idle=lambda: not _readable(requests_fd))
            phase_marks.mark("worker: tokenizer ready")
    except Exception as exc:  # noqa: BLE001 - reported with the first request
        warm_problem = f"{type(exc).__name__}: {exc}"
    while True:
        request = frame()
        phase_marks.mark("worker: request received")
        try:
            reply = {"error": warm_problem} if warm_problem else _build(home, request)
        except Exception as exc:  # noqa: BLE001 - the boundary builds in process instead
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        phase_marks.mark("worker: capsule built")
        out = pickle.dumps(reply, protocol=5)
        data = memoryview(len(out).to_bytes(_LENGTH, "big") + out)
        while data:
            data = data[os.write(replies_fd, data):]
        try:
            _keep_counts(home)  # after the reply: the boundary does not wait for it
        except Exception:  # noqa: BLE001 - a cache: the next boundary counts afresh
            pass


def _without_pydantic_plugins() -> None:
    """Run this worker's pydantic without plugins.

    pydantic looks for plugins (third-party hooks into every validation, found through the
    ``pydantic`` entry-point group of installed distributions) when it builds the first
    schema: importing ``importlib.metadata`` and reading every installed distribution's entry
    points, ~12 ms of a worker's ~120 on a boundary's path (measured with 33 installed
    distributions; more in a user's). The worker validates only this package's own models
    and reports nothing to anyone, so its pydantic gets none: the loader pydantic asks
    (``pydantic.plugin._loader.get_plugins``, pydantic 2.4 and later) answers "no plugins"
    here. The in-process build (the API, a worker that failed) keeps the user's plugins."""
    import types

    loader = types.ModuleType("pydantic.plugin._loader")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules.setdefault(loader.__name__, loader)


def _warm_models() -> None:
    from capsule import fitted, render  # noqa: F401 - imported ahead of the request
    from capsule.schemas import build_schemas

    build_schemas()


def _warm_tokenizer(home: str, temp_folder: str | None = None, idle=lambda: True) -> None:
    """Load the tokenizer, and the counts and split pieces the previous boundary's worker kept
    (most recur in this one: ``capsule.known_counts``). ``temp_folder``: the system's temporary
    folder as the boundary found it (``capsule.tokens.use_temp_folder``). ``idle()``: no
    request waits yet; only then is the reference merge's module imported ahead (``warm``,
    ~5 ms): with the request waiting, a build whose pieces are all known never needs it, and
    one that does imports it then, as it would have here."""
    from pathlib import Path

    from capsule import known_counts
    from capsule.tokens import get_token_counter, set_ranks_cache, use_temp_folder

    if isinstance(temp_folder, str) and temp_folder:
        use_temp_folder(temp_folder)
    set_ranks_cache(Path(home) / "cache")
    counter = get_token_counter()
    counts, pieces = known_counts.load_kept(Path(home) / "cache", counter.name)
    counter.recall(counts)
    counter.recall_pieces(pieces)
    if idle():
        counter.warm()


def _readable(fd: int) -> bool:
    """Something waits to be read on ``fd`` (a request, or the end of the requests)."""
    import select

    return bool(select.select([fd], [], [], 0)[0])


def _keep_counts(home: str) -> None:
    """Write the counts and split pieces this worker's builds made or recalled for the next
    boundary's worker (those of a counter told to recall: one loaded while waiting)."""
    from pathlib import Path

    from capsule import known_counts
    from capsule.tokens import loaded_token_counter

    counter = loaded_token_counter()
    recorded = counter.recorded() if counter is not None else {}
    if recorded and any(counter.known().get(key) != tokens for key, tokens in recorded.items()):
        known_counts.save(Path(home) / "cache", counter.name, recorded, counter.known(),
                          counter.pieces())


def _build(home: str, request: dict) -> dict:
    from pathlib import Path

    from capsule.budget import Budget
    from capsule.fitted import build_fitted
    from capsule.model import SCHEMA_VERSION, encode_capsule
    from capsule.render import render_capsule
    from capsule.source import CapsuleSource
    from capsule.tokens import set_ranks_cache

    source = CapsuleSource.model_validate(request["source"])
    set_ranks_cache(Path(home) / "cache")
    capsule = build_fitted(source, Budget(), exact_first=bool(request["exact_first"]))
    return {"data": encode_capsule(capsule), "rendered": render_capsule(capsule),
            "version": SCHEMA_VERSION}
