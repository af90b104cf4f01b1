"""Turn a :class:`CapsuleSource` into the capsule's fixed skeleton and its droppable elements.

An element is one thing the budget may keep or drop (an input row, an input's text, a claim,
...). Each has a ``rank``: elements are kept in descending rank and dropped in ascending rank,
which is the drop order stated in ``capsule.budget``. Nothing here measures sizes or counts
tokens; texts are kept whole until the budgeter asks (``Element.full``).

Identifiers (ids, turn ids, tool names, kinds, refs) are never clipped silently: one longer than
``ID_MAX`` bytes becomes a prefix plus ``~`` and 16 hex chars of its sha256 (``short_id``).
Pointers may be up to ``POINTER_MAX`` bytes.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from pydantic import BaseModel

from capsule import render
from capsule.derive import derive_next_action, pick_objective
from capsule.model import (
    AssistantClaim,
    Attachment,
    BackgroundWork,
    CapsuleInput,
    CapsuleToolCall,
    Cursor,
    GuardStatus,
    ModelSettings,
    NextAction,
    Notice,
    Objective,
    Permissions,
    Plan,
    PlanItem,
    RuntimeFact,
    SourcePointers,
    WorkDone,
    WorkRecord,
)
from capsule.source import (
    ACTIONABLE_STATES,
    INPUT_STATES,
    NOTICE_HIGH_PRIORITY,
    UNSETTLED_TOOL_STATUSES,
    CapsuleSource,
    ThreadKey,
)
from capsule.ledger import group_calls
from capsule.work_line import call_text
from capsule.spill_order import KEY_FACT_KINDS
from capsule.textclip import clip_json_bytes, json_size, scrub, short_id
from capsule.workspace_view import workspace_view

ID_MAX = 128
POINTER_MAX = 256
REF_MAX = 256
MAX_ROW_ATTACHMENTS = 8
FINAL_CLAIM_TURNS = 3
MAX_CLAIM_CHECKS = 4
MAX_EXTRA_KEYS = 16
VALUE_MAX = 512  # one workspace / settings value, JSON bytes
GUARD_COMMAND_MAX = 160  # the guard's command line in the capsule's header, JSON bytes

# Tiers: lower is dropped first. The budget module's docstring states this order in words.
T_HIST_SUPERSEDED_TEXT = 1
T_HIST_HANDLED_TEXT = 2
T_CLAIM = 3
T_FACT = 4
T_SETTLED_CALL = 5
T_FINAL_CLAIM = 6  # the last claim of each of the newest FINAL_CLAIM_TURNS turns
T_NOTICE_LOW = 7
T_HIST_ROW = 8
T_ATTACHMENT = 9
T_PLAN_ITEM = 10
T_BACKGROUND = 11
T_EXTRA_SETTINGS = 12
T_WORKSPACE_SETTINGS = 13
T_NOTICE_HIGH = 14
T_LEDGER_ACTIVE = 15
T_ACTIONABLE_TEXT = 16
T_UNSETTLED_ARGS = 17
T_ACTIONABLE_ROW = 18
T_UNSETTLED_ROW = 19

# Group names used for the one cut that summarises what a field lost whole.
G_INPUT_TEXT_HIST = "inputs.text[historical]"
G_INPUT_TEXT_ACT = "inputs.text[actionable]"
G_INPUT_ROW_HIST = "inputs[historical]"
G_INPUT_ROW_ACT = "inputs[actionable]"
G_LEDGER_HIST = "work_done[historical]"
G_LEDGER_ACTIVE = "work_done[actionable]"
G_CALL_ARGS = "tool_calls.args[in_flight,unknown]"
G_CALL_ROW = "tool_calls[in_flight,unknown]"
G_CLAIMS = "assistant_claims"
G_FACTS = "runtime_facts"
G_NOTICES = "notices"
G_ATTACHMENTS = "attachments"
G_PLAN = "plan.items"
G_BACKGROUND = "background"
G_WORKSPACE = "workspace"
G_SETTINGS = "permissions,model_settings"


@dataclass
class PendingCut:
    """A text that lost something: ``kept`` is what stays of ``original``."""

    field: str
    original: str
    kept: str
    pointer: str


@dataclass(eq=False, slots=True)
class Element:
    rank: tuple[int, int, int]
    slot: str  # where it goes in the capsule (see budget.compose)
    index: int  # original order inside the slot
    group: str  # cut group when dropped whole
    build: Callable[[str | None], BaseModel | dict[str, Any]]
    line: Callable[[Any, bool], str]  # rendered line(s) of the built object, clipped flag
    full: str | None = None  # clippable text, scrubbed (None: the element has no text)
    original: str = ""  # text as given (hash and size of a cut); for rows, the input's text
    field: str = ""  # cut field path when the text is clipped
    pointer: str = ""
    parent: Element | None = None  # set on a text that belongs to a row
    pre_cuts: list[PendingCut] = dc_field(default_factory=list)  # clips made whatever the budget
    items: int = 1  # what a cut counts when it is dropped (a work-ledger group: its calls)
    # caches filled by the budgeter
    capped: str | None = None
    cost: tuple[int, int] | None = None
    _original_bytes: int | None = None

    @property
    def original_bytes(self) -> int:
        """UTF-8 size of ``original`` (surrogatepass), computed once."""
        if self._original_bytes is None:
            self._original_bytes = len(self.original.encode("utf-8", "surrogatepass"))
        return self._original_bytes


@dataclass
class Skeleton:
    """What every capsule carries, however small (texts still full: the budgeter clips)."""

    thread: ThreadKey
    generation: int
    reason: str
    created_at: Any
    objective: Objective  # text full
    objective_original: str
    cursor: Cursor  # texts full
    cursor_original: dict[str, str]
    next_action: NextAction
    input_counts: dict[str, int]
    source: SourcePointers
    plan: Plan | None  # header only
    replaced_surrogates: int
    supersedes_generation: int | None = None
    work_record: WorkRecord | None = None  # always kept: where every finished call is
    guard: GuardStatus | None = None  # always kept: one line, its texts bounded


class _Scrubber:
    def __init__(self) -> None:
        self.replaced = 0

    def text(self, value: str) -> str:
        clean, n = scrub(value)
        self.replaced += n
        return clean

    def ident(self, value: str | None, limit: int = ID_MAX) -> str | None:
        if value is None:
            return None
        clean = self.text(value)
        return clean if len(clean) * 6 <= limit else short_id(clean, limit)

    def tree(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.tree(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.tree(v) for k, v in value.items()}
        return value


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _clip_value(value: Any, limit: int = VALUE_MAX) -> tuple[Any, str | None]:
    """A JSON value kept whole if small, else as a clipped JSON text. Returns (kept, original)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value, None
    if isinstance(value, str):
        if json_size(value) <= limit:
            return value, None
        return clip_json_bytes(value, limit), value
    dumped = _json_text(value)
    if json_size(dumped) <= limit:
        return value, None
    return clip_json_bytes(dumped, limit), dumped


def _mapping(values: dict[str, Any], prefix: str, pointer: str, as_text: bool) -> tuple[dict[str, Any], list[PendingCut]]:
    out: dict[str, Any] = {}
    cuts: list[PendingCut] = []
    for key in sorted(values):
        kept, original = _clip_value(values[key])
        if as_text and not isinstance(kept, str):
            kept = _json_text(kept)
        out[short_id(key, 64)] = kept
        if original is not None:
            cuts.append(PendingCut(f"{prefix}.{short_id(key, 64)}", original, kept, pointer))
    return out, cuts


def _split_extras(values: dict[str, Any], prefix: str, pointer: str, as_text: bool) -> tuple[dict[str, Any], list[PendingCut]]:
    keys = sorted(values)
    kept, cuts = _mapping({k: values[k] for k in keys[:MAX_EXTRA_KEYS]}, prefix, pointer, as_text)
    if len(keys) > MAX_EXTRA_KEYS:
        rest = {k: values[k] for k in keys[MAX_EXTRA_KEYS:]}
        cuts.append(PendingCut(f"{prefix}[{len(rest)} more keys]", _json_text(rest), "", pointer))
    return kept, cuts


def _final_claims(claims) -> set[int]:
    """Indexes of the last claim of each of the newest FINAL_CLAIM_TURNS turns (claims are in
    order; a claim with no turn id is a turn of its own)."""
    last: dict[Any, int] = {}
    for k, claim in enumerate(claims):
        last[claim.turn_id if claim.turn_id is not None else ("no turn", k)] = k
    return set(sorted(last.values())[-FINAL_CLAIM_TURNS:])


def _seq_of(pointer: str | None) -> int | None:
    """The event number a pointer ``event:<thread>:<seq>`` names (None for any other)."""
    tail = (pointer or "").rpartition(":")[2]
    return int(tail) if pointer and pointer.startswith("event:") and tail.isdigit() else None


def _ledger(source: CapsuleSource, s: _Scrubber, record: WorkRecord | None) -> list[Element]:
    """The finished calls of each turn, identical ones grouped (capsule.ledger: ``ran=Kx``; no
    ``{N}`` templates, so that every command is written as it ran), one element per group, each
    a :mod:`capsule.work_line` line. Groups of a turn that has an actionable input are kept nearly
    last, failed ones after the others (a failure is never only a number); the others go early.
    Inside a tier the oldest group goes first."""
    active_turns = {item.turn_id for item in source.inputs
                    if item.turn_id is not None and item.state in ACTIONABLE_STATES}
    by_turn: dict[str | None, list] = {}
    for call in source.tool_calls:
        if call.status not in UNSETTLED_TOOL_STATUSES:
            by_turn.setdefault(call.turn_id, []).append(call)
    labels = {t.turn_id: t.label for t in record.turns} if record is not None else {}
    several = len(by_turn) > 1
    shell_tool = record.shell_tool if record is not None else None
    elements: list[Element] = []
    k = 0
    for turn_id, calls in by_turn.items():
        active = turn_id in active_turns
        label = labels.get(turn_id) if several else None
        groups = group_calls(((c.tool, c.status, c.exit_code, call_text(c.tool, c.args), c.pointer)
                              for c in calls), text_of=str, template=False)
        for g in groups:
            first, last = _seq_of(g.pointers[0]), _seq_of(g.pointers[-1]) if g.count > 1 else None
            row_fields = dict(
                turn=label, tool=s.ident(g.tool, 64), status=g.status, exit_code=g.exit_code,
                count=g.count, values=g.values_text, seq=first, last_seq=last,
                # a pointer of another form than event:<thread>:<seq> is kept as it is
                pointer="" if first is not None else s.ident(g.pointers[0], POINTER_MAX),
            )
            failed = g.status == "error" or (g.exit_code not in (None, 0))
            pointer = s.ident(g.pointers[0], POINTER_MAX)
            elements.append(Element(
                rank=(T_LEDGER_ACTIVE if active or failed else T_SETTLED_CALL, 1 if failed else 0, k),
                slot="work_done", index=k,
                group=G_LEDGER_ACTIVE if active else G_LEDGER_HIST,
                build=lambda t, _f=row_fields: WorkDone(**_f, call=t),
                line=lambda o, c, _t=shell_tool: render.work_done_line(o, clipped=c, shell_tool=_t),
                full=s.text(g.args), original=g.args,
                field=f"work_done[{pointer}].call", pointer=pointer,
                items=g.count,
            ))
            k += 1
    return elements


def collect(source: CapsuleSource) -> tuple[Skeleton, list[Element]]:
    """The skeleton and every droppable element of ``source`` (no measuring yet)."""
    s = _Scrubber()
    elements: list[Element] = []
    thread = ThreadKey(
        runtime=s.ident(source.thread.runtime, 64),
        session_id=s.ident(source.thread.session_id),
        thread_id=s.ident(source.thread.thread_id),
    )
    tid = thread.thread_id  # pointers into this thread render as #N

    # -- inputs --------------------------------------------------------------------------------
    objective_input, actionable = pick_objective(source.inputs)
    objective_index = next((k for k, i in enumerate(source.inputs) if i is objective_input), -1)
    counts: dict[str, int] = {}
    for k, item in enumerate(source.inputs):
        counts[item.state] = counts.get(item.state, 0) + 1
        is_actionable = item.state in ACTIONABLE_STATES
        row_fields = dict(
            id=s.ident(item.id),
            state=item.state,
            turn_id=s.ident(item.turn_id),
            seq=item.admitted_seq,
            queued=item.queued,
            attachments=[s.ident(a, REF_MAX) for a in item.attachments[:MAX_ROW_ATTACHMENTS]],
            pointer=s.ident(item.pointer, POINTER_MAX),
        )
        objective_id = row_fields["id"] if k == objective_index else None

        def build_row(text: str | None, _f: dict[str, Any] = row_fields) -> CapsuleInput:
            return CapsuleInput(**_f, text=text)

        def input_line(obj: CapsuleInput, clipped: bool, _o: str | None = objective_id) -> str:
            return render.input_line(obj, objective_id=_o, clipped=clipped, thread_id=tid)

        if k == objective_index:
            row_rank = (T_ACTIONABLE_ROW, 9, k) if actionable else (T_HIST_ROW, 9, k)
        elif is_actionable:
            row_rank = (T_ACTIONABLE_ROW, 1, k)
        else:
            row_rank = (T_HIST_ROW, 1 if item.state == "handled" else 0, k)
        row = Element(
            rank=row_rank,
            slot="inputs",
            index=k,
            group=G_INPUT_ROW_ACT if is_actionable else G_INPUT_ROW_HIST,
            build=build_row,
            line=input_line,
            original=item.text,
            pointer=row_fields["pointer"],
        )
        elements.append(row)
        if k == objective_index:
            continue  # its text is the objective's
        if is_actionable:
            text_rank = (T_ACTIONABLE_TEXT, 0 if item.state == "queued" else 1, k)
        elif item.state == "handled":
            text_rank = (T_HIST_HANDLED_TEXT, 0, k)
        else:
            text_rank = (T_HIST_SUPERSEDED_TEXT, 0, k)
        elements.append(Element(
            rank=text_rank,
            slot="inputs.text",
            index=k,
            group=G_INPUT_TEXT_ACT if is_actionable else G_INPUT_TEXT_HIST,
            build=build_row,
            line=input_line,
            full=s.text(item.text),
            original=item.text,
            field=f"inputs[{row_fields['id']}].text",
            pointer=row_fields["pointer"],
            parent=row,
        ))

    # -- tool calls: the unsettled ones one by one, the finished ones as the work ledger -------
    for k, call in enumerate(c for c in source.tool_calls if c.status in UNSETTLED_TOOL_STATUSES):
        call_fields = dict(
            call_id=s.ident(call.call_id),
            tool=s.ident(call.tool, 64),
            status=call.status,
            turn_id=s.ident(call.turn_id),
            started_at=call.started_at,
            exit_code=call.exit_code,
            pointer=s.ident(call.pointer, POINTER_MAX),
        )
        args_text = _json_text(call.args)

        def build_call(text: str | None, _f: dict[str, Any] = call_fields) -> CapsuleToolCall:
            return CapsuleToolCall(**_f, args=text)

        def call_line(obj: CapsuleToolCall, clipped: bool) -> str:
            return render.tool_call_line(obj, clipped=clipped, thread_id=tid)

        row = Element(
            rank=(T_UNSETTLED_ROW, 0, k), slot="tool_calls", index=k, group=G_CALL_ROW,
            build=build_call, line=call_line, original=args_text, pointer=call_fields["pointer"],
        )
        elements.append(row)
        elements.append(Element(
            rank=(T_UNSETTLED_ARGS, 0, k), slot="tool_calls.args", index=k, group=G_CALL_ARGS,
            build=build_call, line=call_line, full=s.text(args_text), original=args_text,
            field=f"tool_calls[{call_fields['call_id']}].args", pointer=call_fields["pointer"], parent=row,
        ))
    record = WorkRecord.model_validate(source.work_record) if source.work_record else None
    elements += _ledger(source, s, record)

    # -- facts and claims ----------------------------------------------------------------------
    for k, fact in enumerate(source.facts):
        fact_fields = dict(seq=fact.seq, kind=s.ident(fact.kind, 64), pointer=s.ident(fact.pointer, POINTER_MAX))
        elements.append(Element(
            rank=(T_FACT, 1 if fact.kind in KEY_FACT_KINDS else 0, k), slot="runtime_facts", index=k, group=G_FACTS,
            build=lambda t, _f=fact_fields: RuntimeFact(**_f, text=t or ""),
            line=lambda o, c: render.fact_line(o, clipped=c, thread_id=tid),
            full=s.text(fact.text), original=fact.text,
            field=f"runtime_facts[{fact_fields['pointer']}].text", pointer=fact_fields["pointer"],
        ))
    final = _final_claims(source.claims)
    for k, claim in enumerate(source.claims):
        claim_fields = dict(seq=claim.seq, turn_id=s.ident(claim.turn_id), pointer=s.ident(claim.pointer, POINTER_MAX),
                            checks=[s.ident(c, 256) for c in claim.checks[:MAX_CLAIM_CHECKS]])
        elements.append(Element(
            rank=(T_FINAL_CLAIM if k in final else T_CLAIM, 0, k), slot="assistant_claims", index=k, group=G_CLAIMS,
            build=lambda t, _f=claim_fields: AssistantClaim(**_f, text=t or ""),
            line=lambda o, c: render.claim_line(o, clipped=c, thread_id=tid),
            full=s.text(claim.text), original=claim.text,
            field=f"assistant_claims[{claim_fields['pointer']}].text", pointer=claim_fields["pointer"],
        ))

    # -- notices -------------------------------------------------------------------------------
    for k, notice in enumerate(source.notices):
        notice_fields = dict(
            title=s.ident(notice.title, 200), priority=notice.priority,
            pointer=s.ident(notice.pointer, POINTER_MAX),
        )
        body = "\n".join(notice.lines)
        high = notice.priority >= NOTICE_HIGH_PRIORITY
        elements.append(Element(
            rank=(T_NOTICE_HIGH if high else T_NOTICE_LOW, notice.priority, k), slot="notices", index=k,
            group=G_NOTICES,
            build=lambda t, _f=notice_fields: Notice(**_f, lines=t.split("\n") if t else []),
            line=lambda o, c: "\n".join(render.notice_lines(o, clipped=c, thread_id=tid)),
            full=s.text(body), original=body,
            field=f"notices[{notice_fields['pointer']}].lines", pointer=notice_fields["pointer"],
        ))

    # -- the recovery loop's state (a header: identifiers and numbers, the command clipped) ---
    guard = None
    if source.guard is not None:
        g = source.guard
        guard = GuardStatus(**{**g.model_dump(), "command": None if g.command is None else
                               clip_json_bytes(s.text(g.command), GUARD_COMMAND_MAX),
                               "verdict": s.ident(g.verdict, 32), "action": s.ident(g.action, 32),
                               "good_checkpoint": s.ident(g.good_checkpoint)})

    # -- plan ----------------------------------------------------------------------------------
    plan_header: Plan | None = None
    if source.plan is not None:
        plan_pointer = s.ident(source.plan.pointer, POINTER_MAX)
        plan_header = Plan(
            tool=s.ident(source.plan.tool, 64), seq=source.plan.seq,
            total_items=len(source.plan.items), pointer=plan_pointer,
        )
        n = len(source.plan.items)
        for k, item in enumerate(source.plan.items):
            done = item.status.strip().lower() in {"completed", "complete", "done"}
            item_fields = dict(step=k + 1, status=s.ident(item.status, 32))
            elements.append(Element(
                rank=(T_PLAN_ITEM, 0 if done else 1, n - k), slot="plan", index=k, group=G_PLAN,
                build=lambda t, _f=item_fields: PlanItem(**_f, text=t or ""),
                line=lambda o, c: render.plan_item_line(o, clipped=c),
                full=s.text(item.text), original=item.text,
                field=f"plan.items[{k + 1}].text", pointer=plan_pointer,
            ))

    # -- background work -----------------------------------------------------------------------
    for k, work in enumerate(source.background):
        work_fields = dict(
            handle=s.ident(work.handle, 200), handle_kind=s.ident(work.handle_kind, 32), seq=work.seq,
            pointer=s.ident(work.pointer, POINTER_MAX),
        )
        elements.append(Element(
            rank=(T_BACKGROUND, 0, k), slot="background", index=k, group=G_BACKGROUND,
            build=lambda t, _f=work_fields: BackgroundWork(**_f, description=t or ""),
            line=lambda o, c: render.background_line(o, clipped=c, thread_id=tid),
            full=s.text(work.description), original=work.description,
            field=f"background[{work_fields['handle']}].description", pointer=work_fields["pointer"],
        ))

    # -- attachments ---------------------------------------------------------------------------
    for k, att in enumerate(source.attachments):
        att_obj = Attachment(
            ref=s.ident(att.ref, REF_MAX), kind=s.ident(att.kind, 32), input_id=s.ident(att.input_id),
            sha256=s.ident(att.sha256, 80), pointer=s.ident(att.pointer, POINTER_MAX),
        )
        elements.append(Element(
            rank=(T_ATTACHMENT, 0, k), slot="attachments", index=k, group=G_ATTACHMENTS,
            build=lambda t, _o=att_obj: _o, line=lambda o, c: render.attachment_line(o, tid),
            original=att.ref, pointer=att_obj.pointer,
        ))

    # -- workspace and settings ----------------------------------------------------------------
    view = workspace_view(source.workspace)
    if view is not None:
        ws = s.tree(view)
        ws_pointer = s.ident(source.workspace_pointer, POINTER_MAX)
        ws_kept, ws_cuts = _mapping(ws, "workspace", ws_pointer, as_text=False)
        elements.append(Element(
            rank=(T_WORKSPACE_SETTINGS, 1, 0), slot="workspace", index=0, group=G_WORKSPACE,
            build=lambda t, _d=ws_kept: dict(_d), line=lambda o, c: "\n".join(render.mapping_lines(o)),
            original=_json_text(ws), pointer=ws_pointer, pre_cuts=ws_cuts,
        ))
    perm, model = source.permissions, source.model_settings
    settings = dict(
        permission_mode=s.ident(perm.permission_mode, 64), sandbox=s.ident(perm.sandbox, 64),
        approval=s.ident(perm.approval, 64), model=s.ident(model.model, 128), provider=s.ident(model.provider, 128),
    )
    settings_pointer = s.ident(source.settings_pointer, POINTER_MAX)
    if any(v is not None for v in settings.values()):
        elements.append(Element(
            rank=(T_WORKSPACE_SETTINGS, 0, 0), slot="settings", index=0, group=G_SETTINGS,
            build=lambda t, _d=settings: dict(_d),
            line=lambda o, c: _settings_line(o),
            original=_json_text(settings), pointer=settings_pointer,
        ))
    for slot, extra_values in (("permissions.extra", perm.extra), ("model_settings.extra", model.extra)):
        if extra_values:
            kept, cuts = _split_extras(s.tree(extra_values), slot, settings_pointer, as_text=True)
            label = "permission" if slot.startswith("permissions") else "model"
            elements.append(Element(
                rank=(T_EXTRA_SETTINGS, 0, 0), slot=slot, index=0, group=G_SETTINGS,
                build=lambda t, _d=kept: dict(_d),
                line=lambda o, c, _l=label: "\n".join(
                    f"- {_l} {render.render_literal(k)}: {render.render_literal(v)}" for k, v in sorted(o.items())
                ),
                original=_json_text(extra_values), pointer=settings_pointer, pre_cuts=cuts,
            ))

    # -- skeleton ------------------------------------------------------------------------------
    if objective_input is not None:
        objective = Objective(
            input_id=s.ident(objective_input.id), state=objective_input.state, actionable=actionable,
            text=s.text(objective_input.text), pointer=s.ident(objective_input.pointer, POINTER_MAX),
        )
        objective_original = objective_input.text
    else:
        objective, objective_original = Objective(), ""
    cur = source.cursor
    cursor = Cursor(
        last_completed_step=None if cur.last_completed_step is None else s.text(cur.last_completed_step),
        last_runtime_outcome=None if cur.last_runtime_outcome is None else s.text(cur.last_runtime_outcome),
        pointer=s.ident(cur.pointer, POINTER_MAX),
    )
    cursor_original = {
        k: v for k, v in (("last_completed_step", cur.last_completed_step),
                          ("last_runtime_outcome", cur.last_runtime_outcome)) if v is not None
    }
    action = derive_next_action(source.inputs, source.tool_calls, objective_input.id if actionable and objective_input else None)
    action = action.model_copy(update={"refs": [s.ident(r) for r in action.refs]})
    p = source.pointers
    pointers = SourcePointers(
        event_seq_first=p.event_seq_first, event_seq_last=p.event_seq_last,
        transcript_path=s.ident(p.transcript_path, POINTER_MAX), transcript_offset=p.transcript_offset,
        transcript_prefix_sha256=s.ident(p.transcript_prefix_sha256, 80),
    )
    every = source.input_counts if source.input_counts is not None else counts
    skeleton = Skeleton(
        thread=thread, generation=source.generation, reason=s.ident(source.reason, 64) or "",
        created_at=source.created_at, objective=objective, objective_original=objective_original,
        cursor=cursor, cursor_original=cursor_original, next_action=action,
        input_counts={k: every[k] for k in INPUT_STATES if k in every}, source=pointers,
        plan=plan_header, replaced_surrogates=0,
        supersedes_generation=source.supersedes_generation
        if source.supersedes_generation is not None and source.supersedes_generation != source.generation else None,
        work_record=record, guard=guard,
    )
    skeleton.replaced_surrogates = s.replaced
    return skeleton, elements


def _settings_line(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={'-' if v is None else render.render_literal(v)}" for k, v in values.items())


def apply_settings(parts: dict[str, dict[str, Any]]) -> tuple[Permissions, ModelSettings]:
    """Permissions and model settings from the kept settings slots."""
    base = parts.get("settings", {})
    return (
        Permissions(
            permission_mode=base.get("permission_mode"), sandbox=base.get("sandbox"),
            approval=base.get("approval"), extra=parts.get("permissions.extra", {}),
        ),
        ModelSettings(model=base.get("model"), provider=base.get("provider"), extra=parts.get("model_settings.extra", {})),
    )
