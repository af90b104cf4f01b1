"""The capsule worker (continuation.boundary.capsule_worker): a boundary's capsule built in another process
is the capsule a build in process makes; a worker that fails leaves the build to the boundary's
process; the boundary's own process then never imports pydantic."""
from __future__ import annotations

import gc
import json
import os
import pickle
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from capsule.budget import Budget
from capsule.fitted import build_fitted
from capsule.model import SCHEMA_VERSION, encode_capsule
from capsule.decode import decode_capsule
from capsule.notice import Notice, notice_data
from capsule.render import render_capsule
from capsule.source import CapsuleSource, SourceNotice
from continuation.boundary import crossing as boundary, capsule_source, capsule_worker, checkpoints
from continuation.boundary.capsule_worker import CapsuleWorker
from continuation.session.engine import Engine
from conftest import usable_cpus

ROOT = str(Path(capsule_worker.__file__).resolve().parents[1])
WORDS = ("rename", "module", "tests", "fix", "the", "build", "ünïcode", "日本語", "path/to/file.py",
         "--flag", "0x1f", "{json: 1}", "émoji 🎉", "tab\there", "quote\"d")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _thread(engine, session: str, turns: int, words: int, workspace_root: str | None = None):
    rng = random.Random(turns * 1000 + words)
    t = engine.thread("claude", session, workspace_root=workspace_root)
    for k in range(turns):
        t.admit(_text(rng, words), turn_id=f"t{k}")
        t.tool_started(f"c{k}", "Bash", {"command": f"echo {k} >> notes.txt"}, turn_id=f"t{k}")
        if k != turns - 1:  # the last turn is still running, its call in flight
            t.tool_finished(f"c{k}", "ok", exit_code=0, turn_id=f"t{k}")
            t.claim(_text(rng, words // 2), turn_id=f"t{k}")
            t.turn_completed(f"t{k}")
    return t


def _in_process(thread, plain: dict, exact_first: bool) -> tuple[bytes, str, int]:
    capsule = build_fitted(CapsuleSource.model_validate(plain), Budget(), exact_first=exact_first)
    return encode_capsule(capsule), render_capsule(capsule), SCHEMA_VERSION


ON_LINUX = sys.platform.startswith("linux")
STARTS = ["spawn", pytest.param("fork", marks=pytest.mark.skipif(
    not ON_LINUX, reason="a worker is forked on Linux only"))]


def _started(how: str, home, exact: bool) -> CapsuleWorker:
    if how == "fork":
        worker = CapsuleWorker.fork(home)
        worker.prepare(exact)
        assert isinstance(worker._proc, capsule_worker._ForkedProcess)
        return worker
    return CapsuleWorker.spawn(home, exact=exact)


def _built_by_a_worker(how: str, home, plain: dict, exact: bool) -> tuple[bytes, str, int]:
    """One build by a worker started ``how``, which must succeed."""
    worker = _started(how, home, exact)
    try:
        built = worker.build(plain, exact_first=exact)
    finally:
        worker.close()
    assert worker.problem is None and built is not None
    return built


@pytest.mark.parametrize("how", STARTS)
@pytest.mark.parametrize("turns,words", [(3, 8), (60, 40)], ids=["small", "near-budget"])
@pytest.mark.parametrize("exact_first", [False, True])
def test_the_worker_builds_the_bytes_a_build_in_process_does(engine, turns, words, exact_first,
                                                             how):
    t = _thread(engine, f"s{turns}", turns, words)
    notices = [Notice("Rewound", ["line one", "line two"], priority=60, pointer="event:x:1")]
    plain = capsule_source.gather_plain(t, generation=3, reason="auto", notices=notices)
    plain = checkpoints.with_workspace(t, plain, generation=4, workspace=None)
    built = _built_by_a_worker(how, engine.home, plain, exact_first)
    assert built == _in_process(t, plain, exact_first)
    capsule = decode_capsule(built[0])
    assert capsule.generation == 4 and capsule.budget.bytes <= capsule.budget.max_bytes
    assert "Rewound" in built[1]
    if turns == 60:  # the case that needs the tokenizer: the count was exact, and cut to fit
        assert capsule.cuts and capsule.budget.tokens <= capsule.budget.max_tokens


@pytest.mark.parametrize("how", STARTS)
def test_one_worker_answers_a_second_request(engine, how):
    """A boundary that lost a generation race asks the same worker again."""
    t = _thread(engine, "s", 4, 10)
    worker = _started(how, engine.home, False)
    try:
        for generation in (1, 2):
            plain = capsule_source.gather_plain(t, generation=generation, reason="auto")
            assert worker.build(plain, exact_first=False) == _in_process(t, plain, False)
    finally:
        worker.close()
    assert worker._proc.wait(timeout=10) == 0  # its request pipe closed: it ended


@pytest.mark.skipif(not ON_LINUX, reason="a worker is forked on Linux only")
def test_a_forked_worker_holds_none_of_its_parents_descriptors(engine, tmp_path):
    """The hook's runtime waits for EOF on the hook's stdout and stderr, the store and the
    workspace lock are files this process holds: the forked worker keeps none of them, only
    its own two pipes and /dev/null."""
    held = open(tmp_path / "held", "w")  # noqa: SIM115 - a descriptor of the parent's
    pipe_r, pipe_w = os.pipe()
    worker = CapsuleWorker.fork(engine.home)
    try:
        t = _thread(engine, "s", 3, 5)
        plain = capsule_source.gather_plain(t, generation=1, reason="auto")
        assert worker.build(plain, exact_first=False) is not None  # it is up and serving
        pid = worker._proc.pid
        links = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        ours = {name: os.readlink(f"/proc/self/fd/{f.fileno()}")
                for name, f in (("requests", worker._proc.stdin), ("replies", worker._proc.stdout))}
        assert links == {0: ours["requests"], 1: ours["replies"], 2: os.devnull}, links
    finally:
        worker.close()
        held.close()
        os.close(pipe_r)
        os.close(pipe_w)


def test_gather_is_the_validated_plain_gather(engine):
    t = _thread(engine, "s", 5, 12)
    given = [SourceNotice(title="A", lines=["x"], priority=3), Notice("B", ["y"]), {"title": "C"}]
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    model = capsule_source.gather(t, generation=1, reason="manual", notices=given, now=now)
    plain = capsule_source.gather_plain(t, generation=1, reason="manual", notices=given, now=now)
    assert isinstance(plain, dict) and model == CapsuleSource.model_validate(plain)
    assert [n.title for n in model.notices] == ["A", "B", "C"]


def test_a_plain_notice_is_a_source_notice():
    plain = Notice("title", ("a", "b"), priority=7, pointer="p")
    model = SourceNotice(title="title", lines=["a", "b"], priority=7, pointer="p")
    assert plain.model_dump() == model.model_dump() == notice_data(plain) == notice_data(model)
    assert Notice("t").model_dump() == SourceNotice(title="t").model_dump()
    assert notice_data(model.model_dump()) == model.model_dump()


def _fake_worker(script: str) -> CapsuleWorker:
    return CapsuleWorker(subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE))


# the prepare frame, then the request
READ_REQUEST = ("import sys; f = sys.stdin.buffer\n"
                "for _ in range(2): f.read(int.from_bytes(f.read(8), 'big'))\n")


def _reply(obj) -> str:
    data = pickle.dumps(obj)
    return (READ_REQUEST + "out = sys.stdout.buffer; "
            f"out.write(len({data!r}).to_bytes(8, 'big') + {data!r}); out.flush()\n"
            "sys.stdin.buffer.read()")


@pytest.mark.parametrize("script,why", [
    (READ_REQUEST, "the worker ended without a reply"),
    (_reply(["not", "a", "dict"]), "a malformed reply"),
    (_reply({"data": b"", "rendered": "", "version": 1}), "a malformed reply"),
    (_reply({"error": "ValidationError: boom"}), "ValidationError: boom"),
    ("import sys; sys.stdout.buffer.write(b'\\xff' * 8); sys.stdout.flush(); sys.stdin.read()",
     "a reply of 18446744073709551615 bytes"),
], ids=["dies", "not-a-dict", "empty", "error", "garbage"])
def test_a_failing_worker_leaves_the_build_to_the_boundary(engine, script, why, monkeypatch):
    # both builds below say the same time (it is in the counted text)
    monkeypatch.setattr(capsule_source, "datetime", SimpleNamespace(
        now=lambda tz=None: datetime(2026, 12, 1, tzinfo=tz), fromtimestamp=datetime.fromtimestamp))
    t = _thread(engine, "s", 6, 15)
    cp = boundary.commit_checkpoint(t, reason="manual", snapshot=False,
                                    worker=_fake_worker(script))
    assert checkpoints.verify(cp) is None and cp.rendered
    rebuilt = checkpoints.build(t, generation=cp.generation, reason="manual", upto_seq=cp.seq)
    assert cp.capsule_bytes == encode_capsule(rebuilt)  # the in-process build ran
    log = (engine.home / "logs" / "capsule-worker.log").read_text()
    assert why in log and "built in process" in log, log


@pytest.mark.parametrize("prepared", [True, False])
def test_a_boundary_asks_whether_to_count_exactly_only_of_a_worker_not_prepared(engine, monkeypatch,
                                                                            prepared):
    """A rewind prepares its worker before its git work: the checkpoint it commits after the
    restore takes the worker's answer instead of reading the thread's newest capsule again
    (~1.5 ms on the rewind's path); a worker not prepared yet is asked as before."""
    asked = []
    real = checkpoints.counts_exactly
    monkeypatch.setattr(checkpoints, "counts_exactly",
                        lambda thread: asked.append(thread.key) or real(thread))
    monkeypatch.setattr(checkpoints, "commit", lambda thread, **kw: kw["built"])  # no build here
    t = _thread(engine, "s", 6, 15)
    worker = _fake_worker(READ_REQUEST)  # it ends without a reply
    if prepared:
        worker.prepare(False)
    assert boundary.commit_checkpoint(t, reason="manual", snapshot=False, worker=worker) is None
    assert asked == ([] if prepared else [t.key])
    # prepared: what it was told; else the thread's answer (no capsule yet: its length says)
    assert worker.exact is (False if prepared else real(t))


def test_a_worker_that_never_answers_times_out(engine, monkeypatch):
    monkeypatch.setattr(capsule_worker, "REPLY_TIMEOUT_S", 0.5)
    worker = _fake_worker("import time; time.sleep(30)")
    assert worker.build({"x": 1}, exact_first=False) is None
    assert "TimeoutError" in worker.problem
    assert worker.build({"x": 1}, exact_first=False) is None  # not asked again


def test_an_early_worker_goes_to_the_boundary_of_its_state_home(engine, tmp_path, monkeypatch):
    """A compaction hook starts its worker before it knows the thread (``start_early``); the
    boundary takes it for its own state home only."""
    monkeypatch.setattr(capsule_worker, "should_use", lambda: True)
    capsule_worker.start_early(str(engine.home) + "/")  # a hook names its home by string
    early = capsule_worker._early
    assert early is not None and capsule_worker.take_early(engine.home) is early
    assert capsule_worker.take_early(engine.home) is None  # once
    t = _thread(engine, "s", 4, 10)
    plain = capsule_source.gather_plain(t, generation=1, reason="auto")
    assert early.build(plain, exact_first=False) == _in_process(t, plain, False)
    early.close()
    capsule_worker.start_early(tmp_path / "another-home")
    other = capsule_worker._early
    assert capsule_worker.take_early(engine.home) is None and other._proc.wait(timeout=10) == 0
    capsule_worker._early = None


def test_a_bad_request_gets_an_error_reply_not_a_dead_worker(engine):
    worker = CapsuleWorker.spawn(engine.home, exact=False)
    try:
        assert worker.build({"generation": "not a source"}, exact_first=False) is None
        assert "ValidationError" in worker.problem
    finally:
        worker.close()


def _should_use(env: dict) -> bool:
    r = subprocess.run([sys.executable, "-P", "-c", "from continuation.boundary.capsule_worker import "
                        "should_use; print(should_use())"], capture_output=True, text=True,
                       env={**env, "PYTHONPATH": ROOT}, check=True)
    return r.stdout.strip() == "True"


@pytest.mark.skipif(os.name != "posix", reason="the worker is POSIX-only")
def test_when_the_worker_is_used():
    env = {k: v for k, v in os.environ.items() if k != "CONTINUATION_CAPSULE_WORKER"}
    assert _should_use(env) is (usable_cpus() >= 2)
    assert _should_use({**env, "CONTINUATION_CAPSULE_WORKER": "0"}) is False
    assert capsule_worker.should_use() is False  # this process holds pydantic: build in place


def _can_fork(env: dict, *, threads: int = 0) -> bool:
    code = ("import threading, time\n"
            f"for _ in range({threads}): threading.Thread(target=time.sleep, args=(5,),"
            " daemon=True).start()\n"
            "from continuation.boundary.capsule_worker import can_fork; print(can_fork())")
    r = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                       env={**env, "PYTHONPATH": ROOT}, check=True)
    return r.stdout.strip() == "True"


def test_when_the_worker_is_forked():
    """Forked on Linux from a process of one thread, unless switched to spawning; spawned
    elsewhere, and from a process with another thread running (its locks)."""
    env = {k: v for k, v in os.environ.items() if k != "CONTINUATION_CAPSULE_WORKER"}
    assert _can_fork(env) is ON_LINUX
    assert _can_fork(env, threads=1) is False
    assert _can_fork({**env, "CONTINUATION_CAPSULE_WORKER": "spawn"}) is False


def test_a_compaction_hook_starts_its_worker_before_its_deadline_thread(monkeypatch):
    """A boundary hook runs in a thread under its deadline; the worker is started before that
    thread, while the process has one thread and may fork it."""
    import io
    import threading

    from continuation import hooks

    calls = []
    monkeypatch.setattr(hooks, "_start_capsule_worker",
                        lambda: calls.append(threading.current_thread() is threading.main_thread()))
    monkeypatch.setattr(hooks, "run", lambda runtime, raw, ending=False: ("{}", 0))
    monkeypatch.setattr(hooks, "end_process", lambda code: None)
    try:
        for event, expected in (("PreCompact", [True]), ("SessionStart", []), ("Stop", [])):
            calls.clear()
            payload = json.dumps({"session_id": "s", "hook_event_name": event}).encode()
            monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(payload)))
            monkeypatch.setattr(sys, "stdout", io.StringIO())
            assert hooks.main(["--runtime", "claude"]) == 0
            assert calls == expected, event
    finally:
        gc.enable()  # hooks.main turns collection off for its (one-payload) process


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})


def _imported(stderr: bytes) -> set[str]:
    return {line.split("|")[-1].strip() for line in stderr.decode().splitlines()
            if line.startswith("import time:")}


@pytest.mark.skipif(os.name != "posix" or usable_cpus() < 2, reason="the worker needs POSIX and 2 CPUs")
@pytest.mark.parametrize("start", ["", "spawn"], ids=["default", "spawn"])
def test_precompact_and_rewind_processes_leave_pydantic_to_the_worker(tmp_path, start):
    """The PreCompact hook, and ``rewind --files --yes``, run as installed: their own process
    imports no pydantic (the worker builds; forked on Linux, else or when so switched
    spawned), and what they commit is a whole checkpoint."""
    from continuation.install import default_command

    home, repo = tmp_path / "state", tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("one\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "c")
    with Engine(home) as e:
        _thread(e, "s", 30, 30, workspace_root=str(repo))
    env = {k: v for k, v in os.environ.items()
           if k not in ("CONTINUATION_STORE", "CONTINUATION_CAPSULE_WORKER")}
    env.update(CONTINUATION_HOME=str(home), PYTHONPATH=ROOT, CONTINUATION_CAPSULE_WORKER=start)
    python = [*default_command()[:2], "-X", "importtime"]
    payload = {"session_id": "s", "hook_event_name": "PreCompact", "trigger": "auto",
               "cwd": str(repo), "transcript_path": ""}
    r = subprocess.run([*python, "-m", "continuation", "hook", "--runtime", "claude"],
                       input=json.dumps(payload).encode(), capture_output=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
    imported = _imported(r.stderr)
    assert "continuation.boundary.capsule_source" in imported  # the listing is real
    assert not [m for m in imported if m.split(".")[0] == "pydantic"]
    with Engine(home) as e:
        t = e.find_thread("claude", "s")
        cp = checkpoints.newest_checkpoint(t)
        assert cp.reason == "auto" and checkpoints.verify(cp) is None
        assert decode_capsule(cp.capsule_bytes).generation == cp.generation
        assert cp.workspace and cp.workspace.get("snapshot_commit")
    assert not (home / "logs" / "capsule-worker.log").exists()
    assert not (home / "logs" / "hooks.log").exists()

    (repo / "a.py").write_text("broken by the agent\n")
    r = subprocess.run([*python, "-m", "continuation", "rewind", cp.checkpoint_id, "--files",
                        "--yes"], capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (repo / "a.py").read_text() == "one\n"
    assert not [m for m in _imported(r.stderr) if m.split(".")[0] == "pydantic"]
    with Engine(home) as e:
        newest = checkpoints.newest_checkpoint(e.find_thread("claude", "s"))
        assert newest.reason == "rewind" and newest.generation == cp.generation + 1
        assert checkpoints.verify(newest) is None
    assert not (home / "logs" / "capsule-worker.log").exists()


def test_a_worker_that_reads_nothing_times_out_on_a_large_request(engine, monkeypatch):
    """A request larger than the pipe holds, to a worker that never reads: the send gives up
    at the deadline instead of blocking the boundary."""
    monkeypatch.setattr(capsule_worker, "REPLY_TIMEOUT_S", 0.5)
    worker = _fake_worker("import time; time.sleep(30)")
    assert worker.build({"text": "x" * (4 << 20)}, exact_first=False) is None
    assert "TimeoutError" in worker.problem and "request" in worker.problem


def test_a_rewind_that_fails_before_its_checkpoint_ends_its_worker(engine, monkeypatch):
    """A rewind whose files restore fails never reaches its checkpoint: the worker it started
    for that checkpoint is ended all the same (a long-lived process leaks none)."""
    from continuation.rewind import operation

    t = _thread(engine, "s", 3, 5)
    boundary.commit_checkpoint(t, reason="manual", snapshot=False)
    worker = CapsuleWorker.spawn(engine.home, exact=False)
    plan = operation.plan_rewind(engine, checkpoints.newest_checkpoint(t).checkpoint_id,
                                 "conversation")
    plan.builder = worker

    def fails(*a, **k):
        raise operation.RewindError("the restore failed")

    monkeypatch.setattr(operation, "_summary", fails)
    with pytest.raises(operation.RewindError):
        operation.apply_rewind(engine, plan)
    assert worker._proc.wait(timeout=10) == 0  # its stdin closed: it ended


def test_only_a_compaction_payload_starts_a_worker(monkeypatch, home):
    """The hook starts a worker for PreCompact / PreCompress, named by the payload's event;
    never for the hot path, even when a tool's input holds the word as a JSON value."""
    from continuation import hooks

    started = []
    monkeypatch.setattr(hooks, "_start_capsule_worker", lambda: started.append(1))
    base = {"session_id": "s", "cwd": "/nonexistent"}
    hooks.run("claude", json.dumps({**base, "hook_event_name": "PreToolUse", "tool_name": "mcp",
                                    "tool_use_id": "c1",
                                    "tool_input": {"event": "PreCompact"}}).encode())
    assert started == []
    hooks.run("claude", json.dumps({**base, "hook_event_name": "PreCompact",
                                    "trigger": "auto"}).encode())
    assert started == [1]


@pytest.mark.skipif(not ON_LINUX, reason="a worker is forked on Linux only")
def test_a_long_lived_process_keeps_no_zombie_per_forked_worker(engine):
    """A closed worker exits on its own, unwaited; the next fork reaps it, so a process that
    checkpoints again and again holds at most the workers still running."""
    import time

    def exited(pid: int) -> bool:  # a zombie: ended, not yet reaped
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"

    pids = []
    for _ in range(3):
        worker = CapsuleWorker.fork(engine.home)
        pids.append(worker._proc.pid)
        worker.close()
        deadline = time.monotonic() + 20
        while not exited(pids[-1]) and time.monotonic() < deadline:
            time.sleep(0.01)  # it reads EOF and exits
        assert exited(pids[-1])
    capsule_worker._reap_forked()
    for pid in pids:  # reaped: no longer this process's child
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    assert capsule_worker._unreaped == []


@pytest.mark.parametrize("raw", [
    b'{"hook_event_name": "PreCompact", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    b'{"hook_event_name": "PreCompact", ',
    b"\xff\xfe PreCompact",
], ids=["too-deep", "torn", "binary"])
def test_a_compaction_payload_that_cannot_be_parsed_fails_open(raw, home):
    """The worker's early start parses the payload before the hook's own fail-open handling:
    whatever it meets there (malformed, torn, nested past the decoder's limit), the hook
    answers "continue" with exit 0 and logs the error, as for any payload."""
    from continuation.install import default_command

    r = subprocess.run([*default_command(), "hook", "--runtime", "claude"], input=raw,
                       capture_output=True, timeout=120,
                       env={**os.environ, "CONTINUATION_HOME": str(home), "PYTHONPATH": ROOT})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-800:]
    assert b"Traceback" not in r.stderr
    assert (home / "logs" / "hooks.log").is_file()



_PLUGIN_PROBE = r"""
import os, pickle, sys
from continuation.boundary import capsule_worker

def audit(event, args):
    if event == "import" and args[0] == "importlib.metadata":
        os.write(2, b"imported importlib.metadata\n")

sys.addaudithook(audit)
mode, home, replies = sys.argv[1:4]
if mode == "in-process":  # what a process of the user's does when it builds a capsule
    capsule_worker._warm_models()
    raise SystemExit(0)
source = {"thread": {"runtime": "codex", "session_id": "s", "thread_id": "s"}, "generation": 1,
          "created_at": "2026-12-01T00:00:00Z"}
frames = [pickle.dumps({"exact": False}), pickle.dumps({"source": source, "exact_first": False})]
requests, writer = os.pipe()
os.write(writer, b"".join(len(f).to_bytes(capsule_worker._LENGTH, "big") + f for f in frames))
os.close(writer)
capsule_worker.serve(home, requests, os.open(replies, os.O_WRONLY | os.O_CREAT, 0o600))
"""


def test_the_worker_runs_pydantic_without_looking_for_plugins(tmp_path):
    """Pydantic looks for plugins through every installed distribution's entry
    points (``importlib.metadata``, ~12 ms) at its first schema; a worker serving a build never
    imports it (its pydantic gets no plugins), while a process of the user's keeps pydantic's
    own lookup."""
    def probe(mode: str) -> tuple[str, Path]:
        replies = tmp_path / f"{mode}.replies"
        r = subprocess.run([sys.executable, "-c", _PLUGIN_PROBE, mode, str(tmp_path / "home"),
                            str(replies)], capture_output=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": ROOT})
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        return r.stderr.decode(), replies

    if "imported importlib.metadata" not in probe("in-process")[0]:
        pytest.skip("this pydantic does not look for plugins through importlib.metadata")
    stderr, replies = probe("worker")
    assert "imported importlib.metadata" not in stderr
    data = replies.read_bytes()
    reply = pickle.loads(data[capsule_worker._LENGTH:])
    assert len(data) == capsule_worker._LENGTH + int.from_bytes(data[:capsule_worker._LENGTH], "big")
    assert "error" not in reply and decode_capsule(reply["data"]).generation == 1


@pytest.mark.parametrize("how", STARTS)
def test_a_worker_counts_with_the_counts_its_predecessor_kept(engine, how, monkeypatch):
    """A worker that counted exactly keeps its texts' counts in the state home's
    cache after replying; the next boundary's worker takes them instead of counting again (shown
    here by counts made one token larger in the file: that worker's capsule carries them),
    and the split pieces it found the tokens of."""
    import marshal
    import time

    from capsule import checked_file, known_counts, tokens
    from capsule.tokens import get_token_counter, token_counter_for

    t = _thread(engine, "kept", 60, 40)
    plain = checkpoints.with_workspace(
        t, capsule_source.gather_plain(t, generation=1, reason="auto"), generation=1,
        workspace=None)
    expected = _in_process(t, plain, True)
    name = get_token_counter().name
    path = known_counts.counts_path(engine.home / "cache", name)
    assert not path.exists()

    def built_by_a_worker() -> tuple[bytes, str, int]:
        # as a hook's process: nothing counted yet (a forked worker inherits what was)
        monkeypatch.setattr(tokens, "_default", None)
        return _built_by_a_worker(how, engine.home, plain, True)

    assert built_by_a_worker() == expected
    deadline = time.monotonic() + 30  # written after the reply
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    kept, pieces = known_counts.load_kept(engine.home / "cache", name)
    assert len(kept) > 100
    # and the pieces it split texts into, each with tiktoken's count, for the next to recall
    assert len(pieces) > 50
    reference = token_counter_for(name)._encoding
    for piece, count in list(pieces.items())[::7]:
        assert count == len(reference.encode(piece.decode("utf-8"), disallowed_special=()))
    assert built_by_a_worker() == expected  # the same capsule from counts it did not make
    larger = {key: tokens + 1 for key, tokens in kept.items()}
    blob = marshal.dumps({"version": known_counts.VERSION, "encoding": name, "counts": larger})
    checked_file.write(path, blob)
    assert built_by_a_worker()[0] != expected[0]  # the file's counts, not its own


def test_a_worker_imports_the_reference_merge_ahead_only_while_no_request_waits(tmp_path):
    """``warm`` (tiktoken's import, for the reference merge) runs while the worker would wait
    anyway; with the request already there it is left to a build that needs it."""
    from continuation.boundary.capsule_worker import _readable

    script = ("import sys; from continuation.boundary.capsule_worker import _warm_tokenizer; "
              "_warm_tokenizer(sys.argv[1], idle=lambda: sys.argv[2] == 'idle'); "
              "print('tiktoken' in sys.modules)")
    seen = {mode: subprocess.run([sys.executable, "-c", script, str(tmp_path), mode],
                                 capture_output=True, text=True, check=True).stdout.strip()
            for mode in ("idle", "busy")}
    assert seen == {"idle": "True", "busy": "False"}
    read, write = os.pipe()
    try:
        assert not _readable(read)
        os.write(write, b"x")
        assert _readable(read)
    finally:
        os.close(read)
        os.close(write)


def _first_frame(tmp_path: Path, prepare) -> dict:
    """The first frame a stand-in worker reads after ``prepare(worker)``."""
    out = tmp_path / "first-frame"
    worker = _fake_worker("import sys; f = sys.stdin.buffer\n"
                          f"open({str(out)!r}, 'wb')"
                          ".write(f.read(int.from_bytes(f.read(8), 'big')))\n")
    prepare(worker)
    assert worker.problem is None
    worker.close()
    worker._proc.wait(timeout=30)
    return pickle.loads(out.read_bytes())


@pytest.mark.parametrize("exact", [True, False])
def test_a_worker_that_will_count_is_told_the_temporary_folder(tmp_path, exact):
    """The first frame carries the system's temporary folder when the worker will load the
    tokenizer: it finds tiktoken's cache folder there without importing ``tempfile``."""
    import tempfile

    expected = {"exact": True, "temp_folder": tempfile.gettempdir()} if exact else {"exact": False}
    assert _first_frame(tmp_path, lambda worker: worker.prepare(exact)) == expected


def test_a_rewinds_worker_finds_the_temporary_folder_itself(tmp_path):
    """A rewind's worker waits for the restore anyway: the rewind's process does not look the
    folder up for it (``tell_temp_folder=False``); the worker then loads the tokenizer as
    it would without being told."""
    assert _first_frame(tmp_path, lambda worker: worker.prepare(True, tell_temp_folder=False)) == {
        "exact": True}


def test_a_worker_told_the_temporary_folder_loads_the_tokenizer_without_tempfile(tmp_path):
    code = ("import sys; from continuation.boundary.capsule_worker import _warm_tokenizer\n"
            "from capsule.tokens import loaded_token_counter, tiktoken_cache_dir\n"
            "_warm_tokenizer(sys.argv[1], sys.argv[2])\n"
            "print(loaded_token_counter().name, tiktoken_cache_dir(), 'tempfile' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    r = subprocess.run([sys.executable, "-P", "-c", code, str(tmp_path / "home"), str(tmp_path)],
                       capture_output=True, text=True, env={**env, "PYTHONPATH": ROOT}, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    name, folder, imported = r.stdout.split()
    assert name and folder == str(tmp_path / "data-gym-cache") and imported == "False"


def test_a_boundary_without_a_temporary_folder_still_prepares_its_worker(tmp_path, monkeypatch):
    """``tempfile.gettempdir()`` fails where no temporary folder is usable: the worker is
    prepared all the same and finds (or misses) tiktoken's cache folder itself."""
    from capsule import tokens

    def unusable() -> str:
        raise FileNotFoundError("No usable temporary directory found")

    monkeypatch.setattr(tokens, "temp_folder", unusable)
    assert _first_frame(tmp_path, lambda worker: worker.prepare(True)) == {"exact": True}
