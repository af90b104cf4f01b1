"""Input ids: the runtime's own id when it gives one, else a deterministic hash."""
from __future__ import annotations

import hashlib


def derived_input_id(thread: str, turn: str | None, ordinal: int, text: str) -> str:
    """Hash of (thread, turn, ordinal, text): the same input seen twice gets the same id.

    Used when the runtime gives no id of its own (Codex hooks send only a ``turn_id``, and a
    turn can hold several inputs, hence the ordinal within the turn).
    """
    h = hashlib.sha256()
    for part in (thread, turn or "", str(ordinal), text):
        raw = part.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(8, "big"))
        h.update(raw)
    return "in-" + h.hexdigest()[:32]
