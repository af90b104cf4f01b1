"""A scripted stand-in for the OpenAI Responses API, served on 127.0.0.1.

The real Codex CLI is pointed at it through a ``model_providers`` entry with
``wire_api = "responses"``; every ``POST .../responses`` is answered with a
streamed (SSE) response the way Codex parses it: ``response.created``, one
``response.output_item.added`` / ``response.output_item.done`` pair per output
item (``response.output_text.delta`` for text), and ``response.completed``
carrying ``usage`` (Codex uses that usage to decide when to auto-compact).

The "model" is a small deterministic script (:class:`ScriptedModel`):

* a compaction request (Codex's local compaction prompt is the last user
  message) is answered with a fixed ``SUMMARY: ...`` text;
* a prompt that contains a command in backticks is answered with one
  ``exec_command`` function call running it (or ``shell_command`` / ``shell``,
  whichever tool the request offers), and once that call's output is in the
  input, with ``done with: <prompt>``;
* anything else gets ``done with: <prompt>``.

Reported input tokens are scripted too: ``tokens_before_compaction`` until the
first compaction request was answered, ``tokens_after_compaction`` afterwards,
so a low ``model_auto_compact_token_limit`` makes exactly one compaction happen
(the real fixture in ``../shared/fixtures/codex`` shows what a constant high
count does: a compaction after every tool call).

Every request is appended, as one JSON line, to a log file: ``{"seq", "path",
"kind", "body"}``, so a test can read what Codex sent to the model.

Run standalone (used by ``scripts/e2e_codex.sh``)::

    python tests/e2e/responses_standin.py --log requests.jsonl --port-file port
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Text Codex puts in the last user message of a local ("inline") compaction
# request (codex-rs/core/templates/compact/prompt.md). Two phrasings are
# accepted so a reworded prompt still counts as compaction.
COMPACTION_MARKERS = ("CONTEXT CHECKPOINT COMPACTION", "handoff summary")
SUMMARY_TEXT = "SUMMARY: the user asked for work in this repository; see the user messages."
_BACKTICK_COMMAND = re.compile(r"`([^`]+)`")


def _message_text(item: dict[str, Any]) -> str:
    parts = item.get("content")
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return ""
    return "".join(
        part.get("text", "") for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _is_contextual_fragment(text: str) -> bool:
    # Codex injects <environment_context>, AGENTS.md and similar blocks as user
    # messages; they all start with a tag or a known heading.
    stripped = text.lstrip()
    return (
        stripped.startswith("<")
        or stripped.startswith("# AGENTS.md")
        # Codex's compaction summary comes back as a user message with this prefix.
        or stripped.startswith("Another language model started to solve this problem")
    )


def request_kind(body: dict[str, Any]) -> str:
    """``compaction`` when the request is Codex's local compaction turn, else ``turn``."""
    items = body.get("input") or []
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            text = _message_text(item)
            return "compaction" if any(marker in text for marker in COMPACTION_MARKERS) else "turn"
    return "turn"


def last_user_prompt(body: dict[str, Any]) -> tuple[int, str] | None:
    """Index and text of the last real user prompt in ``input`` (skips injected context)."""
    items = body.get("input") or []
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            text = _message_text(item)
            if text and not _is_contextual_fragment(text):
                return index, text
    return None


def tool_names(body: dict[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str):
                names.add(name)
    return names


@dataclass
class ScriptedModel:
    """Deterministic replies; reported input tokens follow a small schedule.

    ``turn_tokens[i]``, when given, is reported for the i-th non-compaction
    request (the last value repeats); otherwise ``tokens_before_compaction``
    until a compaction was answered and ``tokens_after_compaction`` after it.
    Compaction answers report ``tokens_after_compaction``.
    """

    tokens_before_compaction: int = 1500
    tokens_after_compaction: int = 200
    turn_tokens: list[int] | None = None
    compactions_answered: int = 0
    turns_answered: int = 0
    _ids: itertools.count = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def input_tokens(self, kind: str, turn_index: int) -> int:
        if kind == "compaction":
            return self.tokens_after_compaction
        if self.turn_tokens:
            return self.turn_tokens[min(turn_index, len(self.turn_tokens) - 1)]
        return self.tokens_after_compaction if self.compactions_answered else self.tokens_before_compaction

    def respond(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], int]:
        """(kind, output items, reported input tokens) for one request."""
        kind, items = self.reply(body)
        with self._lock:
            if kind == "compaction":
                self.compactions_answered += 1
                turn_index = -1
            else:
                turn_index = self.turns_answered
                self.turns_answered += 1
        return kind, items, self.input_tokens(kind, turn_index)

    def reply(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """(kind, output items) for one request (no state change)."""
        n = self.next_id()
        if request_kind(body) == "compaction":
            return "compaction", [_assistant_message(f"msg_{n}", SUMMARY_TEXT)]
        found = last_user_prompt(body)
        if found is None:
            return "turn", [_assistant_message(f"msg_{n}", "done")]
        index, prompt = found
        command = _BACKTICK_COMMAND.search(prompt)
        later = (body.get("input") or [])[index + 1 :]
        has_output = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in later)
        if command and not has_output:
            return "turn", [_function_call(n, command.group(1), tool_names(body))]
        return "turn", [_assistant_message(f"msg_{n}", f"done with: {prompt}")]


def _assistant_message(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _function_call(n: int, command: str, tools: set[str]) -> dict[str, Any]:
    if "exec_command" in tools or not tools:
        name, arguments = "exec_command", {"cmd": command}
    elif "shell_command" in tools:
        name, arguments = "shell_command", {"command": command}
    else:
        name, arguments = "shell", {"command": ["bash", "-lc", command]}
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def sse_events(response_id: str, items: list[dict[str, Any]], input_tokens: int) -> bytes:
    """The SSE body Codex's Responses client reads for one response."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}
    ]
    output_tokens = 10
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index, "item": {**item, "status": "in_progress"}})
        if item["type"] == "message":
            text = _message_text(item)
            events.append(
                {"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                 "content_index": 0, "delta": text}
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append(
        {
            "type": "response.completed",
            "response": {
                "id": response_id,
                "status": "completed",
                "output": items,
                "usage": {
                    "input_tokens": input_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": output_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": input_tokens + output_tokens,
                },
            },
        }
    )
    chunks = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]
    return "".join(chunks).encode("utf-8")


def _decode_body(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    if encoding == "zstd":
        try:
            import zstandard  # type: ignore[import-not-found]
        except ImportError as exc:  # pragma: no cover - only when Codex compresses
            raise ValueError("request body is zstd-compressed and 'zstandard' is not installed") from exc
        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20)
    return raw


class ResponsesStandin:
    """Serves :class:`ScriptedModel` on ``127.0.0.1:<port>``; use as a context manager."""

    def __init__(self, log_path: Path, model: ScriptedModel | None = None, port: int = 0) -> None:
        self.log_path = Path(log_path)
        self.model = model or ScriptedModel()
        self._seq = itertools.count(1)
        self._log_lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                return

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                standin._log({"path": self.path, "method": "GET", "kind": "get"})
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [], "models": []}).encode(), "application/json")
                else:
                    self._send(404, b'{"error":"not found"}', "application/json")

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(_decode_body(raw, self.headers.get("Content-Encoding", "")))
                except (ValueError, OSError) as exc:
                    standin._log({"path": self.path, "method": "POST", "kind": "unreadable", "error": str(exc)})
                    self._send(400, json.dumps({"error": str(exc)}).encode(), "application/json")
                    return
                if not self.path.rstrip("/").endswith("/responses"):
                    standin._log({"path": self.path, "method": "POST", "kind": "unknown", "body": body})
                    self._send(404, b'{"error":"not found"}', "application/json")
                    return
                kind, items, tokens = standin.model.respond(body)
                seq = standin._log({"path": self.path, "method": "POST", "kind": kind, "input_tokens": tokens, "body": body, "reply": items})
                self._send(200, sse_events(f"resp_{seq}", items, tokens), "text/event-stream")

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _log(self, record: dict[str, Any]) -> int:
        with self._log_lock:
            seq = next(self._seq)
            line = json.dumps({"seq": seq, **record}, ensure_ascii=False)
            with self.log_path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
            return seq

    def requests(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def start(self) -> "ResponsesStandin":
        self._thread = threading.Thread(target=self._server.serve_forever, name="responses-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ResponsesStandin":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="file that receives one JSON line per request")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the chosen port here once listening")
    parser.add_argument("--tokens-before", type=int, default=1500)
    parser.add_argument("--tokens-after", type=int, default=200)
    parser.add_argument("--turn-tokens", type=lambda v: [int(x) for x in v.split(",")], default=None,
                        help="comma-separated input tokens for the 1st, 2nd, ... turn request (last repeats)")
    args = parser.parse_args(argv)
    model = ScriptedModel(tokens_before_compaction=args.tokens_before, tokens_after_compaction=args.tokens_after,
                          turn_tokens=args.turn_tokens)
    standin = ResponsesStandin(args.log, model, args.port)
    if args.port_file:
        args.port_file.write_text(str(standin.port), encoding="utf-8")
    try:
        standin._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        standin._server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
