"""The states and priorities the capsule's source speaks of, without its pydantic models: the
engine gathers a source as plain data in a process that never imports pydantic (a boundary's
own process, while a worker builds the capsule: ``continuation.boundary.capsule_worker``)."""
from __future__ import annotations

INPUT_STATES: tuple[str, ...] = (
    "queued", "pending", "handled", "reconciling", "interrupted", "superseded", "rolled_back"
)
# States whose input still asks for work. "queued" is actionable but not yet seen by the model.
ACTIONABLE_STATES = frozenset({"pending", "interrupted", "reconciling", "queued"})
HISTORICAL_STATES = frozenset({"handled", "superseded", "rolled_back"})

# A call whose result the capsule must never present as settled.
UNSETTLED_TOOL_STATUSES = frozenset({"in_flight", "unknown"})

#: a notice of at least this priority is kept with the actionable inputs
NOTICE_HIGH_PRIORITY = 50
