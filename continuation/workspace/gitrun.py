"""Running git against the user's repository (or a shadow one) without side effects.

Every command gets an explicit GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE (so variables inherited
from a parent git process cannot redirect it), an empty hooks folder (no hook, including
``reference-transaction`` and ``post-index-change``, can run), no fsmonitor, no split index, no
reflog, no signing, and a fixed author/committer identity.

The commands are plumbing run as processes (``write-tree``, ``commit-tree``, ``update-ref``,
``diff``...): nothing here uses GitPython's repository objects, so they run through
``subprocess`` directly. Importing GitPython for its process runner cost every boundary
~70 ms; no module of the engine imports GitPython now.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from continuation.host.paths import ensure_private_dir, holds_git
from continuation.workspace.errors import GitFailure, WorkspaceError
from continuation.workspace.layout import StateLayout

#: the git executable (``GIT_PYTHON_GIT_EXECUTABLE`` is honoured, as GitPython did)
GIT = os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"

IDENTITY = {
    "GIT_AUTHOR_NAME": "continuation",
    "GIT_AUTHOR_EMAIL": "continuation@localhost",
    "GIT_COMMITTER_NAME": "continuation",
    "GIT_COMMITTER_EMAIL": "continuation@localhost",
}


def _config_args(layout: StateLayout) -> list[str]:
    settings = {
        "core.hooksPath": str(layout.no_hooks_dir),
        "core.fsmonitor": "false",
        "core.splitIndex": "false",
        "core.logAllRefUpdates": "false",
        "commit.gpgSign": "false",
        "gc.auto": "0",
        "maintenance.auto": "false",
        "advice.addEmbeddedRepo": "false",
        "status.showStash": "false",
    }
    args: list[str] = []
    for key, value in settings.items():
        args += ["-c", f"{key}={value}"]
    return args


@dataclass(frozen=True)
class GitTarget:
    """A repository plus work tree that commands run against."""

    work_tree: Path
    git_dir: Path
    common_dir: Path | None  # None only while discovering (git reads it from the gitfile)
    kind: Literal["git", "shadow"]
    layout: StateLayout

    @property
    def user_index(self) -> Path:
        return self.git_dir / "index"

    def env(self, index: Path | None, *, optional_locks: bool = True) -> dict[str, str]:
        env = {
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.work_tree),
            "GIT_INDEX_FILE": str(index if index is not None else self.user_index),
            "GIT_NAMESPACE": "",
            "GIT_TERMINAL_PROMPT": "0",
            # Commands pointed at the user's own index must never refresh (rewrite) it.
            "GIT_OPTIONAL_LOCKS": "1" if optional_locks and index is not None else "0",
            **IDENTITY,
        }
        if self.common_dir is not None:
            env["GIT_COMMON_DIR"] = str(self.common_dir)
        # Inherited from a parent git process these would point elsewhere; GitPython cannot
        # unset variables, so pin them to this repository's own values.
        if "GIT_OBJECT_DIRECTORY" in os.environ and self.common_dir is not None:
            env["GIT_OBJECT_DIRECTORY"] = str(self.common_dir / "objects")
        if "GIT_ALTERNATE_OBJECT_DIRECTORIES" in os.environ:
            env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = ""
        return env

    def run(
        self,
        args: list[str],
        *,
        index: Path | None = None,
        stdin: bytes | None = None,
        check: bool = True,
        optional_locks: bool = True,
    ) -> tuple[int, bytes, str]:
        """Run ``git <args>``; return (exit code, stdout bytes, stderr text)."""
        command = [GIT, *_config_args(self.layout), *args]
        try:
            proc = subprocess.run(
                command,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                cwd=str(self.work_tree),
                # messages in C locale, as GitPython ran them (errors are matched in English)
                env={**os.environ, "LANGUAGE": "C", "LC_ALL": "C",
                     **self.env(index, optional_locks=optional_locks)},
            )
        except OSError as exc:  # no git executable, or the work tree vanished
            raise WorkspaceError(f"cannot run git (workspace snapshots need a git executable): {exc}") from exc
        err = proc.stderr.decode("utf-8", "replace")
        if check and proc.returncode != 0:
            raise GitFailure(args, proc.returncode, err)
        return proc.returncode, proc.stdout, err

    def out(self, args: list[str], **kwargs) -> str:
        return self.run(args, **kwargs)[1].decode("utf-8", "surrogateescape").strip()


def find_git_entry(root: Path) -> Path | None:
    """The nearest ``.git`` (folder or gitfile) at or above root, as git's own discovery finds
    it (``host.paths.holds_git``: an empty ``.git`` folder is passed over)."""
    for folder in (root, *root.parents):
        if holds_git(folder):
            return folder / ".git"
    return None


def open_git_target(root: Path, layout: StateLayout) -> GitTarget | None:
    """The user's repository containing ``root``, or None when root is not inside one."""
    entry = find_git_entry(root)
    if entry is None:
        return None
    layout.ensure()
    dirs = _read_git_dirs(entry)
    if dirs is not None:  # the common layouts, read directly: saves a git process per call
        return GitTarget(entry.parent.resolve(), dirs[0], dirs[1], "git", layout)
    provisional = GitTarget(entry.parent, entry, None, "git", layout)
    code, out, err = provisional.run(
        ["rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir"],
        check=False,
        optional_locks=False,
        index=layout.tmp_dir / "unused.index",
    )
    if code != 0:
        raise WorkspaceError(f"{entry} looks like a git repository but git cannot open it: {err.strip()}")
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:
        raise WorkspaceError(f"unexpected output from git rev-parse in {entry.parent}")
    return GitTarget(entry.parent.resolve(), Path(lines[0]), Path(lines[1]), "git", layout)


def open_shadow_target(root: Path, layout: StateLayout, *, create: bool) -> GitTarget | None:
    """The shadow repository for a folder outside git (created on first use)."""
    git_dir = layout.shadow_git_dir
    target = GitTarget(root, git_dir, git_dir, "shadow", layout)
    if not (git_dir / "HEAD").is_file():
        if not create:
            return None
        layout.ensure()
        empty_template = layout.tmp_dir / "empty-template"
        ensure_private_dir(empty_template)
        # --shared=0600: every file git makes here 0600 and every folder 0700, whatever the umask
        target.run(["init", "--quiet", "--shared=0600", f"--template={empty_template}"])
        try:
            os.chmod(git_dir, 0o700)  # git init ignores our privacy: its mode is 0777 - umask
        except OSError:
            pass
        (git_dir / "info").mkdir(mode=0o700, exist_ok=True)
    elif (git_dir / "config").stat().st_mode & 0o077:  # made by a version before --shared=0600
        _make_private(target, git_dir)
    return target


def _make_private(target: GitTarget, git_dir: Path) -> None:
    """Bring a shadow repository an older version made to 0600 files and 0700 folders, and
    keep it so (``core.sharedRepository``)."""
    target.run(["config", "core.sharedRepository", "0600"])
    os.chmod(git_dir, 0o700)
    for folder, dirs, files in os.walk(git_dir):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o700)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, 0o400 if os.stat(path).st_mode & 0o200 == 0 else 0o600)


def _read_git_dirs(entry: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) for a plain ``.git`` folder or a ``gitdir:`` file; None if unusual."""
    try:
        if entry.is_dir():
            git_dir = entry
        else:
            text = entry.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir: "):
                return None
            git_dir = entry.parent / text[len("gitdir: ") :]
        common = git_dir
        commondir_file = git_dir / "commondir"
        if commondir_file.is_file():
            common = git_dir / commondir_file.read_text(encoding="utf-8").strip()
        git_dir, common = git_dir.resolve(), common.resolve()
    except (OSError, UnicodeDecodeError):
        return None
    if not (git_dir / "HEAD").is_file() or not (common / "objects").is_dir():
        return None
    return git_dir, common
