"""An isolated place to run a scenario: its own HOME, state home and workspaces.

Nothing a scenario does reaches the user's HOME or state home: every process it starts gets an
environment whose HOME, XDG_* and CONTINUATION_HOME point inside a fresh temporary folder,
removed afterwards. ``continuation`` itself is run as ``[sys.executable, "-m", "continuation"]``
so it is the same installation as the one running prove, in any virtualenv.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "continuation"]
GIT_ENV = {"GIT_AUTHOR_NAME": "prove", "GIT_AUTHOR_EMAIL": "prove@example.invalid",
           "GIT_COMMITTER_NAME": "prove", "GIT_COMMITTER_EMAIL": "prove@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}
_DROP = ("CONTINUATION_FAULT", "CONTINUATION_STRICT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")


class Sandbox:
    def __init__(self, label: str):
        self.root = Path(tempfile.mkdtemp(prefix=f"continuation-prove-{label}-"))
        self.home = self.root / "home"
        self.state = self.root / "state"
        self.runs = self.root / "runs"
        for p in (self.home, self.state, self.runs):
            p.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if k not in _DROP}
        self.env.update(GIT_ENV)
        self.env.update(HOME=str(self.home), USERPROFILE=str(self.home),
                        XDG_STATE_HOME=str(self.home / ".local" / "state"),
                        XDG_CONFIG_HOME=str(self.home / ".config"),
                        XDG_DATA_HOME=str(self.home / ".local" / "share"),
                        CONTINUATION_HOME=str(self.state), PYTHONIOENCODING="utf-8")
        # the package must be importable from the child even when run from a source tree
        pkg_parent = str(Path(__file__).resolve().parents[2])
        self.env["PYTHONPATH"] = os.pathsep.join(
            [pkg_parent] + ([self.env["PYTHONPATH"]] if self.env.get("PYTHONPATH") else []))

    def close(self) -> None:
        if os.environ.get("CONTINUATION_PROVE_KEEP"):  # for debugging a failing scenario
            sys.stderr.write(f"continuation prove: kept {self.root}\n")
            return
        for _ in range(5):  # a process of the scenario being stopped may still write there
            shutil.rmtree(self.root, ignore_errors=True)
            if not self.root.exists():
                return
            time.sleep(0.2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- commands ----------------------------------------------------------------------------
    def cli(self, *args: str, input: bytes | None = None, timeout: float = 60,
            env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, *args], input=input, capture_output=True, timeout=timeout,
                              env={**self.env, **(env or {})}, cwd=str(self.root))

    def cli_json(self, *args: str):
        proc = self.cli(*args)
        if proc.returncode != 0:
            raise RuntimeError(f"`continuation {' '.join(args)}` exited {proc.returncode}: "
                               f"{proc.stderr.decode(errors='replace').strip()[:300]}")
        return json.loads(proc.stdout.decode("utf-8"))

    def git(self, cwd: Path, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True,
                              env=self.env, timeout=60)
        if check and proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
        return proc.stdout.decode("utf-8", "replace")

    # -- workspaces --------------------------------------------------------------------------
    def workspace(self, name: str, kind: str = "clean") -> Path:
        """A folder of one kind: clean, dirty, detached, unborn (git) or plain (not git)."""
        ws = self.root / "ws" / name
        ws.mkdir(parents=True)
        if kind == "plain":
            (ws / "readme.txt").write_text("not a repository\n", encoding="utf-8")
            return ws
        self.git(ws, "init", "-q", "-b", "main")
        if kind == "unborn":
            (ws / "draft.txt").write_text("nothing committed yet\n", encoding="utf-8")
            return ws
        (ws / "notes.txt").write_text("first\n", encoding="utf-8")
        (ws / "app.py").write_text("print('hi')\n", encoding="utf-8")
        self.git(ws, "add", "-A")
        self.git(ws, "commit", "-q", "-m", "initial")
        (ws / "app.py").write_text("print('hi again')\n", encoding="utf-8")
        self.git(ws, "commit", "-q", "-am", "second")
        if kind == "detached":
            self.git(ws, "checkout", "-q", "--detach", "HEAD~1")
        if kind == "dirty":
            (ws / "notes.txt").write_text("first\nuncommitted edit\n", encoding="utf-8")
            (ws / "untracked.txt").write_text("new file\n", encoding="utf-8")
            (ws / "staged.txt").write_text("staged\n", encoding="utf-8")
            self.git(ws, "add", "staged.txt")
        return ws

    def git_fingerprint(self, ws: Path) -> dict:
        """Everything of the user's git a snapshot must not touch."""
        if not (ws / ".git").exists():
            return {"files": sorted(p.name for p in ws.iterdir())}
        git_dir = ws / ".git"
        index = git_dir / "index"
        return {
            "head_file": (git_dir / "HEAD").read_text(encoding="utf-8"),
            "head": self.git(ws, "rev-parse", "-q", "--verify", "HEAD", check=False).strip(),
            "index": index.read_bytes().hex() if index.exists() else None,
            "status": self.git(ws, "status", "--porcelain=v1", "--untracked-files=all"),
            "stash": self.git(ws, "stash", "list", check=False),
            "config": (git_dir / "config").read_text(encoding="utf-8"),
            "branches": self.git(ws, "for-each-ref", "refs/heads", "refs/tags"),
        }


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return False
