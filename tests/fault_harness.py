"""Fault injection harness: a scripted agent session killed with SIGKILL at a persistence point.

A *fake runtime* process runs the script's hook payloads one by one through the real
``continuation hook --runtime claude`` command, each through ``sh -c`` exactly as Claude Code and
Codex run command hooks, in a temporary git repository. For one step the hook gets
``CONTINUATION_FAULT=<point>`` (see ``continuation.host.faults``): when it reaches that point it
SIGKILLs itself; the fake runtime notes which hooks were *acknowledged* (exited normally) and
then SIGKILLs itself too, so the session's owner is gone without a clean end (the runtime also
kills itself at the end of the script when the point was never reached: every session crashes).

Then :func:`check_recovery` restarts: runs ``continuation recover`` (a fresh process) and checks

- every fact of every acknowledged hook is in the log (``facts_lost`` must be 0);
- the derived tables equal the replay of the log;
- the current or the previous capsule is valid (``checkpoints.load``);
- no temp files are left after recovery;
- the user's git is untouched (HEAD, branch, index bytes, status, stash, refs outside
  ``refs/continuation``);
- every tool call whose start is durable and that has no outcome is ``unknown`` and holds its
  input in ``reconciling``.

Used by ``tests/test_faults_*.py`` and ``scripts/fault_report.py``.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SESSION = "fault-session-1"
RUNTIME = "claude"
#: the step whose hook is armed for each kind of point (PreCompact does the checkpoint work)
PRECOMPACT_STEP = 8
#: the first fact each armed hook appends through the store (where event.* points strike); a
#: PreCompact appends none of its own: its boundary is committed with its checkpoint
FIRST_APPEND = {0: ("session_started", "source", "startup"), 6: ("tool_started", "call_id", "t2"),
                9: ("session_started", "source", "compact")}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fault Harness", "GIT_AUTHOR_EMAIL": "fault@example.com",
    "GIT_COMMITTER_NAME": "Fault Harness", "GIT_COMMITTER_EMAIL": "fault@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}

FAKE_RUNTIME = r"""
import json, os, signal, subprocess, sys
steps = json.load(open(sys.argv[1], encoding="utf-8"))
ack_path, hook_cmd = sys.argv[2], sys.argv[3]

def note(entry):
    with open(ack_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()
        os.fsync(fh.fileno())

note({"runtime_pid": os.getpid()})
for i, step in enumerate(steps):
    env = dict(os.environ)
    env.pop("CONTINUATION_FAULT", None)
    if step.get("fault"):
        env["CONTINUATION_FAULT"] = step["fault"]
    r = subprocess.run(["sh", "-c", hook_cmd], input=json.dumps(step["payload"]).encode(),
                       env=env, capture_output=True)
    if r.returncode == 0:
        note({"step": i, "ack": True, "stdout": r.stdout.decode("utf-8", "replace")})
    else:
        note({"step": i, "ack": False, "returncode": r.returncode,
              "stderr": r.stderr.decode("utf-8", "replace")[-500:]})
        break
os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
"""


def payload(event: str, cwd: Path, **fields) -> dict:
    return {"session_id": SESSION, "cwd": str(cwd), "hook_event_name": event,
            "transcript_path": str(cwd.parent / "transcript.jsonl"), **fields}


def script(repo: Path) -> list[dict]:
    """The scripted session: (payload, expected facts once acknowledged)."""
    p = lambda event, **kw: payload(event, repo, **kw)  # noqa: E731
    return [
        {"payload": p("SessionStart", source="startup"),
         "facts": [("session_started", "source", "startup")]},
        {"payload": p("UserPromptSubmit", prompt_id="p1", prompt="list the files"),
         "facts": [("input_admitted", "input_id", "p1")]},
        {"payload": p("PreToolUse", prompt_id="p1", tool_name="Bash",
                      tool_input={"command": "ls -la"}, tool_use_id="t1"),
         "facts": [("tool_started", "call_id", "t1")]},
        {"payload": p("PostToolUse", prompt_id="p1", tool_name="Bash",
                      tool_input={"command": "ls -la"}, tool_use_id="t1",
                      tool_response={"stdout": "notes.txt", "stderr": "", "interrupted": False}),
         "facts": [("tool_finished", "call_id", "t1")]},
        {"payload": p("Stop", prompt_id="p1", last_assistant_message="listed"),
         "facts": [("turn_completed", "turn_id", "p1")]},
        {"payload": p("UserPromptSubmit", prompt_id="p2",
                      prompt="publish the package and write the changelog"),
         "facts": [("input_admitted", "input_id", "p2")]},
        {"payload": p("PreToolUse", prompt_id="p2", tool_name="Bash",
                      tool_input={"command": "npm publish"}, tool_use_id="t2"),
         "facts": [("tool_started", "call_id", "t2")]},
        {"payload": p("PreToolUse", prompt_id="p2", tool_name="Write",
                      tool_input={"file_path": str(repo / "CHANGELOG.md"), "content": "v1\n"},
                      tool_use_id="t3"),
         "facts": [("tool_started", "call_id", "t3")]},
        {"payload": p("PreCompact", prompt_id="p2", trigger="auto"),
         "facts": [("checkpoint_committed", None, None), ("boundary", "kind", "compact")]},
        {"payload": p("SessionStart", source="compact"),
         "facts": [("context_delivered", None, None)]},
        {"payload": p("PreToolUse", prompt_id="p2", tool_name="Read",
                      tool_input={"file_path": str(repo / "notes.txt")}, tool_use_id="t4"),
         "facts": [("tool_started", "call_id", "t4")]},
    ]


# -- the user's repository -----------------------------------------------------------------------
def git(repo: Path, *args: str, env: dict | None = None) -> str:
    r = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                       encoding="utf-8", env={**os.environ, **GIT_ENV, **(env or {})})
    if r.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {r.stderr}")
    return r.stdout


def make_repo(root: Path) -> Path:
    """A repository with a commit, a staged change, an unstaged change and an untracked file."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "notes.txt").write_text("one\n", encoding="utf-8")
    (root / "src.py").write_text("print('hi')\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    (root / "src.py").write_text("print('staged')\n", encoding="utf-8")
    git(root, "add", "src.py")
    (root / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "draft.md").write_text("untracked\n", encoding="utf-8")
    return root


@dataclass
class GitState:
    head: str
    branch: str
    index: bytes
    status: str
    stash: str
    refs: str

    @classmethod
    def capture(cls, repo: Path) -> "GitState":
        refs = "\n".join(line for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
                         .splitlines() if not line.startswith("refs/continuation/"))
        return cls(head=git(repo, "rev-parse", "HEAD").strip(),
                   branch=git(repo, "symbolic-ref", "-q", "HEAD").strip(),
                   index=(repo / ".git" / "index").read_bytes(),
                   status=git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all"),
                   stash=git(repo, "stash", "list"), refs=refs)


# -- one run ---------------------------------------------------------------------------------------
@dataclass
class FaultRun:
    point: str | None
    arm_step: int | None
    home: Path
    repo: Path
    steps: list[dict]
    git_before: GitState
    acks: list[dict] = field(default_factory=list)
    runtime_pid: int | None = None
    runtime_returncode: int | None = None

    @property
    def killed_step(self) -> int | None:
        for a in self.acks:
            if a.get("ack") is False:
                return a["step"]
        return None

    @property
    def injected(self) -> bool:
        """The hook died at the armed step (the point was reached and killed it)."""
        return self.point is not None and self.killed_step == self.arm_step

    @property
    def acknowledged(self) -> list[int]:
        return [a["step"] for a in self.acks if a.get("ack") is True]


def hook_command() -> str:
    return f"{shlex.quote(sys.executable)} -m continuation hook --runtime {RUNTIME}"


def base_env(home: Path, tmp: Path) -> dict:
    user_home = tmp / "userhome"
    user_home.mkdir(exist_ok=True)
    env = {**os.environ, **GIT_ENV, "CONTINUATION_HOME": str(home), "HOME": str(user_home),
           "GIT_CONFIG_GLOBAL": str(user_home / ".gitconfig")}
    for key in ("CONTINUATION_FAULT", "CONTINUATION_STRICT", "GIT_DIR", "GIT_WORK_TREE",
                "GIT_INDEX_FILE"):
        env.pop(key, None)
    return env


def run_session(tmp: Path, point: str | None, arm_step: int | None, *, timeout: float = 240) -> FaultRun:
    """Run the scripted session once, with ``point`` armed for the hook of ``arm_step``."""
    tmp.mkdir(parents=True, exist_ok=True)
    home = tmp / "state"
    repo = make_repo(tmp / "repo")
    steps = script(repo)
    if point is not None:
        steps[arm_step]["fault"] = point
    script_file = tmp / "steps.json"
    script_file.write_text(json.dumps([{"payload": s["payload"], "fault": s.get("fault")}
                                       for s in steps]), encoding="utf-8")
    ack_file = tmp / "acks.jsonl"
    run = FaultRun(point, arm_step, home, repo, steps, GitState.capture(repo))
    proc = subprocess.run([sys.executable, "-c", FAKE_RUNTIME, str(script_file), str(ack_file),
                           hook_command()], env=base_env(home, tmp), cwd=repo, timeout=timeout,
                          capture_output=True)
    run.runtime_returncode = proc.returncode
    lines = ack_file.read_text(encoding="utf-8").splitlines() if ack_file.exists() else []
    entries = [json.loads(line) for line in lines if line.strip()]
    run.runtime_pid = next((e["runtime_pid"] for e in entries if "runtime_pid" in e), None)
    run.acks = [e for e in entries if "step" in e]
    return run


# -- the checks after restart ------------------------------------------------------------------------
@dataclass
class Recovery:
    facts_expected: int = 0
    facts_lost: list[str] = field(default_factory=list)
    derived_equals_replay: bool = True
    capsule_problem: str | None = None
    checkpoints: int = 0
    temps_before: list[str] = field(default_factory=list)
    temps_after: list[str] = field(default_factory=list)
    git_untouched: bool = True
    git_diff: list[str] = field(default_factory=list)
    not_reconciling: list[str] = field(default_factory=list)
    reconciling_calls: list[str] = field(default_factory=list)
    crash_recorded: bool = False
    recover_output: dict = field(default_factory=dict)
    owner_pids: list[int] = field(default_factory=list)

    def failures(self, run: FaultRun) -> list[str]:
        out = []
        if self.facts_lost:
            out.append(f"facts lost: {self.facts_lost}")
        if not self.derived_equals_replay:
            out.append("derived state differs from the replay of the log")
        if self.capsule_problem:
            out.append(f"capsule: {self.capsule_problem}")
        if self.temps_after:
            out.append(f"temp files left: {self.temps_after}")
        if not self.git_untouched:
            out.append(f"user's git changed: {self.git_diff}")
        if self.not_reconciling:
            out.append(f"in-flight calls not reconciling: {self.not_reconciling}")
        if self.owner_pids and set(self.owner_pids) != {run.runtime_pid}:
            out.append(f"session markers name pids {self.owner_pids}, not the runtime "
                       f"{run.runtime_pid} (the hook runs under `sh -c`)")
        return out


def _has(events: list[dict], etype: str, key: str | None, value) -> bool:
    return any(e["type"] == etype and (key is None or e["data"].get(key) == value) for e in events)


def recover_command(home: Path, tmp: Path) -> dict:
    """``continuation recover --json`` in a fresh process (the restart)."""
    r = subprocess.run([sys.executable, "-m", "continuation", "recover", "--record", "--json", "--stale-after", "0"],
                       env=base_env(home, tmp), capture_output=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"continuation recover failed ({r.returncode}): {r.stderr.decode()}")
    return json.loads(r.stdout)


def check_recovery(run: FaultRun, tmp: Path) -> Recovery:
    from continuation.boundary import checkpoints
    from continuation.session.engine import Engine
    from continuation.recovery.cleanup import stale_temps

    rep = Recovery()
    rep.temps_before = [str(p) for p in stale_temps(run.home, min_age=0)] if run.home.exists() else []
    if (run.home / "store.sqlite3").exists():
        rep.recover_output = recover_command(run.home, tmp)
        rep.crash_recorded = bool(rep.recover_output.get("crash_recorded"))
    rep.temps_after = [str(p) for p in stale_temps(run.home, min_age=0)] if run.home.exists() else []

    events: list[dict] = []
    if (run.home / "store.sqlite3").exists():
        with Engine(run.home, create=False) as engine:
            thread = engine.find_thread(RUNTIME, SESSION)
            if thread is not None:
                events = thread.events()
                store = engine.store
                rep.owner_pids = sorted({r["pid"] for r in store.sessions(thread.key)})
                rep.derived_equals_replay = (store.derived_state(thread.key).snapshot()
                                             == store.replay(thread.key).snapshot())
                cps = checkpoints.list_checkpoints(thread)
                rep.checkpoints = len(cps)
                try:
                    loaded = checkpoints.load(thread)
                    if cps and loaded is None:
                        rep.capsule_problem = "checkpoints exist but none loads"
                except Exception as exc:
                    rep.capsule_problem = str(exc)
                for cp in cps:
                    if checkpoints.verify(cp):
                        rep.capsule_problem = checkpoints.verify(cp)
                calls = {c.call_id: c for c in thread.tool_calls()}
                inputs = {r.input_id: r for r in thread.inputs()}
                for call in calls.values():
                    if call.status in ("ok", "error"):
                        continue
                    held = [r for r in inputs.values() if call.call_id in (r.unknown_calls or [])]
                    if call.status != "unknown" or not held or any(r.state != "reconciling" for r in held):
                        rep.not_reconciling.append(
                            f"{call.call_id}: status {call.status}, inputs "
                            f"{[(r.input_id, r.state) for r in held]}")
                    else:
                        rep.reconciling_calls.append(call.call_id)
    for step in run.acknowledged:
        for etype, key, value in run.steps[step]["facts"]:
            rep.facts_expected += 1
            if not _has(events, etype, key, value):
                rep.facts_lost.append(f"step {step}: {etype} {key}={value}")
    after = GitState.capture(run.repo)
    for name in ("head", "branch", "index", "status", "stash", "refs"):
        if getattr(after, name) != getattr(run.git_before, name):
            rep.git_untouched = False
            rep.git_diff.append(name)
    return rep


@dataclass
class Tally:
    points_injected: int = 0
    sessions_killed: int = 0
    facts_expected: int = 0
    facts_lost: int = 0
    runs: list[dict] = field(default_factory=list)

    def add(self, run: FaultRun, rep: Recovery) -> None:
        self.points_injected += int(run.injected)
        self.sessions_killed += int(run.runtime_returncode == -getattr(signal, "SIGKILL", 9))
        self.facts_expected += rep.facts_expected
        self.facts_lost += len(rep.facts_lost)
        self.runs.append({"point": run.point, "step": run.arm_step, "injected": run.injected,
                          "acknowledged": len(run.acknowledged), "checkpoints": rep.checkpoints,
                          "reconciling": rep.reconciling_calls, "failures": rep.failures(run)})

    def summary(self) -> str:
        return (f"points injected: {self.points_injected}, sessions killed: {self.sessions_killed}, "
                f"facts expected: {self.facts_expected}, facts lost: {self.facts_lost}")


def matrix() -> list[tuple[str | None, int | None]]:
    """Every kill point, at the hook steps that reach it."""
    from continuation.host.faults import POINTS

    out: list[tuple[str | None, int | None]] = [(None, None)]
    for point in POINTS:
        if point.startswith("event."):
            out += [(point, step) for step in FIRST_APPEND]
        else:
            out.append((point, PRECOMPACT_STEP))
    return out
