"""The Claude Agent SDK's ``hooks`` mapping, handled by continuation in process.

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from continuation.adapters.claude_agent_sdk import continuation_hooks

    options = ClaudeAgentOptions(hooks=continuation_hooks())
    async with ClaudeSDKClient(options) as client: ...

The SDK runs Claude Code, which sends these callbacks the payloads it sends a command hook
(measured with Claude Code 2.1.332 through claude-agent-sdk: UserPromptSubmit, PreToolUse,
PostToolUse, Stop, PreCompact, SessionStart ``compact``, PostCompact; no SessionStart
``startup``). Each callback passes its payload to :meth:`continuation.api.Continuation.hook`
with runtime ``claude``: the handlers ``continuation hook --runtime claude`` runs, so a session
driven through the SDK is recorded exactly as one with the command hooks installed, and the
SessionStart(compact) answer carries the assembled context to the model. Nothing is spawned
per event; the callbacks run synchronously in the SDK's event loop (a few ms per event, longer
at PreCompact, while Claude Code waits for the answer anyway).

Fail open: an error of ours is logged and the callback answers ``{}``.
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from continuation.api import Continuation

if TYPE_CHECKING:
    from claude_agent_sdk import HookContext, HookJSONOutput, HookMatcher

log = logging.getLogger("continuation.adapters")

#: the events recorded (what the command hooks install, as far as the SDK forwards them)
EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop",
          "PreCompact", "PostCompact", "SessionStart", "SessionEnd")


def continuation_hooks(continuation: Continuation | None = None, *,
                       home: str | os.PathLike[str] | None = None,
                       timeout: float | None = None) -> dict[str, list[HookMatcher]]:
    """``ClaudeAgentOptions(hooks=...)``: one matcher per event, all tools. ``continuation``
    shares an engine you opened; else one is opened on ``home`` (default: the state home) and
    lives as long as the callbacks. Merge with your own hooks by extending the lists."""
    try:
        from claude_agent_sdk import HookMatcher
    except ImportError as exc:  # the optional extra is not installed
        raise ImportError("continuation_hooks needs claude-agent-sdk: pip install "
                          "'continuation-engine[claude-agent-sdk]'") from exc

    owner = continuation if continuation is not None else Continuation(home, source="sdk")

    async def record(input_data: Any, tool_use_id: str | None,
                     context: HookContext) -> HookJSONOutput:
        try:
            return owner.hook("claude", input_data)  # type: ignore[return-value]
        except Exception:  # fail open: the user's agent must go on
            log.exception("continuation: %s hook failed",
                          getattr(input_data, "get", lambda _k: None)("hook_event_name"))
            return {}

    return {event: [HookMatcher(matcher=None, hooks=[record], timeout=timeout)]
            for event in EVENTS}
