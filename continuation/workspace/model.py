"""Plain, JSON-serialisable records: the workspace reference, restore plans, drift reports.

``WorkspaceRef.to_dict()`` / ``from_dict()`` round-trip through JSON; ``from_dict`` ignores
keys it does not know (newer writers) and fills defaults for keys it lacks (older writers).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from continuation.workspace.errors import CorruptReference

SCHEMA_VERSION = 1
DIRTY_SAMPLE = 20  # paths kept in a dirty summary / exclusion list; counts stay exact

WorkspaceKind = Literal["git", "shadow", "metadata", "none"]
KINDS = ("git", "shadow", "metadata", "none")
InProgress = Literal["merge", "rebase", "cherry-pick", "revert"]


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass
class DirtyPath:
    status: str  # "M" modified, "A" added (staged), "D" deleted, "?" untracked, "U" unmerged
    path: str


@dataclass
class DirtySummary:
    """Counts of changes plus the first DIRTY_SAMPLE paths.

    base: what the counts compare against: ``HEAD`` (git: the user's index and HEAD, exactly
    like ``git status``), ``previous-snapshot`` (shadow and metadata checkpoints) or ``none``.
    """

    base: str = "none"
    modified: int = 0
    added: int = 0
    deleted: int = 0
    untracked: int = 0
    unmerged: int = 0
    paths: list[DirtyPath] = field(default_factory=list)
    truncated: bool = False

    @property
    def total(self) -> int:
        return self.modified + self.added + self.deleted + self.untracked + self.unmerged

    _FIELD_BY_LETTER = {"M": "modified", "A": "added", "D": "deleted", "U": "unmerged"}

    def count(self, letter: str, path: str) -> None:
        """Count one changed path (M, A, D, U; anything else is untracked) and keep it in the
        sample while there is room."""
        name = self._FIELD_BY_LETTER.get(letter, "untracked")
        setattr(self, name, getattr(self, name) + 1)
        if len(self.paths) < DIRTY_SAMPLE:
            self.paths.append(DirtyPath(letter, path))
        else:
            self.truncated = True

    @classmethod
    def from_dict(cls, data: Any) -> "DirtySummary":
        if not isinstance(data, dict):
            return cls()
        known = _known(cls, data)
        paths = [
            DirtyPath(str(p.get("status", "?")), str(p["path"]))
            for p in known.pop("paths", []) or []
            if isinstance(p, dict) and "path" in p
        ]
        for key in ("modified", "added", "deleted", "untracked", "unmerged"):
            if key in known and not isinstance(known[key], int):
                raise CorruptReference(f"dirty.{key} must be an integer")
        return cls(paths=paths, **known)


@dataclass
class OversizedFile:
    path: str
    size: int


@dataclass
class Submodule:
    path: str
    commit: str | None = None


_OPTIONAL_TEXT = (
    "thread_key", "head", "branch", "in_progress", "snapshot_ref", "snapshot_commit", "snapshot_tree",
    "manifest_path", "created_at",
)


@dataclass
class WorkspaceRef:
    """Where a checkpoint of a workspace lives and what the workspace looked like.

    root: canonical absolute path of the workspace (the git top level for repositories).
    kind: ``git`` (commit in the user's object store), ``shadow`` (commit in a shadow repository
    under the state home), ``metadata`` (manifest file), ``none`` (root only).
    head/branch/detached/unborn/in_progress: the user's git state when it was taken.
    snapshot_ref/snapshot_commit/snapshot_tree: where the contents are (snapshot kinds).
    oversized: new or changed files above the size cap, recorded and not stored.
    excluded / excluded_count: paths skipped by policy patterns (first DIRTY_SAMPLE, exact count).
    submodules / nested_repos: recorded and never descended into; restore leaves them alone.
    """

    root: str
    kind: str
    schema_version: int = SCHEMA_VERSION
    thread_key: str | None = None
    generation: int | None = None
    head: str | None = None
    branch: str | None = None
    detached: bool = False
    unborn: bool = False
    in_progress: str | None = None
    dirty: DirtySummary = field(default_factory=DirtySummary)
    snapshot_ref: str | None = None
    snapshot_commit: str | None = None
    snapshot_tree: str | None = None
    manifest_path: str | None = None
    oversized: list[OversizedFile] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    excluded_count: int = 0
    exclude_patterns: list[str] = field(default_factory=list)
    size_cap_bytes: int | None = None
    submodules: list[Submodule] = field(default_factory=list)
    nested_repos: list[str] = field(default_factory=list)
    #: untracked secret-looking files the snapshot left out: {"path", "why"} (workspace.secrets)
    secrets_left_out: list[dict] = field(default_factory=list)
    created_at: str = ""

    @property
    def has_contents(self) -> bool:
        """True when the checkpoint stores file contents (a restore is possible)."""
        return self.kind in ("git", "shadow") and bool(self.snapshot_commit)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> "WorkspaceRef":
        try:
            return cls._from_dict(data)
        except CorruptReference:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise CorruptReference(f"workspace reference is malformed: {exc}") from exc

    @classmethod
    def _from_dict(cls, data: Any) -> "WorkspaceRef":
        if not isinstance(data, dict):
            raise CorruptReference(f"workspace reference must be an object, not {type(data).__name__}")
        if not isinstance(data.get("root"), str) or not data["root"]:
            raise CorruptReference("workspace reference has no root")
        if data.get("kind") not in KINDS:
            raise CorruptReference(f"workspace reference kind must be one of {KINDS}, not {data.get('kind')!r}")
        known = _known(cls, data)
        known["dirty"] = DirtySummary.from_dict(known.get("dirty"))
        known["oversized"] = [
            OversizedFile(str(o["path"]), int(o.get("size") or 0))
            for o in known.get("oversized") or []
            if isinstance(o, dict) and "path" in o
        ]
        known["submodules"] = [
            Submodule(str(s["path"]), s.get("commit"))
            for s in known.get("submodules") or []
            if isinstance(s, dict) and "path" in s
        ]
        known["secrets_left_out"] = [
            {"path": str(x["path"]), "why": str(x.get("why") or "")}
            for x in known.get("secrets_left_out") or []
            if isinstance(x, dict) and "path" in x
        ]
        for key in ("excluded", "exclude_patterns", "nested_repos"):
            value = known.get(key) or []
            if not isinstance(value, list):
                raise CorruptReference(f"{key} must be a list")
            known[key] = [str(v) for v in value]
        for key in _OPTIONAL_TEXT:
            if known.get(key) is not None and not isinstance(known[key], str):
                raise CorruptReference(f"{key} must be a string or null")
        for key in ("detached", "unborn"):
            if key in known and not isinstance(known[key], bool):
                raise CorruptReference(f"{key} must be true or false")
        generation = known.get("generation")
        if generation is not None and (not isinstance(generation, int) or isinstance(generation, bool)):
            raise CorruptReference("generation must be an integer")
        return cls(**known)


@dataclass
class ModeChange:
    path: str
    current_mode: str
    checkpoint_mode: str


@dataclass
class SkippedPath:
    path: str
    reason: str


@dataclass
class RestorePlan:
    """What ``apply_restore`` would change, computed without changing anything.

    modified: files whose contents (or type) differ and are written back from the checkpoint.
    recreated: files missing now that are written back.
    deleted: files absent at the checkpoint that the session created after it (see
    ``restore.plan_restore`` for how that is known); they are removed.
    mode_changes: files whose executable bit differs (restored with the file).
    kept: files new since the checkpoint with no evidence that the session created them; left alone.
    skipped: paths never touched (oversized, excluded by policy, submodules, nested repositories).
    """

    checkpoint: WorkspaceRef
    modified: list[str] = field(default_factory=list)
    recreated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    mode_changes: list[ModeChange] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)
    #: changed files no agent call can have changed (the user's own edits): left as they are
    kept_edits: list[SkippedPath] = field(default_factory=list)
    #: secret-looking files the checkpoint does not hold (``workspace.secrets``): never
    #: snapshotted, so never deleted nor restored; kept as they are
    secrets: list[SkippedPath] = field(default_factory=list)
    #: changed files the engine cannot attribute (changed while a shell call of the agent ran,
    #: named by none): restored unless the rewind keeps them (``keep_unsure``), listed either way
    unsure: list[SkippedPath] = field(default_factory=list)
    #: the safety snapshot this preview was read off (``plan_restore(..., at_once=True)``), for
    #: ``apply_restore``: a ``safety_first.TakenSafety``; not part of the plan
    taken: Any = field(default=None, repr=False, compare=False)

    @property
    def is_empty(self) -> bool:
        return not (self.modified or self.recreated or self.deleted or self.mode_changes)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "taken"}

    def describe(self, limit: int | None = None) -> str:
        """Human-readable preview (``continuation restore --dry-run``): the totals first, then
        one line per file, the first ``limit`` of them (None: every one)."""
        lines = [f"restore {self.checkpoint.root}",
                 f"  to {self.checkpoint.snapshot_ref or self.checkpoint.snapshot_commit}"]
        restored = set(self.modified)
        unsure_restored = sum(u.path in restored for u in self.unsure)
        changes = [f"{n} {what}" for n, what in (
            (len(self.modified), "modified"), (len(self.recreated), "re-created"),
            (len(self.deleted), "deleted"), (len(self.mode_changes), "mode changed")) if n]
        left = [f"{n} {what}" for n, what in (
            (unsure_restored, "of them unsure (changed while an agent call ran)"),
            (len(self.unsure) - unsure_restored, "unsure, kept"),
            (len(self.kept), "new, kept"), (len(self.kept_edits), "your edits, kept"),
            (len(self.secrets), "secret files, kept"),
            (len(self.skipped), "skipped")) if n]
        total = len(self.modified) + len(self.recreated) + len(self.deleted) + len(self.mode_changes)
        lines.append(f"  {total} file(s) change" + (f": {', '.join(changes)}" if changes else "")
                     + (f"; {', '.join(left)}" if left else ""))
        entries = [f"  modify    {p}" for p in self.modified]
        entries += [f"  recreate  {p}" for p in self.recreated]
        entries += [f"  delete    {p}" for p in self.deleted]
        entries += [f"  mode      {m.path} {m.current_mode} -> {m.checkpoint_mode}" for m in self.mode_changes]
        entries += [f"  keep      {p} (new since checkpoint, not created by the session)" for p in self.kept]
        entries += [f"  keep      {k.path} (your edit: {k.reason})" for k in self.kept_edits]
        entries += [f"  keep      {k.path} (a secret file, never snapshotted: {k.reason})"
                    for k in self.secrets]
        entries += [f"  unsure    {u.path} ({u.reason})" for u in self.unsure]
        entries += [f"  skip      {s.path} ({s.reason})" for s in self.skipped]
        if limit is not None and len(entries) > limit:
            lines += entries[:limit]
            lines.append(f"  ... and {len(entries) - limit} more (--verbose lists every file)")
        else:
            lines += entries
        if self.is_empty:
            lines.append("  nothing to change")
        return "\n".join(lines)


@dataclass
class RestoreResult:
    """What ``apply_restore`` did. ``safety`` is the snapshot taken first: restore it to undo."""

    safety: WorkspaceRef
    restored: list[str] = field(default_factory=list)
    recreated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: the work tree's tree as the restore left it (``apply_restore(..., derive_tree=True)``):
    #: an ``after_restore.TreeAfterRestore`` for the next snapshot; not part of the record
    tree_after: Any = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "tree_after"}


@dataclass
class DriftReport:
    """Files changed since a checkpoint.

    modified/added/deleted compare the workspace now with the checkpoint's stored contents (or
    manifest). outside_session: the changed paths the caller did not list as touched by the
    session (``drift(..., session_paths=...)``). head_moved/branch_changed compare git state.
    left_out: secret-looking files (``workspace.secrets``) no snapshot holds, with why: those
    the checkpoint left out and those there now; not counted as changes (nothing stored to
    compare them with).
    """

    checkpoint: WorkspaceRef
    modified: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    outside_session: list[str] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)
    head: str | None = None
    branch: str | None = None
    head_moved: bool = False
    branch_changed: bool = False

    @property
    def clean(self) -> bool:
        return not (self.modified or self.added or self.deleted or self.head_moved or self.branch_changed)

    @property
    def changed(self) -> list[str]:
        return sorted({*self.modified, *self.added, *self.deleted})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
