"""The versioned handoff capsule (schema 4) and its canonical encoding.

A capsule is keyed by thread and context generation. It keeps three kinds of information apart
(user inputs, runtime facts, assistant claims) and says what was cut: ``cuts`` lists every text
clipped or dropped (field, original and kept bytes/tokens, sha256 of the full text, pointer to
it). ``budget`` records the encoding that counted tokens and the final totals.

Canonical bytes (:func:`encode_capsule`): ``json.dumps(model_dump(mode="json"), sort_keys=True,
separators=(",", ":"), ensure_ascii=False)`` in UTF-8. ``budget.bytes`` is the length of exactly
those bytes (it is solved as a fixed point, so the number counts its own digits).

Schema 3 added the work ledger (``work_done``: the finished tool calls of each turn, grouped;
``tool_calls`` lists only the unsettled ones) and a workspace reduced to what a model needs.
Schema 4 added the work record (``work_record``: the page files that hold every finished call,
named inline) and compact ledger rows (see :class:`WorkDone`).

Schema 4 also carries ``guard`` (the recovery loop's state, :class:`GuardStatus`) when the
thread ran a check: optional and left out of the encoding when absent, so a capsule without it
is byte for byte what it was, and a reader that does not know the field ignores it.

Reading (:func:`decode_capsule`): any supported version (1, 2, 3) is upgraded to the current model;
unknown fields are ignored; a newer version raises :class:`CapsuleVersionError`; anything else
malformed raises :class:`CapsuleFormatError`, never a bare traceback.
"""
# (no ``from __future__ import annotations``: pydantic would evaluate every field's
# annotation string itself, ~4 ms of a capsule worker's start; see capsule_worker)

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from capsule.source import InputState, ThreadKey, ToolStatus

SCHEMA_VERSION = 4
SUPPORTED_VERSIONS = (1, 2, 3, 4)


class CapsuleFormatError(ValueError):
    """The bytes are not a capsule this package can read."""


class CapsuleVersionError(CapsuleFormatError):
    """The capsule was written by a newer schema than this package knows."""

    def __init__(self, found: int, supported: tuple[int, ...] = SUPPORTED_VERSIONS):
        self.found = found
        self.supported = supported
        super().__init__(
            f"capsule schema_version {found} is newer than this reader "
            f"(supports {', '.join(map(str, supported))}); upgrade continuation to read it"
        )


class _Part(BaseModel):
    # schemas are built on first use: a boundary pays only for the models it uses.
    # Empty lists and dicts default to ``[]``/``{}``: pydantic copies a mutable default for
    # each instance, while ``Field(default_factory=list)`` had it inspect the builtin's
    # signature at class creation (~3.5 ms over these models, on a boundary's path)
    model_config = ConfigDict(extra="ignore", defer_build=True)


class Objective(_Part):
    """The newest actionable user request, verbatim where it fits (see ``cuts`` otherwise)."""

    input_id: str | None = None
    state: InputState | None = None
    actionable: bool = False  # False: nothing is open; text is the last request, for context
    text: str = ""
    pointer: str = ""


class Cursor(_Part):
    last_completed_step: str | None = None
    last_runtime_outcome: str | None = None
    pointer: str = ""


NextActionKind = Literal[
    "reconcile_tool_call", "await_tool_result", "reconcile_input", "continue_input",
    "resume_interrupted", "deliver_queued", "wait_for_user",
]


class NextAction(_Part):
    """The explicit next unresolved action, derived from states (never from a claim)."""

    kind: NextActionKind
    text: str
    refs: list[str] = []  # input ids / call ids it is about


class CapsuleInput(_Part):
    id: str
    state: InputState
    turn_id: str | None = None
    seq: int | None = None
    queued: bool = False
    attachments: list[str] = []
    # None: not carried here (the objective holds it, or it was dropped: see cuts).
    text: str | None = None
    pointer: str = ""


class CapsuleToolCall(_Part):
    call_id: str
    tool: str
    status: ToolStatus  # in_flight is never done nor failed: its outcome arrives later
    args: str | None = None  # canonical JSON of the arguments, possibly clipped
    turn_id: str | None = None
    started_at: datetime | None = None
    exit_code: int | None = None
    pointer: str = ""


class WorkDone(_Part):
    """One group of finished tool calls of a turn (see :mod:`capsule.ledger`): ``count`` calls
    of ``tool`` with these arguments, or, when ``values`` is set, with ``{N}`` in ``args``
    replaced by each listed number in turn. ``files``: files the calls' arguments name as
    written.

    Schema 4 writes a row as ``call`` (the call as :mod:`capsule.work_line` writes it: ``$
    <command>`` or ``<Tool> <json>``), ``seq`` / ``last_seq`` (the first and last call's start
    event) and ``turn`` (a label of ``Capsule.work_record.turns``, which holds the turn's ids
    once), and leaves out every field at its default: a row of a 60-character command is ~110
    bytes instead of ~330. Rows of older capsules keep ``args``, ``turn_id``, ``pointer``."""

    turn_id: str | None = None
    input_ids: list[str] = []  # the inputs of that turn
    tool: str
    status: ToolStatus  # ok | error: a finished call
    exit_code: int | None = None
    count: int = 1
    args: str | None = None
    values: str | None = None
    files: list[str] = []
    pointer: str = ""  # the first call's
    last_pointer: str | None = None  # the last call's, when count > 1
    seq: int | None = None
    last_seq: int | None = None
    turn: str | None = None
    call: str | None = None

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler):
        data = handler(self)
        return {k: v for k, v in data.items() if k in ("tool", "status") or v != _WORK_DEFAULTS.get(k)}


_WORK_DEFAULTS = {"turn_id": None, "input_ids": [], "exit_code": None, "count": 1, "args": None,
                  "values": None, "files": [], "pointer": "", "last_pointer": None, "seq": None,
                  "last_seq": None, "turn": None, "call": None}


class WorkTurn(_Part):
    """A turn of the work record: its short ``label`` (``T1``...), ids written once."""

    label: str
    turn_id: str | None = None
    input_ids: list[str] = []
    open: bool = False  # it has an actionable input
    calls: int = 0
    failed: int = 0
    first_seq: int | None = None
    last_seq: int | None = None


class WorkPage(_Part):
    """One page file of the work record: the finished calls whose start events are
    ``first_seq``..``last_seq``."""

    name: str
    first_seq: int | None = None
    last_seq: int | None = None
    calls: int = 0
    failed: int = 0


class WorkRecord(_Part):
    """Every finished call of the turns a model may still be shown, persisted at the boundary
    as page files outside the capsule's budget (:mod:`capsule.work_record`): ``folder`` holds
    the pages and ``manifest`` (their names and sha256; each page ends with its own). ``pages``
    lists the pages named inline (all of them up to a bound, then the first, the newest and
    those holding a failure; ``pages_total`` counts every page)."""

    folder: str
    manifest: str = ""
    manifest_sha256: str = ""
    calls: int = 0
    failed: int = 0
    pages_total: int = 0
    pages: list[WorkPage] = []
    turns: list[WorkTurn] = []
    shell_tool: str | None = None  # the tool ``$`` lines ran in unless a line names another
    source_command: str = ""  # how to print any event: the command, then the pointer
    #: the pages are sealed (the store is encrypted): a runtime's file tools cannot read them,
    #: ``source_command`` prints each (written only when true)
    sealed: bool = False

    @model_serializer(mode="wrap")
    def _sealed_only_when_true(self, handler):
        data = handler(self)
        if not data.get("sealed"):
            data.pop("sealed", None)
        return data


class RuntimeFact(_Part):
    seq: int | None = None
    kind: str
    text: str = ""
    pointer: str = ""


class AssistantClaim(_Part):
    seq: int | None = None
    turn_id: str | None = None
    text: str
    pointer: str = ""
    # what the turn's recorded calls say against it (capsule.claim_check), e.g. "no tool call
    # of this turn ran tests"; added in schema 3, absent (empty) in older capsules
    checks: list[str] = []


class Permissions(_Part):
    permission_mode: str | None = None
    sandbox: str | None = None
    approval: str | None = None
    extra: dict[str, str] = {}


class ModelSettings(_Part):
    model: str | None = None
    provider: str | None = None
    extra: dict[str, str] = {}


class Attachment(_Part):
    ref: str
    kind: str | None = None
    input_id: str | None = None
    sha256: str | None = None
    pointer: str = ""


class PlanItem(_Part):
    step: int = 0  # 1-based position in the runtime's list (items may be omitted)
    text: str
    status: str


class Plan(_Part):
    tool: str | None = None
    seq: int | None = None
    total_items: int = 0
    items: list[PlanItem] = []
    pointer: str = ""


class BackgroundWork(_Part):
    description: str
    handle: str
    handle_kind: str | None = None
    seq: int | None = None
    pointer: str = ""


class SourcePointers(_Part):
    event_seq_first: int | None = None
    event_seq_last: int | None = None
    transcript_path: str | None = None
    transcript_offset: int | None = None
    transcript_prefix_sha256: str | None = None


class Notice(_Part):
    title: str
    lines: list[str] = []
    priority: int = 0
    pointer: str = ""


class GuardStatus(_Part):
    """The project's check as the recovery loop last judged it (see ``continuation.guard``):
    ``verdict`` of the newest run, the ``action`` taken, the last passing checkpoint, and the
    automatic rewinds used for the current request out of its budget."""

    command: str | None = None
    verdict: str | None = None
    action: str | None = None
    exit_code: int | None = None
    at_seq: int | None = None
    failures_in_row: int = 0
    good_checkpoint: str | None = None
    good_seq: int | None = None
    rewinds_used: int = 0
    rewinds_budget: int | None = None
    runs: int = 0


class Cut(_Part):
    """One clipped text, or a group of dropped items (``items`` > 1 or ``kept_bytes`` 0).

    ``sha256``: of the full text's UTF-8 (surrogatepass); for a group, of the items' texts each
    prefixed by its 8-byte length (see ``textclip.sha256_texts``). ``pointer`` reads the full
    text back; for a group it is the first item's and ``last_pointer`` the last one's.
    """

    field: str
    items: int = 1
    original_bytes: int
    original_tokens: int
    original_tokens_exact: bool = True  # False: extrapolated (see tokens.count_bounded)
    kept_bytes: int
    kept_tokens: int
    sha256: str
    pointer: str = ""
    last_pointer: str | None = None


class BudgetReport(_Part):
    encoding: str
    max_bytes: int
    max_tokens: int
    objective_max_bytes: int
    cursor_max_bytes: int
    bytes: int = 0  # length of the canonical encoding of this capsule
    tokens: int = 0  # tokens of render_capsule(this capsule)
    replaced_surrogates: int = 0  # lone surrogates replaced with U+FFFD in the source texts
    dropped: dict[str, int] = {}  # items dropped whole, per field


class Capsule(_Part):
    schema_version: int = SCHEMA_VERSION
    thread: ThreadKey
    generation: int
    reason: str
    created_at: datetime
    supersedes_generation: int | None = None  # an earlier block the runtime may still show
    objective: Objective
    cursor: Cursor
    next_action: NextAction
    input_counts: dict[str, int] = {}  # every input, by state
    inputs: list[CapsuleInput] = []
    tool_calls: list[CapsuleToolCall] = []  # unsettled (schema 3)
    work_done: list[WorkDone] = []
    work_record: WorkRecord | None = None  # schema 4
    runtime_facts: list[RuntimeFact] = []
    assistant_claims: list[AssistantClaim] = []
    workspace: dict[str, Any] | None = None
    permissions: Permissions = Field(default_factory=Permissions)
    model_settings: ModelSettings = Field(default_factory=ModelSettings)
    attachments: list[Attachment] = []
    plan: Plan | None = None
    background: list[BackgroundWork] = []
    source: SourcePointers = Field(default_factory=SourcePointers)
    notices: list[Notice] = []
    cuts: list[Cut] = []
    budget: BudgetReport
    guard: GuardStatus | None = None

    @model_serializer(mode="wrap")
    def _guard_only_when_set(self, handler):
        data = handler(self)
        if data.get("guard") is None:
            data.pop("guard", None)
        return data

    @property
    def queued_input_ids(self) -> list[str]:
        return [i.id for i in self.inputs if i.state == "queued"]


def canonical_json(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_capsule(capsule: Capsule) -> bytes:
    """The canonical bytes of a capsule (what is stored and hashed)."""
    return canonical_json(capsule.model_dump(mode="json"))
