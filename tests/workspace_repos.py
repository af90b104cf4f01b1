"""Helpers for workspace tests: build repository shapes with the real git CLI, capture user state.

Every test gets its own HOME and GIT_CONFIG_GLOBAL (and no system config), so the developer's
git configuration never leaks in.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


@pytest.fixture
def git_home(tmp_path, monkeypatch) -> Path:
    """Isolated git environment; returns the state home for the workspace package."""
    fake_home = tmp_path / "home"
    fake_home.mkdir()
    (fake_home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n", encoding="utf-8"
    )
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(fake_home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(key, raising=False)
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)
    return tmp_path / "state"


def git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make_repo(root: Path, files: dict[str, str | bytes] | None = None, *, commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    if files:
        write(root, files)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", "initial")
    return root


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _tree_files(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass
class UserGitState:
    """Everything of the user's git a checkpoint must leave alone."""

    head: str
    branch: str
    index: bytes | None
    stash: str
    status: str
    config: bytes | None
    hooks: dict[str, bytes]
    refs: str
    state_files: dict[str, bytes | None]
    head_log: bytes | None

    @classmethod
    def capture(cls, repo: Path) -> "UserGitState":
        git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
        read_only = {"GIT_OPTIONAL_LOCKS": "0"}  # capturing must not refresh .git/index itself
        return cls(
            head=git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False).strip(),
            branch=git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip(),
            index=_read(git_dir / "index"),
            stash=git(repo, "stash", "list", env=read_only),
            status=git(repo, "status", "--porcelain", "--untracked-files=all", env=read_only),
            config=_read(git_dir / "config"),
            hooks=_tree_files(git_dir / "hooks"),
            refs="\n".join(
                line
                for line in git(repo, "for-each-ref", "--format=%(objectname) %(refname)").splitlines()
                if " refs/continuation/" not in line
            ),
            state_files={
                name: _read(git_dir / name)
                for name in ("MERGE_HEAD", "MERGE_MSG", "CHERRY_PICK_HEAD", "ORIG_HEAD", "FETCH_HEAD", "packed-refs")
            }
            | {"rebase-merge": str(_tree_files(git_dir / "rebase-merge")).encode()},
            head_log=_read(git_dir / "logs" / "HEAD"),
        )


def assert_untouched(before: UserGitState, repo: Path) -> None:
    after = UserGitState.capture(repo)
    for field in ("head", "branch", "index", "stash", "status", "config", "hooks", "refs", "state_files", "head_log"):
        assert getattr(after, field) == getattr(before, field), f"user's {field} changed"


def worktree_files(root: Path, *, skip_git: bool = True) -> dict[str, bytes]:
    """Every file (and symlink, as 'link->target') under root, for exact before/after comparisons."""
    result: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if skip_git and (rel == ".git" or rel.startswith(".git/") or "/.git/" in rel or rel.endswith("/.git")):
            continue
        if path.is_symlink():
            result[rel] = b"link->" + os.readlink(path).encode()
        elif path.is_file():
            result[rel] = path.read_bytes()
    return result


@pytest.fixture
def git_commands(monkeypatch) -> list[str]:
    """The git commands the workspace package runs from now on (their first argument)."""
    from continuation.workspace import gitrun

    seen: list[str] = []
    run = gitrun.GitTarget.run

    def recording(self, args, **kwargs):
        seen.append(args[0])
        return run(self, args, **kwargs)

    monkeypatch.setattr(gitrun.GitTarget, "run", recording)
    return seen
