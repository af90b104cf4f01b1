"""Names and places: thread keys, ref names, canonical roots and the per-workspace state folder.

State lives under ``<state_home>/workspaces/<workspace id>/`` (never inside the user's tree):
``lock`` (per-workspace file lock), ``threads/<thread>.index`` (shadow repositories: the private
index of the thread's last snapshot, reused as a stat cache), ``threads/<thread>.json`` (the tree
that index holds, the base of the next dirty summary),
``manifests/<thread>/<generation>.json`` (metadata checkpoints), ``shadow.git`` (shadow
repository for folders outside git), ``tmp/`` (scratch indexes), ``no-hooks/`` (an empty hooks
folder handed to git so that no user hook can run).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from continuation.host.paths import ensure_private_dir
from continuation.workspace.errors import InvalidThreadKey, WorkspaceError

REF_NAMESPACE = "refs/continuation"
_THREAD_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def validate_thread_key(thread_key: str) -> str:
    """Accept keys safe as one ref component and one file name (e.g. ``t12-abcdef``)."""
    if (
        not isinstance(thread_key, str)
        or not _THREAD_KEY.match(thread_key)
        or ".." in thread_key
        or thread_key.endswith((".lock", "."))
    ):
        raise InvalidThreadKey(
            f"thread key {thread_key!r} must be 1-128 characters of letters, digits, '.', '_' or '-', "
            "start with a letter or digit, and not contain '..' or end with '.lock'"
        )
    return thread_key


def validate_generation(generation: int) -> int:
    if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
        raise WorkspaceError(f"generation must be a non-negative integer, not {generation!r}")
    return generation


def thread_ref_prefix(thread_key: str) -> str:
    return f"{REF_NAMESPACE}/{validate_thread_key(thread_key)}/"


def snapshot_ref_name(thread_key: str, generation: int) -> str:
    return f"{thread_ref_prefix(thread_key)}{validate_generation(generation)}"


def safety_ref_name(thread_key: str) -> str:
    """Safety snapshots (taken before a restore) live beside the thread's generations."""
    return f"{thread_ref_prefix(thread_key)}safety/{time.time_ns()}"


def canonical_root(root: Path | str) -> Path:
    try:
        path = Path(root).expanduser().resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise WorkspaceError(f"workspace root {str(root)!r} does not exist or cannot be resolved: {exc}") from exc
    if not path.is_dir():
        raise WorkspaceError(f"workspace root {str(path)!r} is not a directory")
    return path


def workspace_id(root: Path) -> str:
    return hashlib.sha256(os.path.normcase(str(root)).encode("utf-8")).hexdigest()[:24]


def home_id_for(state_home: Path | str) -> str:
    """Names one state home in the snapshot commits it writes, so that retention in one state
    home never deletes the snapshot refs another one keeps in the same repository."""
    resolved = str(Path(state_home).expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]


HOME_TRAILER = "Continuation-Home"


@dataclass(frozen=True)
class StateLayout:
    state_dir: Path

    @classmethod
    def for_root(cls, state_home: Path | str, root: Path) -> "StateLayout":
        return cls(Path(state_home).expanduser().resolve() / "workspaces" / workspace_id(root))

    @property
    def state_home(self) -> Path:
        return self.state_dir.parent.parent

    @property
    def home_id(self) -> str:
        return home_id_for(self.state_dir.parent.parent)

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    @property
    def threads_dir(self) -> Path:
        return self.state_dir / "threads"

    @property
    def secret_scan(self) -> Path:
        """What the secret-file content scan found, by file (``workspace.secrets``)."""
        return self.state_dir / "secret-scan.json"

    @property
    def tmp_dir(self) -> Path:
        return self.state_dir / "tmp"

    @property
    def no_hooks_dir(self) -> Path:
        return self.state_dir / "no-hooks"

    @property
    def shadow_git_dir(self) -> Path:
        return self.state_dir / "shadow.git"

    def thread_index(self, thread_key: str) -> Path:
        return self.threads_dir / f"{validate_thread_key(thread_key)}.index"

    def thread_record(self, thread_key: str) -> Path:
        return self.threads_dir / f"{validate_thread_key(thread_key)}.json"

    def manifest_path(self, thread_key: str, generation: int) -> Path:
        return self.state_dir / "manifests" / validate_thread_key(thread_key) / f"{validate_generation(generation)}.json"

    def ensure(self) -> None:
        for folder in (self.threads_dir, self.tmp_dir, self.no_hooks_dir):
            ensure_private_dir(folder)

    def scratch_index(self, label: str) -> Path:
        return self.tmp_dir / f"{label}.{os.getpid()}.{time.time_ns()}.index"

    def clear_scratch(self) -> None:
        """Remove scratch indexes and stale git lock files left by a killed process.

        Only called while holding the workspace lock, so no live snapshot owns them.
        """
        for folder in (self.tmp_dir, self.threads_dir):
            if not folder.is_dir():
                continue
            for entry in folder.iterdir():
                if entry.suffix == ".lock" or folder == self.tmp_dir:
                    try:
                        entry.unlink()
                    except OSError:
                        pass
