"""A scripted stand-in for the Anthropic Messages API, served on loopback.

The real Claude Code CLI is pointed at it with ``ANTHROPIC_BASE_URL``. Every request (method, path,
body) is appended to a JSON-lines log so that tests can check what the CLI sent to the model, e.g.
whether hook context reached it after a compaction.

Answers are scripted by the text of the latest user prompt (the last text block of the last user
message that is not a ``<system-reminder>`` block, so injected hook context cannot steer the
script):

- a compaction request (Claude Code asks for a summary of the conversation) gets a summary;
- the last user message ends with a ``tool_result`` -> a short text answer ``done (N)``;
- a prompt containing a key of ``script`` -> the scripted reply (text or a Bash ``tool_use``);
- anything else -> a short text answer.

Run it by hand with ``python -m tests.e2e.messages_standin --log requests.jsonl``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from standin_server import BackgroundServer, append_log, read_log  # noqa: F401  (read_log: the stand-in's log, for its importers)

MODEL = "claude-standin-1"

# Claude Code's compaction prompt asks for a summary of the conversation so far; these phrases
# occur in it (2.1.x). A request carrying any of them is answered with SUMMARY.
COMPACTION_PHRASES = (
    "create a detailed summary of the conversation",
    "summary of the conversation so far",
    "your task is to create a detailed summary",
)
SUMMARY = "Summary: the user asked to append lines to notes.txt; done."


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, or a Bash tool call (then text once its result comes back)."""

    text: str | None = None
    bash: str | None = None


DEFAULT_SCRIPT: dict[str, Reply] = {
    # Claude Code 2.1.332 refuses `sleep 30` and `sleep 30 && ...` in a Bash call ("Blocked:
    # standalone sleep"), so the slow step is a build script that sleeps (the sandbox writes it).
    "slow task": Reply(bash="sh build.sh"),
    "quick build": Reply(bash="sh build.sh 3"),
    "append a second line": Reply(bash="echo line >> notes.txt"),
    "run the failing check": Reply(bash="sh -c 'echo check failed >&2; exit 3'"),
    "fetch the page": Reply(bash="curl -s http://127.0.0.1:9/"),
    "append a third line": Reply(text="Appended the third line (claim)."),
    "append a line to notes.txt": Reply(text="I will append a line to notes.txt (claim)."),
}


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def _last_user_message(body: dict[str, Any]) -> dict[str, Any] | None:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message
    return None


def latest_prompt(body: dict[str, Any]) -> str:
    """The latest user-typed text: last non-system-reminder text block of the last user message."""
    message = _last_user_message(body)
    if message is None:
        return ""
    texts = [t for t in _text_blocks(message.get("content")) if not t.lstrip().startswith("<system-reminder>")]
    return texts[-1] if texts else ""


def ends_with_tool_result(body: dict[str, Any]) -> bool:
    message = _last_user_message(body)
    content = message.get("content") if message else None
    if not isinstance(content, list):
        return False
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def is_compaction_request(body: dict[str, Any]) -> bool:
    message = _last_user_message(body)
    if message is None:
        return False
    text = "\n".join(_text_blocks(message.get("content"))).lower()
    return any(phrase in text for phrase in COMPACTION_PHRASES)


@dataclass
class StandIn:
    """The scripted model. Thread-safe: Claude Code may send requests concurrently."""

    log_path: Path
    script: dict[str, Reply] = field(default_factory=lambda: dict(DEFAULT_SCRIPT))
    # When set, every answer reports this many input tokens (e.g. near the context window, so that
    # Claude Code auto-compacts); else an estimate from the request size.
    reported_input_tokens: int | None = None
    # Token counts reported by the next answers, one each, before reported_input_tokens applies.
    usage_overrides: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def log(self, method: str, path: str, body: Any) -> None:
        append_log(self.log_path, self._lock, method, path, body)

    def input_tokens(self, body: Any) -> int:
        with self._lock:
            if self.usage_overrides:
                return self.usage_overrides.pop(0)
        return self.reported_input_tokens or _estimate_tokens(body)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Content blocks of the assistant message for this request."""
        n = self.next_id()
        if is_compaction_request(body):
            return [{"type": "text", "text": f"<analysis>scripted</analysis>\n<summary>{SUMMARY}</summary>"}]
        if ends_with_tool_result(body):
            return [{"type": "text", "text": f"done ({n})"}]
        prompt = latest_prompt(body).lower()
        for key, reply in self.script.items():
            if key in prompt:
                if reply.bash is not None:
                    return [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{n:04d}",
                            "name": "Bash",
                            "input": {"command": reply.bash, "description": "scripted command"},
                        }
                    ]
                return [{"type": "text", "text": reply.text or ""}]
        return [{"type": "text", "text": f"ok ({n})"}]


def _estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4)


def sse_events(blocks: list[dict[str, Any]], input_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    """The Messages-API streaming events for one assistant message."""
    stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_standin_{id(blocks):x}",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": input_tokens,
                        "output_tokens": 1,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                    },
                },
            },
        )
    ]
    output_tokens = 1
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
            output_tokens += max(1, len(block["text"]) // 4)
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": start}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block["input"])}}))
            output_tokens += 10
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                     "usage": {"output_tokens": output_tokens}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _message_json(blocks: list[dict[str, Any]], input_tokens: int) -> dict[str, Any]:
    stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_standin",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 5},
    }


def _make_handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the JSON log is enough
            pass

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                return {"unparsed": raw.decode("utf-8", "replace")}

        def _send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_standin")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            standin.log("GET", self.path, None)
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

        def do_HEAD(self) -> None:  # noqa: N802
            standin.log("HEAD", self.path, None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            body = self._read_body()
            standin.log("POST", self.path, body)
            path = self.path.split("?", 1)[0]
            if path.endswith("/v1/messages/count_tokens"):
                self._send_json(200, {"input_tokens": _estimate_tokens(body)})
                return
            if not path.endswith("/v1/messages"):
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                return
            if not isinstance(body, dict) or "unparsed" in body or not isinstance(body.get("messages"), list):
                self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "body must be JSON with messages"}})
                return
            blocks = standin.answer(body)
            tokens = standin.input_tokens(body)
            if not body.get("stream"):
                self._send_json(200, _message_json(blocks, tokens))
                return
            payload = "".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in sse_events(blocks, tokens)
            ).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_standin")
            self.end_headers()
            self.wfile.write(payload)

    return Handler


class StandInServer(BackgroundServer):
    """Serve a StandIn on 127.0.0.1 in a background thread (use as a context manager)."""

    def __init__(self, log_path: Path, script: dict[str, Reply] | None = None, port: int = 0) -> None:
        self.standin = StandIn(Path(log_path), script if script is not None else dict(DEFAULT_SCRIPT))
        super().__init__(_make_handler(self.standin), port=port, name="messages-standin")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="JSON-lines request log")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = StandInServer(args.log, port=args.port)
    print(server.base_url, flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
