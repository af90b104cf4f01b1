"""Three baseline continuation policies, implemented from their documented behaviour.

Each is loaded by the simulated runtime (``continuation.prove.simruntime``, script field
``policy: {"file": "scripts/policies/baselines.py", "name": class}``) and decides what the agent's memory is after a
context boundary, from the runtime's own transcript only: no engine, no capsule. The transcript
entries are ``user`` (text, key, turn), ``tool_call`` (key, call, args, turn), ``tool_result``,
``assistant`` (text, turn, stop) and ``boundary``.

- :class:`SummaryOnly`: the conversation is replaced by a model-written summary. Deterministic
  stand-in for the summary: it names each request the model had worked on (a tool call for it,
  or a final answer on its turn), "done" when the turn ended with a final answer, else "in
  progress"; requests the model never worked on before the boundary do not appear; tool calls
  and their outcomes are not in it.
- :class:`CodexNativeHistory`: Codex CLI's replacement history after compaction: the newest
  user messages up to 20,000 tokens (bytes/4, Codex's approximation; the oldest kept message
  is truncated to fit) plus the summary; no handling state, no tool calls.
- :class:`LatestPromptTurnMatch`: one objective per session, the latest user prompt; it is
  complete when a Stop arrived on the same turn after it. Nothing else is carried.

On resume (a restarted runtime) a baseline keeps what the runtime reloaded from its own
transcript: none of them has a crash or reconciliation notion.

:data:`NATIVE` is what each runtime does by itself: it is also what the agent is left with under
continuation when no context reaches it (the hook died, the answer was lost).
"""
from __future__ import annotations

from continuation.prove.agent import Item

CODEX_USER_MESSAGE_TOKENS = 20_000


def _users(transcript):
    return [(i, e) for i, e in enumerate(transcript) if e.get("role") == "user"]


def _stopped_after(transcript, i, turn) -> bool:
    return any(x.get("role") == "assistant" and x.get("stop") and x.get("turn") == turn
               for x in transcript[i + 1:])


class _Baseline:
    name = "baseline"

    def on_resume(self, *, transcript, context_text, catalog, memory):
        return memory


class SummaryOnly(_Baseline):
    name = "summary only"

    def after_boundary(self, *, transcript, context_text, catalog, memory):
        items = []
        for i, e in _users(transcript):
            worked = any(x.get("role") == "tool_call" and x.get("key") == e.get("key")
                         for x in transcript[i + 1:])
            done = _stopped_after(transcript, i, e.get("turn"))
            if not (worked or done):
                continue  # the model never wrote about it: the summary does not know it
            items.append(Item(text=e["text"], key=e.get("key"),
                              state="handled" if done else "open"))
        return items


class CodexNativeHistory(_Baseline):
    name = "codex native history"

    def after_boundary(self, *, transcript, context_text, catalog, memory):
        budget = CODEX_USER_MESSAGE_TOKENS
        kept = []
        for _, e in reversed(_users(transcript)):
            if budget <= 0:
                break
            text = e["text"]
            tokens = max(1, len(text.encode("utf-8", "surrogatepass")) // 4)
            if tokens > budget:
                text = text[: budget * 4]  # truncated to what is left of the budget
                tokens = budget
            budget -= tokens
            kept.append(text)
        return [Item(text=t, key=catalog.key_for(t), state="new") for t in reversed(kept)]


class GeminiCompression(SummaryOnly):
    """Gemini CLI's compression: a model-written ``<state_snapshot>`` of the older history, and
    the newest ~30% kept verbatim (``COMPRESSION_PRESERVE_THRESHOLD``): the running turn's own
    tool calls are still in it, so the model knows which of them it made."""

    name = "gemini compression"

    def after_boundary(self, *, transcript, context_text, catalog, memory):
        from continuation.prove.agent import canon

        items = super().after_boundary(transcript=transcript, context_text=context_text,
                                       catalog=catalog, memory=memory)
        users = _users(transcript)
        if users:
            i, last = users[-1]
            item = next((x for x in items if x.key and x.key == last.get("key")), None)
            if item is None and not _stopped_after(transcript, i, last.get("turn")):
                # the prompt being answered is sent after the compressed history
                item = Item(text=last["text"], key=last.get("key"), state="open")
                items.append(item)
            for e in transcript[i + 1:]:
                if item is not None and e.get("role") == "tool_call" and e.get("key") == item.key:
                    item.done_args = sorted(set(item.done_args) | {canon(e.get("args"))})
        return items


class LatestPromptTurnMatch(_Baseline):
    name = "latest prompt + turn match"

    def after_boundary(self, *, transcript, context_text, catalog, memory):
        users = _users(transcript)
        if not users:
            return []
        i, last = users[-1]
        done = _stopped_after(transcript, i, last.get("turn"))
        return [Item(text=last["text"], key=last.get("key"), state="handled" if done else "open")]


#: each runtime's own compaction, the fallback when no continuation context arrives
NATIVE = {"codex": CodexNativeHistory, "claude": SummaryOnly, "gemini": GeminiCompression}

POLICIES = {"summary-only": "SummaryOnly", "codex-native": "CodexNativeHistory",
            "latest-prompt": "LatestPromptTurnMatch"}
