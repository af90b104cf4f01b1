"""What a checkpoint stores: the policy, and the matcher for its exclude patterns.

Exclude patterns use a gitignore-like syntax (a documented subset):
- ``name`` or ``*.log`` (no slash): matches that file or directory name at any depth;
- ``build/out``, ``docs/*.tmp`` or ``/top.txt`` (a slash at the start or in the middle): matched
  against the path from the root;
- a trailing ``/`` (``node_modules/``) restricts to directories, and everything below them;
- ``**`` matches across directories (``**/cache/**``).
A path is excluded when the pattern matches the path itself or any of its parent directories.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Literal

from continuation.workspace.errors import InvalidPolicy

PolicyMode = Literal["snapshot", "metadata", "none"]
_MODES = ("snapshot", "metadata", "none")
DEFAULT_SIZE_CAP = 10 * 1024 * 1024


@dataclass(frozen=True)
class WorkspacePolicy:
    """How a workspace is checkpointed.

    mode: ``snapshot`` stores contents (a git commit under ``refs/continuation/``, or a shadow
    repository for folders outside git); ``metadata`` records path, size, mode, mtime and sha256
    only; ``none`` records the root only.
    exclude: extra patterns (see module docstring) that are never stored, on top of the user's
    ignore rules. size_cap_bytes: new or changed files above this size are recorded, not stored.
    """

    mode: PolicyMode = "snapshot"
    exclude: tuple[str, ...] = ()
    size_cap_bytes: int = DEFAULT_SIZE_CAP

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise InvalidPolicy(f"workspace policy mode must be one of {_MODES}, not {self.mode!r}")
        if isinstance(self.exclude, str):
            raise InvalidPolicy("workspace policy exclude must be a sequence of patterns, not a string")
        object.__setattr__(self, "exclude", tuple(str(p) for p in self.exclude if str(p).strip()))
        if not isinstance(self.size_cap_bytes, int) or self.size_cap_bytes < 0:
            raise InvalidPolicy("workspace policy size_cap_bytes must be a non-negative integer")

    def matcher(self) -> "ExcludeMatcher":
        return ExcludeMatcher(self.exclude)


def _glob_to_regex(glob: str) -> str:
    """Translate one gitignore-style glob (no leading/trailing slash) to a regex body."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(glob[i]))
                i += 1
            else:
                out.append(fnmatch.translate(glob[i : end + 1])[4:-3])
                i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


class ExcludeMatcher:
    """Decides whether a repository-relative posix path is excluded by policy patterns."""

    def __init__(self, patterns: tuple[str, ...] | list[str]) -> None:
        self.patterns = tuple(patterns)
        self._rules: list[tuple[re.Pattern[str], bool]] = []
        for raw in self.patterns:
            pattern = raw.strip().replace("\\", "/")
            dir_only = pattern.endswith("/")
            pattern = pattern.rstrip("/")
            anchored = "/" in pattern  # a slash at the start or in the middle anchors to the root
            pattern = pattern.lstrip("/")
            if not pattern:
                continue
            body = _glob_to_regex(pattern)
            regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z")
            self._rules.append((regex, dir_only))

    def __bool__(self) -> bool:
        return bool(self._rules)

    def excluded(self, path: str, *, is_dir: bool = False) -> bool:
        """True when ``path`` or one of its parent directories matches a pattern."""
        if not self._rules:
            return False
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            candidate = "/".join(parts[:depth])
            candidate_is_dir = depth < len(parts) or is_dir
            for regex, dir_only in self._rules:
                if dir_only and not candidate_is_dir:
                    continue
                if regex.match(candidate):
                    return True
        return False
