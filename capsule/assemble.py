"""The ordered messages of a fresh context built from a capsule model.

The messages, their text and their fit into a runtime's inline limit live in
:mod:`capsule.context` (no pydantic: a boundary answering from a stored rendering uses it
directly); this module renders the capsule and, when no full input texts are given, takes the
actionable inputs from the capsule's own (possibly clipped) copies.
"""
from __future__ import annotations

from collections.abc import Sequence

from capsule.context import (
    CLAUDE_CODE_INLINE_LIMIT,
    CODEX_INLINE_LIMIT,
    INPUT_MARKER,
    MIN_INLINE_LIMIT,
    AssembledContext,
    ContextMessage,
    ContextTarget,
    InlineContext,
    MessageKind,
    Role,
    _InputLike,
    assemble_rendered,
    js_len,
)
from capsule.model import Capsule
from capsule.render import render_capsule
from capsule.source import ACTIONABLE_STATES


def _actionable_from_capsule(capsule: Capsule) -> list[ContextMessage]:
    out: list[ContextMessage] = []
    cut_fields = {c.field for c in capsule.cuts}
    obj = capsule.objective
    for row in capsule.inputs:
        if row.state not in ACTIONABLE_STATES or row.state == "queued":
            continue
        if row.id == obj.input_id:
            text, clipped = obj.text, "objective.text" in cut_fields
        elif row.text is not None:
            text, clipped = row.text, f"inputs[{row.id}].text" in cut_fields
        else:
            continue  # its text was dropped from the capsule; the pointer is listed there
        out.append(ContextMessage(role="user", kind="actionable_input", text=text, input_id=row.id,
                                  state=row.state, clipped=clipped, pointer=row.pointer))
    if obj.actionable and obj.input_id and obj.state != "queued" and not any(m.input_id == obj.input_id for m in out):
        out.append(ContextMessage(role="user", kind="actionable_input", text=obj.text, input_id=obj.input_id,
                                  state=obj.state, clipped="objective.text" in cut_fields, pointer=obj.pointer))
    return out



def assemble_context(
    instructions: str | None,
    capsule: Capsule,
    queued_inputs: Sequence[_InputLike] = (),
    actionable_inputs: Sequence[_InputLike] | None = None,
    target: ContextTarget | None = None,
) -> AssembledContext:
    """The messages of a fresh context, in order.

    ``actionable_inputs``: the full texts of the inputs still actionable (``SourceInput`` or
    anything with ``id``, ``state``, ``text``); None takes them from the capsule (clipped texts
    are marked). Inputs in state ``queued`` given here move behind them with ``queued_inputs``.
    """
    from_capsule = _actionable_from_capsule(capsule) if actionable_inputs is None else None
    return assemble_rendered(instructions, render_capsule(capsule), queued_inputs,
                             actionable_inputs or (), target, capsule_inputs=from_capsule)
