"""Checkpoints of one thread racing each other in real processes.

Each round starts ``precompacts`` Claude Code PreCompact hooks (``continuation hook``, fail open)
and ``manual`` ``continuation checkpoint`` commands on the same thread at the same instant (every
worker has done its imports and waits for a start file), while each writes a file of its own
in the workspace, so that the snapshots differ. Then, after ``git gc --prune=now``, the checks:
every PreCompact recorded its boundary, every worker committed its checkpoint, each checkpoint's
ref names the commit it records, every checkpoint's files can still be planned for restore, and
``doctor`` finds nothing wrong with the refs. Used by tests/test_checkpoint_race.py and
scripts/fault_race.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SESSION = "race-session"

WORKER = r"""
import json, os, sys, time
from pathlib import Path
role, index, repo, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
# everything heavy is imported before the start line, so the workers really race
import tiktoken  # noqa: F401
import capsule.budget, capsule.render, continuation.boundary.capsule_source  # noqa: F401
import continuation.boundary.crossing, continuation.workspace.snapshot, continuation.session.workspace_link  # noqa: F401
from continuation import cli, hooks
while not go.exists():
    time.sleep(0.002)
(repo / f"{role}-{index}.txt").write_text(f"written by {role} {index}\n")
if role == "precompact":
    payload = {"session_id": sys.argv[5], "hook_event_name": "PreCompact", "trigger": "auto",
               "cwd": str(repo), "transcript_path": ""}
    out, code = hooks.run("claude", json.dumps(payload).encode())
    sys.exit(code)
sys.exit(cli.main(["checkpoint", "--thread", sys.argv[5], "--json"]))
"""


@dataclass
class RaceReport:
    rounds: int = 0
    precompacts: int = 0
    manual: int = 0
    worker_failures: list[str] = field(default_factory=list)
    boundaries: int = 0
    checkpoints: int = 0
    mismatched_refs: list[str] = field(default_factory=list)
    unrestorable: list[str] = field(default_factory=list)
    doctor_problems: list[str] = field(default_factory=list)
    hook_errors: list[str] = field(default_factory=list)

    @property
    def boundaries_lost(self) -> int:
        return self.precompacts - self.boundaries

    @property
    def checkpoints_lost(self) -> int:
        return self.precompacts + self.manual - self.checkpoints

    @property
    def lost(self) -> int:
        return (max(0, self.boundaries_lost) + max(0, self.checkpoints_lost)
                + len(self.mismatched_refs) + len(self.unrestorable))

    def summary(self) -> str:
        return (f"race: {self.rounds} round(s) of {self.precompacts // max(1, self.rounds)} "
                f"PreCompact + {self.manual // max(1, self.rounds)} `continuation checkpoint` on one "
                f"thread: boundaries lost {self.boundaries_lost} of {self.precompacts}, checkpoints "
                f"lost {self.checkpoints_lost} of {self.precompacts + self.manual}, refs not naming "
                f"their checkpoint's commit {len(self.mismatched_refs)}, unrestorable after "
                f"`git gc --prune=now` {len(self.unrestorable)}, doctor problems "
                f"{len(self.doctor_problems)}, hook errors {len(self.hook_errors)}; lost {self.lost}")


def isolated_env(base: Path) -> dict[str, str]:
    """A state home and a git configuration of our own (no user config, fixed identity)."""
    fake_home = base / "home"
    fake_home.mkdir(parents=True, exist_ok=True)
    gitconfig = fake_home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k not in ("CONTINUATION_HOME", "CONTINUATION_STRICT")}
    env.update(HOME=str(fake_home), GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1",
               CONTINUATION_HOME=str(base / "state"), GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    return env


def _git(repo: Path, env: dict, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout


def run_race(base: Path, *, rounds: int = 3, precompacts: int = 2, manual: int = 2,
             timeout: float = 300) -> RaceReport:
    base = Path(base)
    env = isolated_env(base)
    repo = base / "repo"
    repo.mkdir(parents=True)
    _git(repo, env, "init", "-q")
    (repo / "README.md").write_text("race\n")
    _git(repo, env, "add", "README.md")
    _git(repo, env, "commit", "-q", "-m", "init")
    home = Path(env["CONTINUATION_HOME"])

    from continuation.session.engine import Engine

    with Engine(home) as engine:
        thread = engine.thread("claude", SESSION, workspace_root=str(repo))
        thread.admit("keep going", input_id="p1")
    report = RaceReport(rounds=rounds, precompacts=rounds * precompacts, manual=rounds * manual)
    for round_ in range(rounds):
        go = base / f"go-{round_}"
        roles = ["precompact"] * precompacts + ["manual"] * manual
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, role, f"{round_}-{i}", str(repo),
                                   str(go), SESSION], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
                 for i, role in enumerate(roles)]
        time.sleep(min(30.0, 1.5 + 0.4 * len(procs)))  # let every worker reach the start line
        go.write_text("go")
        for role, proc in zip(roles, procs):
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                report.worker_failures.append(f"{role}: exit {proc.returncode}: "
                                              f"{err.decode(errors='replace').strip()[-300:]}")
    _git(repo, env, "-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now",
         "gc", "--quiet", "--prune=now")
    _verify(report, home, env)
    return report


def _verify(report: RaceReport, home: Path, env: dict) -> None:
    from statemachine import events as ev

    from continuation.boundary import checkpoints
    from continuation.session.engine import Engine
    from continuation.commands.health import PROBLEM, WARN, check_checkpoint_refs
    from continuation.workspace import WorkspaceError, WorkspaceRef, plan_restore

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # git commands below see the same isolated configuration
    try:
        with Engine(home) as engine:
            thread = engine.thread("claude", SESSION)
            report.boundaries = sum(1 for e in thread.events()
                                    if e["type"] == ev.BOUNDARY and e["data"].get("kind") == "compact")
            cps = checkpoints.list_checkpoints(thread)
            report.checkpoints = len(cps)
            for cp in cps:
                ws = cp.workspace or {}
                ref, commit = ws.get("snapshot_ref"), ws.get("snapshot_commit")
                if not ref or not commit:
                    report.unrestorable.append(f"{cp.checkpoint_id}: no snapshot ({ws.get('error')})")
                    continue
                named = subprocess.run(["git", "rev-parse", "--verify", "--quiet", ref],
                                       cwd=ws["root"], env=env, capture_output=True, text=True)
                if named.stdout.strip() != commit:
                    report.mismatched_refs.append(f"{cp.checkpoint_id}: {ref} names "
                                                  f"{named.stdout.strip()[:12] or 'nothing'}, "
                                                  f"recorded {commit[:12]}")
                try:
                    plan_restore(WorkspaceRef.from_dict(ws), state_home=home)
                except WorkspaceError as exc:
                    report.unrestorable.append(f"{cp.checkpoint_id}: {exc}")
            report.doctor_problems = [f.message for f in check_checkpoint_refs(engine)
                                      if f.status in (PROBLEM, WARN)]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    log = home / "logs" / "hooks.log"
    if log.exists():
        report.hook_errors = [line for line in log.read_text(errors="replace").splitlines()
                              if " error=" in line]


def main(argv: list[str]) -> int:  # pragma: no cover - used through scripts/fault_race.py
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--precompacts", type=int, default=2)
    parser.add_argument("--manual", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="continuation-race-") as tmp:
        report = run_race(Path(tmp), rounds=args.rounds, precompacts=args.precompacts,
                          manual=args.manual)
    if args.json:
        print(json.dumps({**report.__dict__, "boundaries_lost": report.boundaries_lost,
                          "checkpoints_lost": report.checkpoints_lost, "lost": report.lost},
                         indent=2))
    else:
        for item in (report.worker_failures + report.mismatched_refs + report.unrestorable
                     + report.doctor_problems + report.hook_errors):
            print("  " + item)
        print(report.summary())
    return 0 if report.lost == 0 and not report.worker_failures and not report.doctor_problems \
        else 1
