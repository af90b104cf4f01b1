"""Recovery at a SessionStart (startup or resume): called by :mod:`continuation.boundary.crossing`.

- The thread being resumed had open work and every previous owner is dead: record
  ``crash_detected`` now (so its inputs are interrupted / reconciling and the resume carries
  them, with the reconciliation prompt, into the new context).
- Calls of this thread waiting for reconciliation: a one-line digest in front of the context
  (the full prompt is a notice inside the checkpoint, which inline shortening may move out).
- Other threads of the same workspace that were interrupted: a short recovery notice (no
  ``crash_detected`` is recorded for them here; ``continuation recover`` does that).
The text is capped at ``notices.PREFIX_LIMIT`` characters.
"""
from __future__ import annotations

from continuation.recovery import interrupted
from continuation.host import liveness
from continuation.recovery.notices import clip_prefix, reconciliation_digest, recovery_text
from continuation.recovery.reconcile import pending


def at_session_start(thread, *, marker: dict | None = None) -> str:
    """Returns the recovery notice text for the new context ("" when there is nothing)."""
    me = marker or liveness.marker()
    own = interrupted.examine(thread, exclude=me)
    if own is not None and own.status == interrupted.NEEDS_CRASH:
        interrupted.record_crash(thread, own, source="recovery:session_start",
                                 at_session_start=True)
    digest = reconciliation_digest(pending(thread))
    root = interrupted.thread_row(thread)["workspace_root"]
    others = [i for i in interrupted.detect(thread.engine, workspace_root=root, exclude=me)
              if i.thread_key != thread.key] if root else []
    text = "\n".join(t for t in (digest, recovery_text(others, current_thread=thread.key)) if t)
    return clip_prefix(text)
