"""Reader for capsule schema 1 (the first layout), upgraded to the current schema.

Schema 1 was flat: one ``thread_id`` string, the objective and cursor as plain strings,
facts and claims as lists of strings, only the unknown-outcome tool calls, settings in one
mapping, cuts without token counts, and a budget with bytes only. A sample lives in
``fixtures/capsule_v1.json`` and is read by the tests forever.

What the upgrade cannot know it states instead of inventing: token counts of v1 cuts are 0 and
marked not exact, the encoding is ``"unknown (schema 1)"``, the next action kind is derived
from the upgraded states.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from capsule.derive import derive_next_action
from capsule.model import CapsuleInput, CapsuleToolCall
from capsule.source import ACTIONABLE_STATES, InputState


class _V1(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class InputV1(_V1):
    id: str
    state: InputState
    text: str | None = None
    turn_id: str | None = None


class ToolCallV1(_V1):
    call_id: str
    tool: str
    args: dict[str, Any] = {}


class SourceV1(_V1):
    event_seq: list[int] = []  # [first, last]
    transcript_path: str | None = None
    transcript_offset: int | None = None
    transcript_sha256: str | None = None


class CutV1(_V1):
    field: str
    original_bytes: int
    kept_bytes: int
    sha256: str
    pointer: str = ""


class BudgetV1(_V1):
    max_bytes: int = 16384
    bytes: int = 0


class CapsuleV1(_V1):
    schema_version: int
    runtime: str = "unknown"
    session_id: str = ""
    thread_id: str
    generation: int
    reason: str = "manual"
    created_at: datetime
    objective: str = ""
    objective_input_id: str | None = None
    cursor: str | None = None
    next_action: str | None = None
    inputs: list[InputV1] = []
    unknown_tool_calls: list[ToolCallV1] = []
    facts: list[str] = []
    claims: list[str] = []
    workspace: dict[str, Any] | None = None
    settings: dict[str, Any] = {}
    queued: list[str] = []
    attachments: list[str] = []
    source: SourceV1 = Field(default_factory=SourceV1)
    cuts: list[CutV1] = []
    budget: BudgetV1 = Field(default_factory=BudgetV1)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def upgrade_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 mapping as a schema-2 mapping (validated by the caller)."""
    old = CapsuleV1.model_validate(obj)
    queued = set(old.queued)
    by_id = {i.id: i for i in old.inputs}
    objective_input = by_id.get(old.objective_input_id or "")
    inputs = [
        {
            "id": i.id,
            "state": i.state,
            "turn_id": i.turn_id,
            "queued": i.id in queued or i.state == "queued",
            # as in schema 2, the objective's own row does not repeat its text
            "text": None if i.id == old.objective_input_id and i.text == old.objective else i.text,
        }
        for i in old.inputs
    ]
    counts: dict[str, int] = {}
    for i in old.inputs:
        counts[i.state] = counts.get(i.state, 0) + 1
    calls = [
        {"call_id": c.call_id, "tool": c.tool, "status": "unknown",
         "args": json.dumps(c.args, sort_keys=True, ensure_ascii=False)}
        for c in old.unknown_tool_calls
    ]
    settings = dict(old.settings)
    known = {k: settings.pop(k, None) for k in ("model", "provider", "sandbox", "approval", "permission_mode")}
    seq = old.source.event_seq
    objective = {
        "input_id": old.objective_input_id,
        "state": objective_input.state if objective_input else None,
        "actionable": bool(objective_input and objective_input.state in ACTIONABLE_STATES),
        "text": old.objective,
    }
    next_action = derive_next_action(
        [CapsuleInput.model_validate(i) for i in inputs],
        [CapsuleToolCall.model_validate(c) for c in calls],
        old.objective_input_id if objective["actionable"] else None,
    )
    if old.next_action:
        # Schema 1 stored the action as text only; keep its words under the derived kind.
        next_action = next_action.model_copy(update={"text": old.next_action})
    return {
        "schema_version": 2,
        "thread": {"runtime": old.runtime, "session_id": old.session_id, "thread_id": old.thread_id},
        "generation": old.generation,
        "reason": old.reason,
        "created_at": old.created_at,
        "objective": objective,
        "cursor": {"last_completed_step": old.cursor},
        "next_action": next_action.model_dump(),
        "input_counts": counts,
        "inputs": inputs,
        "tool_calls": calls,
        "runtime_facts": [{"kind": "fact", "text": t} for t in old.facts],
        "assistant_claims": [{"text": t} for t in old.claims],
        "workspace": old.workspace,
        "permissions": {
            "permission_mode": known["permission_mode"],
            "sandbox": known["sandbox"],
            "approval": known["approval"],
        },
        "model_settings": {
            "model": known["model"],
            "provider": known["provider"],
            "extra": {k: _str(v) for k, v in settings.items()},
        },
        "attachments": [{"ref": a} for a in old.attachments],
        "source": {
            "event_seq_first": seq[0] if seq else None,
            "event_seq_last": seq[-1] if seq else None,
            "transcript_path": old.source.transcript_path,
            "transcript_offset": old.source.transcript_offset,
            "transcript_prefix_sha256": old.source.transcript_sha256,
        },
        "cuts": [
            {
                "field": c.field,
                "original_bytes": c.original_bytes,
                "original_tokens": 0,
                "original_tokens_exact": False,
                "kept_bytes": c.kept_bytes,
                "kept_tokens": 0,
                "sha256": c.sha256,
                "pointer": c.pointer,
            }
            for c in old.cuts
        ],
        "budget": {
            "encoding": "unknown (schema 1)",
            "max_bytes": old.budget.max_bytes,
            "max_tokens": 0,
            "objective_max_bytes": 0,
            "cursor_max_bytes": 0,
            "bytes": old.budget.bytes,
        },
    }
