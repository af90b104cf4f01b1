"""Reader for capsule schema 2, upgraded to schema 3.

Schema 2 listed finished tool calls one by one in ``tool_calls`` (with their arguments) and
carried the workspace record as written. Schema 3 lists only unsettled calls there and moves
finished ones to the work ledger (``work_done``), one row per call as schema 2 held them (no
grouping is invented); the workspace becomes its model-facing view (``workspace_view``).
"""
from __future__ import annotations

from typing import Any

from capsule.source import UNSETTLED_TOOL_STATUSES
from capsule.workspace_view import workspace_view


def upgrade_v2(obj: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 mapping as a schema-3 mapping (validated by the caller)."""
    out = dict(obj)
    calls = [c for c in obj.get("tool_calls") or [] if isinstance(c, dict)]
    turn_inputs: dict[Any, list[str]] = {}
    for i in obj.get("inputs") or []:
        if isinstance(i, dict) and i.get("turn_id") is not None:
            turn_inputs.setdefault(i["turn_id"], []).append(i.get("id"))
    out["tool_calls"] = [c for c in calls if c.get("status") in UNSETTLED_TOOL_STATUSES]
    out["work_done"] = [
        {"turn_id": c.get("turn_id"), "input_ids": turn_inputs.get(c.get("turn_id"), []), "tool": c.get("tool", "?"), "status": c.get("status"),
         "exit_code": c.get("exit_code"), "count": 1, "args": c.get("args"),
         "pointer": c.get("pointer", "")}
        for c in calls if c.get("status") not in UNSETTLED_TOOL_STATUSES
    ]
    if isinstance(obj.get("workspace"), dict):
        out["workspace"] = workspace_view(obj["workspace"])
    out["schema_version"] = 3
    return out
