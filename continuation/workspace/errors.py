"""Errors raised by the workspace package: one base class, so callers can catch it once."""

from __future__ import annotations


class WorkspaceError(Exception):
    """Base class: every failure of this package is reported as a WorkspaceError."""


class InvalidThreadKey(WorkspaceError, ValueError):
    """The thread key cannot be used in a ref name or a file name."""


class InvalidPolicy(WorkspaceError, ValueError):
    """A WorkspacePolicy field has a value this package does not understand."""


class WorkspaceBusy(WorkspaceError):
    """Another process holds the workspace lock for longer than the timeout."""


class GitFailure(WorkspaceError):
    """A git command failed; carries the command and git's own message."""

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)} failed ({returncode}): {self.stderr or 'no message'}")


class RestoreUnavailable(WorkspaceError):
    """The checkpoint holds no file contents (metadata/none), or its snapshot is gone."""


class CorruptReference(WorkspaceError, ValueError):
    """A serialised WorkspaceRef cannot be read (wrong type, missing root, bad values)."""
