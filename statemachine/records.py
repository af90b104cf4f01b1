"""The derived records the fold produces: one per input, turn and tool call.

Plain slotted dataclasses (not pydantic): the hook hot path builds a few of them per event.
``to_row``/``from_row`` give the JSON-able form the store keeps; unknown keys are ignored so an
older reader survives a newer writer.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields


class _Row:
    __slots__ = ()

    def to_row(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_row(cls, row: dict):
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in names})


@dataclass(slots=True)
class InputRecord(_Row):
    input_id: str
    state: str
    text: str = ""
    turn_id: str | None = None
    queued: bool = False
    ordinal: int = 0
    admitted_seq: int = 0
    updated_seq: int = 0
    id_source: str = "runtime"
    attachments: list = field(default_factory=list)
    # ids of tool calls whose unknown outcome holds this input in `reconciling`
    unknown_calls: list = field(default_factory=list)
    # how the input's turn ended while calls were unknown: "completed" | "aborted" | "crashed"
    cut_by: str | None = None
    # a settled call was not applied (or must be retried): the input cannot be handled yet
    work_remains: bool = False
    last_trigger: str | None = None


@dataclass(slots=True)
class TurnRecord(_Row):
    turn_id: str
    status: str = "running"  # running | completed | aborted | crashed
    input_ids: list = field(default_factory=list)
    open_calls: list = field(default_factory=list)
    started_seq: int = 0
    ended_seq: int | None = None


@dataclass(slots=True)
class ToolCallRecord(_Row):
    call_id: str
    turn_id: str | None = None
    tool: str = ""
    args: dict = field(default_factory=dict)
    # in_flight | ok | error | unknown (its session ended without an outcome) | rolled_back
    status: str = "in_flight"
    started_seq: int = 0
    finished_seq: int | None = None
    started_at: float | None = None
    outcome: dict = field(default_factory=dict)
    decision: str | None = None  # applied | not_applied | retry_safe (reconciliation)
