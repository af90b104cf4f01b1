"""What the capsule concludes from states alone: the objective and the next unresolved action.

Only user inputs and runtime facts decide; assistant claims never do.

Objective: the newest input in state pending, interrupted or reconciling (by ``admitted_seq``,
then list order); if none, the newest queued one; if none, the newest input at all, shown as not
actionable (context only).

Next action, first that applies:
1. a tool call with unknown outcome -> ``reconcile_tool_call`` (check whether it took effect;
   never repeat it blindly);
2. a tool call still in flight -> ``await_tool_result`` (its outcome arrives later);
3. an input in ``reconciling`` -> ``reconcile_input``;
4. the objective is interrupted -> ``resume_interrupted``; pending -> ``continue_input``;
5. queued input -> ``deliver_queued``;
6. else ``wait_for_user``.
"""
from __future__ import annotations

from collections.abc import Sequence

from capsule.model import CapsuleInput, CapsuleToolCall, NextAction
from capsule.source import SourceInput, SourceToolCall

# The next action sits in every capsule, however small: it names a few items, never all.
MAX_REFS = 4

_WORKING = frozenset({"pending", "interrupted", "reconciling"})


def pick_objective(inputs: Sequence[SourceInput]) -> tuple[SourceInput | None, bool]:
    """(input, actionable). Linear in the number of inputs."""
    best_working: tuple[tuple[int, int], SourceInput] | None = None
    best_queued: tuple[tuple[int, int], SourceInput] | None = None
    newest: tuple[tuple[int, int], SourceInput] | None = None
    for index, item in enumerate(inputs):
        key = (item.admitted_seq if item.admitted_seq is not None else -1, index)
        if newest is None or key > newest[0]:
            newest = (key, item)
        if item.state in _WORKING and (best_working is None or key > best_working[0]):
            best_working = (key, item)
        if item.state == "queued" and (best_queued is None or key > best_queued[0]):
            best_queued = (key, item)
    for found in (best_working, best_queued):
        if found is not None:
            return found[1], True
    return (newest[1], False) if newest else (None, False)


def _refs_note(items: Sequence[object]) -> str:  # noqa: D103
    return "ids in refs" if len(items) <= MAX_REFS else f"first {MAX_REFS} ids in refs"


def derive_next_action(
    inputs: Sequence[CapsuleInput | SourceInput],
    tool_calls: Sequence[CapsuleToolCall | SourceToolCall],
    objective_id: str | None,
) -> NextAction:
    unknown = [c for c in tool_calls if c.status == "unknown"]
    in_flight = [c for c in tool_calls if c.status == "in_flight"]
    if unknown:
        running = (
            f" {len(in_flight)} other call(s) were still running: wait for their outcome, do not repeat them."
            if in_flight else ""
        )
        return NextAction(
            kind="reconcile_tool_call",
            text=(
                f"{len(unknown)} tool call(s) with unknown outcome ({_refs_note(unknown)}). Check whether each took effect "
                "before anything else; do not repeat one blindly." + running
            ),
            refs=[c.call_id for c in unknown[:MAX_REFS]],
        )
    if in_flight:
        return NextAction(
            kind="await_tool_result",
            text=(
                f"{len(in_flight)} tool call(s) still running at the checkpoint ({_refs_note(in_flight)}). Their outcome arrives "
                "later: treat them as neither done nor failed, and do not start them again."
            ),
            refs=[c.call_id for c in in_flight[:MAX_REFS]],
        )
    reconciling = [i.id for i in inputs if i.state == "reconciling"]
    if reconciling:
        return NextAction(
            kind="reconcile_input",
            text=(
                f"{len(reconciling)} input(s) wait for reconciliation of a cut-off turn; "
                "settle what took effect first."
            ),
            refs=reconciling[:MAX_REFS],
        )
    objective = next((i for i in inputs if i.id == objective_id), None) if objective_id else None
    if objective is not None and objective.state == "interrupted":
        return NextAction(
            kind="resume_interrupted",
            text="The objective input was interrupted and is still open; continue it only as the user asks.",
            refs=[objective.id],
        )
    if objective is not None and objective.state == "pending":
        return NextAction(
            kind="continue_input",
            text="Continue the objective input from the execution cursor.",
            refs=[objective.id],
        )
    queued = [i.id for i in inputs if i.state == "queued"]
    if queued:
        return NextAction(
            kind="deliver_queued",
            text=f"{len(queued)} queued user input(s) wait to be taken up, oldest first.",
            refs=queued[:MAX_REFS],
        )
    return NextAction(kind="wait_for_user", text="No user input is open. Wait for the user.", refs=[])
