"""The pure input of the capsule builder: everything the engine read from its store.

The engine fills a :class:`CapsuleSource` from its events and derived tables; the builder never
does I/O. Texts here are FULL texts (the builder clips them); every free-text item carries a
``pointer``: an opaque string (e.g. ``"event:<thread>:<seq>"``) that the engine can resolve back
to the full text (``continuation source POINTER``).

Queued inputs are the inputs in state ``queued`` (``queued=True`` also marks an input that
arrived while a turn ran and was later delivered). Unknown fields are ignored so an engine newer
than this package can still build.
"""
# (no ``from __future__ import annotations``: pydantic would evaluate every field's
# annotation string itself, ~4 ms of a capsule worker's start; see capsule_worker)

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from capsule.states import (
    ACTIONABLE_STATES,
    HISTORICAL_STATES,
    INPUT_STATES,
    NOTICE_HIGH_PRIORITY,
    UNSETTLED_TOOL_STATUSES,
)

InputState = Literal[
    "queued", "pending", "handled", "reconciling", "interrupted", "superseded", "rolled_back"
]
ToolStatus = Literal["in_flight", "ok", "error", "unknown"]


class _Source(BaseModel):
    # defaults of empty lists and dicts as in ``capsule.model._Part``
    model_config = ConfigDict(extra="ignore", defer_build=True)


class ThreadKey(_Source):
    runtime: str  # "codex" | "claude" | any harness name
    session_id: str
    thread_id: str


class SourceInput(_Source):
    id: str
    text: str
    state: InputState
    turn_id: str | None = None
    admitted_seq: int | None = None
    queued: bool = False  # received while a turn was running
    attachments: list[str] = []  # attachment refs (see SourceAttachment)
    pointer: str


class SourceToolCall(_Source):
    call_id: str
    tool: str
    args: dict[str, Any] = {}
    status: ToolStatus
    started_at: datetime | None = None
    turn_id: str | None = None
    exit_code: int | None = None
    pointer: str


class SourceFact(_Source):
    """A short typed runtime fact (what the runtime observed), e.g. kind="turn_completed"."""

    seq: int | None = None
    kind: str
    text: str = ""
    pointer: str


class SourceClaim(_Source):
    """What the assistant said. A claim, never a fact and never user authority."""

    turn_id: str | None = None
    text: str
    seq: int | None = None
    pointer: str
    checks: list[str] = []  # capsule.claim_check notes on what it says it did


class SourceCursor(_Source):
    last_completed_step: str | None = None
    last_runtime_outcome: str | None = None
    pointer: str = ""


class SourcePermissions(_Source):
    permission_mode: str | None = None
    sandbox: str | None = None
    approval: str | None = None
    extra: dict[str, Any] = {}


class SourceModelSettings(_Source):
    model: str | None = None
    provider: str | None = None
    extra: dict[str, Any] = {}


class SourceAttachment(_Source):
    ref: str  # path or URI as the runtime reported it
    kind: str | None = None  # "image", "file", ...
    input_id: str | None = None
    sha256: str | None = None
    pointer: str = ""


class SourcePlanItem(_Source):
    text: str
    status: str  # as the runtime wrote it: pending | in_progress | completed | ...


class SourcePlan(_Source):
    """The plan / todo list as last recorded by Codex ``update_plan`` or Claude Code ``TodoWrite``."""

    tool: str | None = None  # "update_plan" | "TodoWrite"
    seq: int | None = None
    items: list[SourcePlanItem] = []
    pointer: str = ""


class SourceBackgroundWork(_Source):
    description: str
    handle: str  # the durable handle the runtime reported: pid, shell id, session id
    handle_kind: str | None = None  # "pid" | "shell" | "session" | ...
    seq: int | None = None
    pointer: str = ""


class SourcePointers(_Source):
    event_seq_first: int | None = None
    event_seq_last: int | None = None
    transcript_path: str | None = None
    transcript_offset: int | None = None  # bytes of the transcript read so far
    transcript_prefix_sha256: str | None = None  # sha256 of those bytes


class SourceGuard(_Source):
    """The recovery loop's state (the project's check): the newest verdict and the last
    passing checkpoint, as the engine's log has them."""

    command: str | None = None
    verdict: str | None = None  # pass | fail | fatal | timeout | error
    action: str | None = None  # pass | report | rewind | halt | error | none
    exit_code: int | None = None
    at_seq: int | None = None
    failures_in_row: int = 0
    good_checkpoint: str | None = None
    good_seq: int | None = None
    rewinds_used: int = 0
    rewinds_budget: int | None = None
    runs: int = 0


class SourceNotice(_Source):
    """An extra titled section the engine adds (reconciliation prompt, recovery notice, rewind
    summary). Higher priority survives longer; ``>= NOTICE_HIGH_PRIORITY`` is kept with the
    actionable inputs."""

    title: str
    lines: list[str] = []
    priority: int = 0
    pointer: str = ""


class SourceNotGathered(_Source):
    """Items the gathering did not read (older than its bounds: the newest finished calls,
    facts and claims only), counted so that the capsule records them as a cut. Their texts were
    not read: ``original_bytes`` is their size as stored, ``pointers_sha256`` the sha256 of the
    selection, ``<field> <pointer>..<last_pointer> <items>`` (the store is append-only: the field,
    the seq range and the count name the items; counted by the database, none is read), and
    ``pointer`` / ``last_pointer`` the oldest and newest."""

    field: str
    items: int
    original_bytes: int = 0
    pointers_sha256: str
    pointer: str = ""
    last_pointer: str | None = None


class CapsuleSource(_Source):
    thread: ThreadKey
    generation: int
    reason: str = "manual"  # manual | auto | compact | resume | crash | rewind | ...
    created_at: datetime
    inputs: list[SourceInput] = []  # in admission order
    tool_calls: list[SourceToolCall] = []  # in start order
    facts: list[SourceFact] = []
    claims: list[SourceClaim] = []
    cursor: SourceCursor = Field(default_factory=SourceCursor)
    workspace: dict[str, Any] | None = None  # owned by the workspace package; unknown keys kept
    workspace_pointer: str = "workspace"  # where the full workspace record can be read back
    settings_pointer: str = "settings"  # same for permissions and model settings
    permissions: SourcePermissions = Field(default_factory=SourcePermissions)
    model_settings: SourceModelSettings = Field(default_factory=SourceModelSettings)
    attachments: list[SourceAttachment] = []
    plan: SourcePlan | None = None
    background: list[SourceBackgroundWork] = []
    pointers: SourcePointers = Field(default_factory=SourcePointers)
    notices: list[SourceNotice] = []
    # the generation of the checkpoint block delivered last before this one (Claude Code keeps
    # earlier blocks in its history): the new block says it supersedes it
    supersedes_generation: int | None = None
    not_gathered: list[SourceNotGathered] = []
    # every input of the thread by state, when ``inputs`` holds only some of them (the gatherer
    # reads the open ones and only the newest historical ones); None: ``inputs`` is all of them
    input_counts: dict[str, int] | None = None
    # the work record's index (``capsule.model.WorkRecord`` as plain data: the page files the
    # engine wrote for this generation, ``continuation.boundary.work_pages``); None: no finished call
    work_record: dict[str, Any] | None = None
    # the recovery loop's state; None: the thread never ran a check
    guard: SourceGuard | None = None
    # calls reconciled as not applied or retry-safe: read, and on purpose in neither
    # ``tool_calls`` nor the work record (their work is still to do; the decision notice says so)
    calls_to_do: list[str] = []
