"""A scripted stand-in for the Gemini API (``generativelanguage`` v1beta), served on loopback.

The real Gemini CLI is pointed at it with ``GOOGLE_GEMINI_BASE_URL`` (0.61.0 reads it in
``createContentGenerator``; with it set and no other credentials the CLI uses its "gateway" auth
and sends plain ``models/{model}:streamGenerateContent?alt=sse`` / ``:generateContent`` /
``:countTokens`` requests). Every request (method, path, body) is appended to a JSON-lines log, so
a test can check what the CLI sent to the model.

Answers, by the latest user text (``<hook_context>`` blocks removed, so injected context cannot
steer the script):

- a compression request (the CLI asks for a ``<state_snapshot>``) -> a snapshot text;
- a JSON request (``responseMimeType: application/json``: next-speaker check, router) -> a JSON
  object saying the user speaks next;
- the last user content holds a ``functionResponse`` -> a short text ``done (N)``;
- a prompt containing a key of ``script`` -> a ``run_shell_command`` function call;
- anything else -> a short text.

``prompt_tokens`` (a function of the request body, default: an estimate) sets the
``usageMetadata.promptTokenCount`` reported, which is what the CLI compares with its compression
threshold: report most of the window and the next request compresses.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from standin_server import BackgroundServer, append_log, read_log  # noqa: F401  (read_log: the stand-in's log, for its importers)

SNAPSHOT = "<state_snapshot>the user asked to append lines to notes.txt</state_snapshot>"
DEFAULT_SCRIPT: dict[str, str] = {
    "append a line": "echo line >> notes.txt",
    "append a second line": "echo second >> notes.txt",
    "two steps": "echo one >> steps.txt",
}
# After the result of a command on the left, the model runs the one on the right.
DEFAULT_CHAIN: dict[str, str] = {"echo one >> steps.txt": "echo two >> steps.txt"}
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.S)


def _texts(content: Any) -> list[str]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]


def user_contents(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in body.get("contents") or [] if isinstance(c, dict) and c.get("role") == "user"]


def latest_prompt(body: dict[str, Any]) -> str:
    users = user_contents(body)
    if not users:
        return ""
    return _HOOK_CONTEXT.sub("", "\n".join(_texts(users[-1]))).strip()


def ends_with_function_response(body: dict[str, Any]) -> bool:
    users = user_contents(body)
    parts = users[-1].get("parts") if users else None
    return any(isinstance(p, dict) and "functionResponse" in p for p in parts or [])


def last_command(body: dict[str, Any]) -> str | None:
    """The command of the newest ``run_shell_command`` call in the request's history."""
    for content in reversed(body.get("contents") or []):
        for part in reversed(content.get("parts") or [] if isinstance(content, dict) else []):
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict):
                return (call.get("args") or {}).get("command")
    return None


def request_text(body: Any) -> str:
    """Every text the request carries (contents and function responses), for assertions."""
    return json.dumps(body, ensure_ascii=False)


def _estimate(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4)


@dataclass
class GeminiStandIn:
    log_path: Path
    script: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_SCRIPT))
    chain: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CHAIN))
    prompt_tokens: Callable[[dict[str, Any]], int] = _estimate
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def log(self, method: str, path: str, body: Any) -> None:
        append_log(self.log_path, self._lock, method, path, body)

    def parts(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            n = next(self._ids)
        config = body.get("generationConfig") or {}
        if "<state_snapshot>" in latest_prompt(body):
            return [{"text": SNAPSHOT}]
        if config.get("responseMimeType") == "application/json":
            return [{"text": json.dumps({"reasoning": "scripted", "next_speaker": "user",
                                         "model_choice": "flash"})}]
        if ends_with_function_response(body):
            follow = self.chain.get(last_command(body) or "")
            if follow:
                return [self._call(follow)]
            return [{"text": f"done ({n})"}]
        prompt = latest_prompt(body).lower()
        for key in sorted(self.script, key=len, reverse=True):
            if key in prompt:
                return [self._call(self.script[key])]
        return [{"text": f"ok ({n})"}]

    @staticmethod
    def _call(command: str) -> dict[str, Any]:
        return {"functionCall": {"name": "run_shell_command",
                                 "args": {"command": command, "description": "scripted command"}}}

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        tokens = self.prompt_tokens(body)
        return {
            "candidates": [{"content": {"role": "model", "parts": self.parts(body)},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": tokens, "candidatesTokenCount": 5,
                              "totalTokenCount": tokens + 5},
            "modelVersion": "gemini-standin",
        }


def _handler(standin: GeminiStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError):
                return {"unparsed": raw.decode("utf-8", "replace")}

        def _send(self, status: int, payload: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802
            standin.log("GET", self.path, None)
            self._send(404, b'{"error": {"code": 404, "message": "not here"}}', "application/json")

        def do_POST(self) -> None:  # noqa: N802
            body = self._body()
            standin.log("POST", self.path, body)
            path = self.path.split("?", 1)[0]
            if not isinstance(body, dict):
                self._send(400, b'{"error": {"code": 400, "message": "JSON body expected"}}', "application/json")
            elif path.endswith(":countTokens"):
                self._send(200, json.dumps({"totalTokens": _estimate(body)}).encode(), "application/json")
            elif path.endswith(":streamGenerateContent"):
                data = f"data: {json.dumps(standin.response(body))}\r\n\r\n".encode()
                self._send(200, data, "text/event-stream")
            elif path.endswith(":generateContent"):
                self._send(200, json.dumps(standin.response(body)).encode(), "application/json")
            else:
                self._send(404, b'{"error": {"code": 404, "message": "not here"}}', "application/json")

    return Handler


class GeminiStandInServer(BackgroundServer):
    """Serve a :class:`GeminiStandIn` on 127.0.0.1 in a background thread (a context manager)."""

    def __init__(self, log_path: Path, **kwargs: Any) -> None:
        self.standin = GeminiStandIn(Path(log_path), **kwargs)
        super().__init__(_handler(self.standin), name="gemini-standin")
