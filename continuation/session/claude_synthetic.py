"""What Claude Code writes into a session transcript by itself, not the model and not the user.

Shared by the transcript importer (:mod:`continuation.importers.claude`) and the Stop hook's
read-back of missing tool outcomes (:mod:`continuation.hooks.outcomes`), so both read a
transcript the same way:

- **Placeholder results.** When a session is resumed after its process died during a tool
  call, Claude Code gives the orphaned ``tool_use`` a ``tool_result`` of its own making
  ("[Tool call interrupted: the session ended before this call's result was recorded, so its
  outcome is unknown. ...]"; 2.1.332 also has "[Tool call result not in this copy ...]" for a
  copied session and "[Agent call interrupted ...]" for a subagent). The call may or may not
  have run: that is no outcome, the call stays unknown (reconciliation, never a retry).
  Placeholders that say the call did *not* run ("[Tool call skipped ...]", "[Tool call not
  completed: ... has not run ...]") are real outcomes and are not matched here.
- **Synthetic replies.** An ``assistant`` record with model ``<synthetic>`` ("No response
  requested." after such a placeholder, API error texts): not model output, never a turn end.
- **System-generated prompts.** ``<task-notification>`` (a background task or agent finished)
  and similar records that Claude Code sends as a ``user`` message (``origin.kind`` of a
  runtime or another agent, ``promptSource: system``, a ``<...-notification>`` envelope):
  runtime facts, never user requests.
"""
from __future__ import annotations

SYNTHETIC_MODEL = "<synthetic>"
NO_RESPONSE_REQUESTED = "No response requested."

_UNKNOWN_OUTCOME = (
    r"^\s*\[(?:Tool|Agent) call (?:interrupted|result not in this copy)\b"
    r"|outcome is unknown|may or may not have (?:run|completed)")
#: an envelope Claude Code wraps runtime notices in: <task-notification>, <bash-notification>...
_NOTIFICATION = r"^\s*<([a-z][a-z0-9_-]*-notification)>"


def _pattern(source: str):
    """Compiled on first use (``re``'s own cache keeps it): importing ``re`` and compiling these
    case-insensitive patterns is ~5 ms, a visible share of a prompt hook that never needs them."""
    import re

    return re.compile(source, re.I)


def unknown_outcome_placeholder(text: str | None) -> bool:
    """``text`` (a tool result) is Claude Code's stand-in for a result it never recorded."""
    return bool(text) and len(text) < 2000 and bool(_pattern(_UNKNOWN_OUTCOME).search(text))


def synthetic_reply(record: dict) -> bool:
    """An assistant record Claude Code wrote itself (model ``<synthetic>``)."""
    message = record.get("message")
    if not isinstance(message, dict):
        return False
    if message.get("model") == SYNTHETIC_MODEL:
        return True
    content = message.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        content = content[0].get("text")
    # older transcripts may lack the model name: the exact stand-in text, with no usage
    return isinstance(content, str) and content.strip() == NO_RESPONSE_REQUESTED \
        and not message.get("usage")


def notification_kind(text: str | None) -> str | None:
    """The envelope name when ``text`` is a runtime notification (``task-notification``)."""
    if not text or not text.lstrip().startswith("<"):
        return None  # most prompts: no pattern to compile
    m = _pattern(_NOTIFICATION).match(text)
    return m.group(1).lower() if m else None


#: ``origin.kind`` of messages Claude Code (2.1.332) composes itself or takes from another agent;
#: other kinds ("human", "person", "voice-call", "composer", ...) come from the user, and an
#: unknown kind is kept as an input (losing a request is worse than showing a notice)
SYSTEM_ORIGINS = frozenset({"task-notification", "auto-continuation", "coordinator",
                            "observer-activity", "peer", "channel"})


def system_prompt_kind(record: dict, text: str | None) -> str | None:
    """Why a ``user`` record is not the user's prompt but a runtime fact, or ``None``."""
    origin = record.get("origin")
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if isinstance(kind, str) and (kind in SYSTEM_ORIGINS or kind.endswith("-notification")):
        return kind
    if record.get("promptSource") == "system":
        return "system"
    return notification_kind(text)
