"""``continuation hook --runtime codex|claude``: one hook payload in (JSON on stdin), one answer out.

Fail-open: any error of ours is logged under the state home (``logs/hooks.log``) and the hook
answers "continue" (``{}``) with exit 0, so the user's agent goes on. Strict mode
(``CONTINUATION_STRICT=1``) turns our errors into exit 2 with the message on stderr, for
debugging an installation.

The hot path (UserPromptSubmit, PreToolUse, PostToolUse) imports only json, sqlite3 and the
reducer: no pydantic, no tokenizer, no GitPython, no transcript scan.
"""
from __future__ import annotations

import json
import os
import sys
import time

MAX_STDIN_BYTES = 64 * 1024 * 1024  # a runtime never sends this much; refuse, don't swallow RAM
CONTINUE = "{}"


class HookInputError(ValueError):
    """The payload is not a hook payload we can read (empty, malformed, not an object)."""


def parse_payload(raw: bytes) -> dict:
    if not raw.strip():
        raise HookInputError("empty hook payload on stdin")
    if len(raw) > MAX_STDIN_BYTES:
        raise HookInputError(f"hook payload of {len(raw)} bytes exceeds {MAX_STDIN_BYTES}")
    try:
        payload = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"malformed hook payload: {exc}") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"hook payload is a JSON {type(payload).__name__}, not an object")
    return payload


def strict_mode() -> bool:
    return os.environ.get("CONTINUATION_STRICT", "").strip().lower() in ("1", "true", "yes")


def payload_digest(raw: bytes) -> str:
    """What the log keeps of a payload: its length and sha256, never its text (a prompt may
    hold secrets, and the log outlives the session)."""
    import hashlib

    return f"payload_bytes={len(raw)} payload_sha256={hashlib.sha256(raw).hexdigest()}"


def _log_error(runtime: str, raw: bytes, exc: BaseException) -> None:
    try:
        import traceback

        from ..paths import open_private, state_home_str

        fd = open_private(os.path.join(state_home_str(), "logs", "hooks.log"))
        with open(fd, "a", encoding="utf-8") as fh:
            fh.write(
                f"{time.strftime('%Y-%m-%dT%H:%M:%S')} runtime={runtime} error={exc!r}\n"
                f"{payload_digest(raw)}\n{traceback.format_exc()}\n"
            )
    except Exception:
        pass  # logging must never turn a fail-open hook into a failing one


def run(runtime: str, raw: bytes) -> tuple[str, int]:
    """Handle one payload; returns (stdout text, exit code)."""
    try:
        payload = parse_payload(raw)
        from .handlers import handle

        answer = handle(runtime, payload)
        return (json.dumps(answer, ensure_ascii=False) if answer else CONTINUE), 0
    except Exception as exc:  # fail open: the user's agent must go on
        _log_error(runtime, raw, exc)
        if strict_mode():
            sys.stderr.write(f"continuation hook: {exc}\n")
            return CONTINUE, 2
        return CONTINUE, 0


def main(argv: list[str]) -> int:
    runtime = "codex"
    if "--runtime" in argv:
        i = argv.index("--runtime")
        runtime = argv[i + 1] if i + 1 < len(argv) else ""
    else:
        for arg in argv:
            if arg.startswith("--runtime="):
                runtime = arg.split("=", 1)[1]
    if runtime not in ("codex", "claude"):
        sys.stderr.write("continuation hook: --runtime must be codex or claude\n")
        return 2
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    out, code = run(runtime, raw)
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    return code
