"""A realistic state home, and the main commands run on it at 80 columns.

``build_world(root)`` records what a week of work leaves: a Claude Code session with 30 long
prompts (UUID ids) and long shell commands, two checkpoints of a 400-file repository where 300
files changed each time (the snapshot's summary names only its first 20), a named fork, a
Codex session killed in the middle of a call, a Gemini session and a few short ones. Used by
``tests/test_cli_fit.py`` (every command and every ``--help`` at 80 columns) and by this
script's ``main``, which prints the terminal session of ``docs/commands.md`` ("A session at 80
columns"); a test checks the document still shows what the commands print.

    python scripts/cli_session.py            # the session, as markdown
    python scripts/cli_session.py --widths   # the widest line of each command (any version)

The session's varying parts are written as the same text every run, at the same width: the
temporary folder as ``/home/you/src/cli-demo``, every time as ``2026-03-02 09:14:07Z`` plus
a minute per distinct time (this machine's name stays: the killed session's marker names it).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLAUDE_SESSION = "0f8a3e6e-9a1b-4c2d-8e3f-1234567890ab"
CODEX_SESSION = "019a3f2e-7b6c-7d8e-9f00-aabbccddeeff"
GEMINI_SESSION = "3c9d2b71-5e4f-4a8b-9c0d-e1f2a3b4c5d6"
FORK_NAME = "try-the-parser-rewrite"
#: a pid no process has (the killed Codex session's)
DEAD_PID = 999_999
REPO_NAME = "payments-service"
FILES = 400
#: the folder the session is shown in, as long as the temporary one it replaces
SHOWN_ROOT = "/home/you/src/cli-demo"

PROMPTS = [
    "refactor the payment retry logic in src/billing/retry.py so that exponential backoff is "
    "capped at 30 seconds and every retry is logged with the attempt number, the provider "
    "response code and the idempotency key",
    "run the whole test suite and fix whatever the refactor broke; do not touch the fixtures "
    "under tests/data unless a test really needs a new one",
    "add a CHANGELOG entry for the retry change and bump the minor version in pyproject.toml",
]
LONG_COMMAND = ("pytest -q tests/billing tests/integration/test_provider_callbacks.py -k "
                "'retry and not slow and not flaky_network' --maxfail=1 -p no:cacheprovider "
                "--durations=20 --junitxml=build/reports/billing-retry.xml")


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid",
           "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _repo(root: Path) -> Path:
    repo = root / "projects" / REPO_NAME
    for n in range(FILES):
        path = repo / "src" / "billing" / f"module_group_{n // 100:02d}" / f"provider_adapter_{n:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {n}\n", encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    return repo


def _edit(repo: Path, numbers, mark: str) -> None:
    for n in numbers:
        path = repo / "src" / "billing" / f"module_group_{n // 100:02d}" / f"provider_adapter_{n:04d}.py"
        path.write_text(f"VALUE = {n}  # {mark}\n", encoding="utf-8")
    for n in numbers[: len(numbers) // 2]:
        extra = repo / "src" / "billing" / "generated" / f"retry_policy_table_{mark}_{n:04d}.py"
        extra.parent.mkdir(parents=True, exist_ok=True)
        extra.write_text("TABLE = []\n", encoding="utf-8")


def _dead_marker() -> dict:
    from continuation.host import liveness

    return {"pid": DEAD_PID, "proc_start": "12345", "host": liveness.hostname()}


def build_world(root: Path) -> dict:
    """The state home and repository under ``root``; returns the environment and folder the
    commands run with (``env``, ``cwd``)."""
    root = Path(root)
    home = root / "state"
    env = {**os.environ, "CONTINUATION_HOME": str(home), "HOME": str(root / "home"),
           "COLUMNS": "80", "CONTINUATION_PROGRESS_AFTER": "3600"}
    env.pop("CONTINUATION_STORE", None)
    (root / "home").mkdir(parents=True, exist_ok=True)
    repo = _repo(root)
    saved = {k: os.environ.get(k) for k in ("CONTINUATION_HOME", "CONTINUATION_STORE")}
    os.environ["CONTINUATION_HOME"] = str(home)
    os.environ.pop("CONTINUATION_STORE", None)
    try:
        _record(home, repo)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"env": env, "cwd": str(repo), "home": str(home), "repo": str(repo)}


def _record(home: Path, repo: Path) -> None:
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.rewind.fork import fork_thread
    from continuation.session.engine import Engine

    with Engine(home) as engine:
        # small threads of other folders, active before the main one
        for n in range(4):
            t = engine.thread("claude", f"side-session-{n:02d}-7d1e2f3a-4b5c-6d7e-8f90",
                              workspace_root=str(home.parent / "projects" / f"side-{n}"))
            t.admit(f"look at issue #{120 + n} and say whether it is a duplicate",
                    input_id=f"side-{n}-prompt", turn_id=f"side-{n}-turn")
            t.turn_completed(f"side-{n}-turn")
        gemini = engine.thread("gemini", GEMINI_SESSION)
        gemini.admit("summarise the open pull requests about the webhook signature check",
                     input_id="gemini-prompt-1", turn_id="gemini-turn-1")
        gemini.turn_completed("gemini-turn-1")

        claude = engine.thread("claude", CLAUDE_SESSION, workspace_root=str(repo))
        for n in range(30):
            turn = f"7c1d{n:04d}-2b3a-4c5d-8e6f-{n:012d}"
            text = PROMPTS[n % len(PROMPTS)] + f" (step {n + 1})"
            claude.admit(text, input_id=f"5e0f{n:04d}-1a2b-4c3d-9e8f-{n:012d}", turn_id=turn)
            call = f"toolu_01{n:04d}ABCDEFGHJKLMNPQRSTUV"
            claude.tool_started(call, "Bash", {"command": LONG_COMMAND}, turn_id=turn)
            if n < 28:
                claude.tool_finished(call, "ok", exit_code=0, output="42 passed", turn_id=turn)
                claude.turn_completed(turn)
            elif n == 28:
                claude.tool_finished(call, "error", exit_code=1, output="1 failed", turn_id=turn)
            if n == 9:
                _edit(repo, range(0, 200), "first")  # 200 modified, 100 new
                commit_checkpoint(claude, reason="manual")
            if n == 19:
                _edit(repo, range(100, 300), "second")
                commit_checkpoint(claude, reason="auto")
        first = [cp for cp in _checkpoints(claude)][0]
        fork_thread(engine, first.checkpoint_id, name=FORK_NAME,
                    session_id="fork-4d5e6f70-8192-4a3b-bc4d-5e6f7a8b9c0d")

        codex = engine.thread("codex", CODEX_SESSION, workspace_root=str(repo))
        marker = _dead_marker()
        codex.admit("deploy the retry change to the staging cluster and watch the error rate "
                    "for ten minutes before you report back", input_id="codex-prompt-1",
                    turn_id="codex-turn-1", session=marker)
        codex.tool_started("call_4n5m6b7v8c9x0z1a2s3d4f5g", "shell",
                           {"command": ["bash", "-lc", "kubectl --context staging-eu-west-1 "
                                        "rollout restart deployment/payments-api && kubectl "
                                        "rollout status deployment/payments-api --timeout=600s"]},
                           turn_id="codex-turn-1", session=marker)
        commit_checkpoint(codex, reason="manual", snapshot=False)  # a second thread's cp-1
    # the most recently active thread is the repository's Claude session
    with Engine(home) as engine:
        engine.get_thread(f"claude-{CLAUDE_SESSION}").admit(
            "now write the migration notes for the on-call runbook", input_id="5e0f-last",
            turn_id="7c1d-last")


def _checkpoints(thread):
    from continuation.boundary.checkpoints import list_checkpoints

    return list_checkpoints(thread)


#: the session shown in docs/commands.md: (command line, what it shows)
SESSION = [
    ["status"],
    ["inputs", "--state", "pending"],
    ["checkpoint", "list"],
    ["rewind", "cp-1", "--files", "--dry-run"],
    ["recover"],
]


def run(world: dict, args: list[str], *, python: str = sys.executable,
        pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = dict(world["env"])
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([python, "-m", "continuation", *args], cwd=world["cwd"], env=env,
                          capture_output=True, timeout=600)


_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ")


def shown(text: str, root: str) -> str:
    """``text`` with this run's varying parts written as in the document (same widths)."""
    text = text.replace(root, SHOWN_ROOT[: len(root)].ljust(len(root), "x"))
    seen: dict[str, str] = {}

    def stamp(m) -> str:
        if m.group() not in seen:
            minute = 14 + len(seen)
            seen[m.group()] = f"2026-03-02 09:{minute:02d}:07Z"
        return seen[m.group()]

    return _TIME.sub(stamp, text)


def session_markdown(world: dict, root: str) -> str:
    out = ["```console"]
    for args in SESSION:
        r = run(world, args)
        out.append("$ continuation " + " ".join(args))
        text = (r.stderr.decode() + r.stdout.decode()).rstrip("\n")
        out += shown(text, root).splitlines()
    out.append("```")
    return "\n".join(out) + "\n"


def new_root() -> Path:
    # under /tmp by name: the shown folder replaces it at the same width on every machine
    return Path(tempfile.mkdtemp(prefix="cli-demo-", dir="/tmp"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--widths", action="store_true",
                   help="print the widest line of each command instead of the session")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter whose continuation runs the commands (--widths)")
    p.add_argument("--pythonpath", default=None,
                   help="a source tree to run instead of the installed one (--widths)")
    args = p.parse_args(argv)
    root = new_root()
    try:
        world = build_world(root)
        if args.widths:
            for line in widths(world, python=args.python, pythonpath=args.pythonpath):
                print(line)
        else:
            sys.stdout.write(session_markdown(world, str(root)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


#: commands whose widest line ``--widths`` reports (older versions: the first spelling that runs)
WIDTH_COMMANDS = [
    [["status"]], [["inputs"]], [["events"]],
    [["checkpoint", "list"], ["checkpoints"]],
    [["rewind", "cp-2", "--files", "--dry-run", "--thread", f"claude-{CLAUDE_SESSION}"]],
    [["rewind", "cp-1", "--both", "--dry-run", "--thread", f"claude-{CLAUDE_SESSION}"]],
    [["drift", "--thread", f"claude-{CLAUDE_SESSION}"]],
    [["recover"]], [["reconcile"]], [["doctor"]], [["gc", "--dry-run"]],
]


def widths(world: dict, *, python: str, pythonpath: str | None) -> list[str]:
    out = []
    for spellings in WIDTH_COMMANDS:
        for args in spellings:
            r = run(world, args, python=python, pythonpath=pythonpath)
            if r.returncode in (0, 1) and r.stdout:
                lines = r.stdout.decode().splitlines()
                widest = max((len(line) for line in lines), default=0)
                out.append(f"{' '.join(args)}\t{widest}\t{len(lines)} lines")
                break
        else:
            out.append(f"{' '.join(spellings[0])}\t-\t(exit {r.returncode})")
    return out


if __name__ == "__main__":
    sys.exit(main())
