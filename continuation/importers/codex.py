"""Codex CLI rollout files (``~/.codex/sessions/.../rollout-*.jsonl``) into timeline ops.

Record shapes (Codex CLI 0.171.0; older shapes where noted):
- ``session_meta``: the session id (``payload.id``), cwd, ``cli_version``;
- ``event_msg`` ``task_started`` / ``task_complete`` / ``turn_aborted`` / ``thread_rolled_back``:
  the turn lifecycle (``turn_context`` also names the turn: older rollouts have no task_started);
- ``response_item`` ``message`` role ``user``: an input, or a contextual fragment the harness
  injected (``<environment_context>``, AGENTS.md / ``<user_instructions>``, ``<turn_aborted>``
  markers, skills and permission instructions). 0.171.0 marks each content item with
  ``content_item_metadata[].provenance.type`` (``user`` vs ``harness``); without that metadata,
  known fragment prefixes are dropped;
- ``response_item`` ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` and their
  ``*_output``: tool calls paired by ``call_id``; ``update_plan`` also gives a plan update;
- ``compacted``: a compaction (its ``replacement_history`` repeats old messages: never inputs).

Everything else (token counts, world state, settings, the ``item_completed`` echoes of items
already read as response items, reasoning) is skipped and counted by type.

Input ids are the hooks' ids (``continuation.session.facts.input_identity``): the hash of
(thread, turn, ordinal, text) with the ordinal = position of the input among its turn's inputs
(what the recording core counts for a prompt hook).
Tool calls are named like the hooks name them (``exec_command`` -> ``Bash`` with
``{"command": ...}``) so hook-recorded and imported calls read the same.
A turn that never got ``task_complete`` / ``turn_aborted`` is *cut* when the next turn starts
(the process died: Codex runs one turn at a time) and at the end of the file when the session
is over: crash-style, its inputs become interrupted, or reconciling with a call in flight.
"""
from __future__ import annotations

import json
import re

from continuation.importers.timeline import Timeline

CONTEXT_PREFIXES = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
    "<turn_aborted>", "<permissions instructions>", "<skills_instructions>", "<INSTRUCTIONS>",
    "<user_shell_command>", "<subagent_notification>", "<collaboration_mode>",
    "<personality_spec>", "<apps_instructions>", "<model_switch>", "<hook_additional_context>",
)
_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")
SHELL_TOOLS = {"exec_command": "Bash", "shell": "Bash", "container.exec": "Bash",
               "local_shell": "Bash", "shell_command": "Bash"}


ITEM_TYPES = ("message", "function_call", "function_call_output", "custom_tool_call",
              "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call")


def session_hint(record: dict) -> tuple[str | None, str | None, str | None]:
    """(session id, cwd, version) when ``record`` names them (the pre-scan)."""
    if record.get("type") == "session_meta" and isinstance(record.get("payload"), dict):
        p = record["payload"]
        sid = p.get("id") or p.get("session_id")
        return (str(sid) if sid else None, p.get("cwd"), p.get("cli_version"))
    if _old_meta(record):
        return str(record["id"]), record.get("cwd"), record.get("version")
    return None, None, None


def _old_meta(record: dict) -> bool:
    """The first line of an early (2025) rollout: a bare ``{"id", "timestamp", ...}``."""
    return "type" not in record and "record_type" not in record and \
        isinstance(record.get("id"), str) and "timestamp" in record


def _id(value) -> str | None:
    """A turn / call id: a non-empty string or number; anything else (a list, an object) is
    not an id."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value) or None


def _is_context(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_PREFIXES)


def user_text(payload: dict) -> tuple[str, list]:
    """The user-authored text of a ``message`` item and its attachments ("" when it holds only
    harness fragments)."""
    content = payload.get("content")
    if isinstance(content, str):
        return ("" if _is_context(content) else content), []
    if not isinstance(content, list):
        return "", []
    meta = payload.get("internal_chat_message_metadata_passthrough")
    provenance = meta.get("content_item_metadata") if isinstance(meta, dict) else None
    texts, attachments = [], []
    for i, item in enumerate(content):
        if not isinstance(item, dict):
            continue
        if isinstance(provenance, list) and i < len(provenance) and isinstance(provenance[i], dict):
            source = provenance[i].get("provenance")
            origin = source.get("type") if isinstance(source, dict) else source
            if origin is not None and origin != "user":
                continue
        kind = item.get("type")
        if kind in ("input_text", "text"):
            text = item.get("text") or ""
            if isinstance(text, str) and text and not _is_context(text):
                texts.append(text)
        elif kind in ("input_image", "image", "local_image"):
            attachments.append({"type": "image", "ref": str(item.get("image_url") or item.get("path") or "")[:200]})
    return "\n".join(texts), attachments


def _tool(payload: dict) -> tuple[str, dict]:
    kind = payload.get("type")
    name = str(payload.get("name") or ("local_shell" if kind == "local_shell_call" else ""))
    raw = payload.get("arguments", payload.get("input", payload.get("action")))
    args: dict
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
            args = parsed if isinstance(parsed, dict) else {"input": parsed}
        except ValueError:
            args = {"input": raw}
    elif isinstance(raw, dict):
        args = dict(raw)
    else:
        args = {} if raw is None else {"input": raw}
    if name in SHELL_TOOLS:
        cmd = args.pop("cmd", None) if "cmd" in args else args.pop("command", None)
        if isinstance(cmd, list):
            cmd = cmd[-1] if len(cmd) >= 3 and cmd[-2] in ("-lc", "-c") else " ".join(map(str, cmd))
        return SHELL_TOOLS[name], {"command": cmd, **args} if cmd is not None else args
    return name, args


def _outcome(output) -> tuple[str, int | None, str]:
    if isinstance(output, dict):  # {"content": ..., "success": bool} in some versions
        text = output.get("content") if isinstance(output.get("content"), str) else json.dumps(output)
        ok = output.get("success")
        code = None
    else:
        text = output if isinstance(output, str) else json.dumps(output)
        ok = None
        code = None
        try:  # older: '{"output": "...", "metadata": {"exit_code": 0}}'
            parsed = json.loads(text)
            if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
                code = parsed["metadata"].get("exit_code")
        except ValueError:
            pass
    if code is None and isinstance(text, str):
        m = _EXIT.search(text[:4000])
        code = int(m.group(1)) if m else None
    failed = ok is False or (isinstance(code, int) and code != 0)
    return ("error" if failed else "ok"), (code if isinstance(code, int) else None), text


class CodexParser:
    runtime = "codex"

    def __init__(self, timeline: Timeline):
        self.tl = timeline
        self.report = timeline.report
        self.current: str | None = None  # the running turn
        self.lifecycle = False  # the rollout records turns (task_started / turn ids)
        self.synthetic = 0  # turns numbered by the importer (early rollouts name none)
        self.nested: set[str] = set()  # sub-agent turns (a parent turn id is named)

    def _start(self, turn_id: str | None, *, nested: bool = False) -> None:
        if not turn_id:
            return
        turn_id = str(turn_id)
        if turn_id == self.current and self.tl.turns.get(turn_id) and \
                self.tl.turns[turn_id].status == "running":
            return
        if nested:  # a sub-agent's turn runs inside its parent's: nothing was cut
            self.nested.add(turn_id)
            self.tl.turn(turn_id)
            return
        for t in self.tl.running():
            if t.turn_id != turn_id and t.turn_id not in self.nested:
                # Codex runs one turn at a time: a new turn means the old one's process died
                self.tl.cut_turn(t.turn_id, "a new turn started before it completed")
        self.tl.turn(turn_id)
        self.current = turn_id

    def _turn_of(self, payload: dict) -> str | None:
        meta = payload.get("internal_chat_message_metadata_passthrough")
        if isinstance(meta, dict) and _id(meta.get("turn_id")):
            return _id(meta["turn_id"])
        return _id(payload.get("turn_id")) or self.current

    def _synthetic_turn(self) -> str:
        """Early rollouts name no turns: a user message after a reply starts the next one (the
        previous reply ended its turn), one before any reply joins the running turn."""
        t = self.tl.turns.get(self.current) if self.current else None
        if t is not None and t.status == "running" and not t.replied:
            return t.turn_id
        if t is not None and t.status == "running":
            self.tl.complete_turn(t.turn_id, how="inferred_next_prompt")
        self.synthetic += 1
        turn = f"import-turn-{self.synthetic}"
        self.tl.turn(turn)
        self.current = turn
        return turn

    def feed(self, record: dict) -> None:
        rtype = record.get("type")
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        if "payload" not in record and rtype in ITEM_TYPES:
            return self._item(record)  # early rollouts: bare response items
        if _old_meta(record) or "record_type" in record:
            self.report.skipped_by_type["session_meta" if _old_meta(record) else
                                        f"record_type:{record.get('record_type')}"] += 1
            return
        if rtype == "session_meta":
            if payload.get("cli_version"):
                self.report.versions.add(str(payload["cli_version"]))
            self.report.skipped_by_type["session_meta"] += 1
        elif rtype == "event_msg":
            self._event(payload)
        elif rtype == "turn_context":
            turn = _id(payload.get("turn_id"))
            if turn:
                self.lifecycle = True
            if turn and turn != self.current:
                self._start(turn)
            self.report.skipped_by_type["turn_context"] += 1
        elif rtype == "response_item":
            self._item(payload)
        elif rtype == "compacted":
            self.tl.boundary("compact", str(payload.get("trigger") or
                                            ("auto" if self.tl.running() else "manual")))
        elif rtype in ("world_state", "token_usage_record"):
            self.report.skipped_by_type[rtype] += 1
        else:
            name = str(rtype) if rtype is not None else "(no type)"
            self.report.skipped_by_type[name] += 1
            self.report.unknown_types[name] += 1

    def _event(self, p: dict) -> None:
        kind = p.get("type")
        if kind == "task_started":
            attribution = p.get("turn_attribution") if isinstance(p.get("turn_attribution"), dict) else {}
            turn = _id(p.get("turn_id")) or _id(attribution.get("turn_id"))
            if not turn:
                self.synthetic += 1
                turn = f"import-turn-{self.synthetic}"
            self.lifecycle = True
            self._start(turn, nested=bool(attribution.get("parent_turn_id")))
        elif kind == "task_complete":
            self.lifecycle = True
            turn = str(p.get("turn_id") or self.current or "")
            if turn and turn not in self.tl.turns:
                self.tl.turn(turn)
            self.tl.complete_turn(turn, p.get("last_agent_message") or None, how="task_complete")
        elif kind == "turn_aborted":
            turn = str(p.get("turn_id") or self.current or "")
            self.tl.abort_turn(turn, f"turn_aborted: {p.get('reason') or 'interrupted'}",
                               interrupt=True)
        elif kind == "thread_rolled_back":
            self._rollback(p)
        else:
            self.report.skipped_by_type[f"event_msg:{kind}"] += 1

    def _rollback(self, p: dict) -> None:
        """``thread_rolled_back`` drops the last ``num_turns`` user turns from the history:
        their inputs leave the thread (rolled back). Turns without inputs are not counted."""
        n = p.get("num_turns")
        n = int(n) if isinstance(n, int) and n > 0 else 1
        # turns an earlier rollback dropped are gone from the history: not counted again
        with_inputs = [t for t in self.tl.order
                       if self.tl.turns[t].inputs and not self.tl.turns[t].rolled_back]
        dropped = with_inputs[-n:]
        ids = [i for t in dropped for i in self.tl.turns[t].inputs]
        for t in dropped:
            self.tl.turns[t].rolled_back = True
            if self.tl.turns[t].status == "running":
                self.tl.abort_turn(t, "rolled back")
        self.tl.rollback(ids, f"codex thread_rolled_back ({n} turn(s))")

    def _item(self, p: dict) -> None:
        kind = p.get("type")
        if kind == "message":
            role = p.get("role")
            if role == "user":
                text, attachments = user_text(p)
                if not text.strip() and not attachments:
                    self.report.skipped_by_type["message:user(context)"] += 1
                    return
                turn = self._turn_of(p)
                if turn is None or (not self.lifecycle and turn.startswith("import-turn-")):
                    turn = self._synthetic_turn()
                if turn not in self.tl.turns:
                    self._start(turn)
                self.tl.admit(text, turn_id=turn, attachments=attachments)
            elif role == "assistant":
                content = p.get("content")
                if isinstance(content, str):
                    content = [{"text": content}]
                parts = [c.get("text") for c in content if isinstance(c, dict)
                         and isinstance(c.get("text"), str)] if isinstance(content, list) else []
                self.tl.assistant_text(self._turn_of(p), "\n".join(parts))
            else:
                self.report.skipped_by_type[f"message:{role}"] += 1
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = p.get("call_id") or p.get("id")
            if not call_id:
                self.report.malformed.append({"line": self.tl.line, "offset": self.tl.offset,
                                              "reason": f"{kind} without call_id"})
                return
            tool, args = _tool(p)
            plan = args.get("plan") if tool == "update_plan" else None
            self.tl.tool_started(str(call_id), tool, args, self._turn_of(p),
                                 plan_items=plan if isinstance(plan, list) else None)
            if kind == "local_shell_call" and p.get("status") in ("completed", "failed"):
                self.tl.tool_finished(str(call_id), "ok" if p["status"] == "completed" else "error")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = p.get("call_id")
            if not call_id:
                self.report.malformed.append({"line": self.tl.line, "offset": self.tl.offset,
                                              "reason": f"{kind} without call_id"})
                return
            status, code, text = _outcome(p.get("output"))
            self.tl.tool_finished(str(call_id), status, exit_code=code, output=text)
        else:
            self.report.skipped_by_type[f"response_item:{kind}"] += 1

    def finish(self) -> None:
        # without a turn lifecycle in the file, a final text reply ends the last turn
        self.tl.infer_completion_at_end = not self.lifecycle
        self.tl.finish()
