"""Will Gemini CLI compress after this ``PreCompress``?

Gemini CLI 0.61.0 fires ``PreCompress`` with ``trigger: "auto"`` before EVERY model request of a
turn (``ChatCompressionService.compress`` fires the hook first and only then compares the last
prompt's token count with its threshold; measured with the real binary: a one-prompt session
with one tool call sends two). A checkpoint per model request would cost a workspace snapshot
and a tokenizer each time, and a boundary per request would re-inject the context every turn.
So an ``auto`` trigger is a boundary only when the CLI's own first test passes: the prompt
token count it last recorded (the newest ``tokens.input`` in the session file,
``transcript_path``) is at least ``model.compressionThreshold`` (settings: the project's
``.gemini/settings.json`` over the user's, default 0.5) of the model's window (1,048,576
tokens; 256,000 for Gemma 4). ``manual`` (``/compress``) always compresses.

Where this and the CLI disagree: the CLI may still find nothing to compress (too little history
before the newest prompt): an extra checkpoint. The first request of a resumed process compares
an estimate of the history (characters / 4) instead of the recorded count; the recorded count
also covers the system prompt and tool declarations and is normally the larger (an extra
checkpoint again), but when the estimate alone crosses the threshold the boundary is missed.
"""
from __future__ import annotations

import json
import os

DEFAULT_THRESHOLD = 0.5
DEFAULT_WINDOW = 1_048_576
GEMMA_4_WINDOW = 256_000
TAIL_BYTES = 1 << 20
SETTINGS_MAX_BYTES = 4 << 20


def _last_recorded(transcript_path: str | None) -> tuple[int | None, str | None]:
    """(prompt tokens, model) of the newest Gemini message that recorded its usage."""
    from continuation.host.userfiles import read_tail

    if not transcript_path or not isinstance(transcript_path, str):
        return None, None
    try:
        lines = read_tail(transcript_path, TAIL_BYTES)[0].split(b"\n")
    except OSError:  # gone, unreadable, or a FIFO / device named as the transcript
        return None, None
    for line in reversed(lines):
        if b'"tokens"' not in line:
            continue
        try:
            record = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        tokens = record.get("tokens") if isinstance(record, dict) else None
        if record.get("type") == "gemini" and isinstance(tokens, dict) \
                and isinstance(tokens.get("input"), int):
            return tokens["input"], record.get("model") if isinstance(record.get("model"), str) else None
    return None, None


def _settings_threshold(cwd: str | None, env) -> float:
    home = env.get("GEMINI_CLI_HOME") or os.path.expanduser("~")
    candidates = []
    if cwd:
        candidates.append(os.path.join(cwd, ".gemini", "settings.json"))
    candidates.append(os.path.join(home, ".gemini", "settings.json"))
    from continuation.host.userfiles import read_bounded

    for path in candidates:
        try:
            data = json.loads(read_bounded(path, SETTINGS_MAX_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            continue
        value = (data.get("model") or {}).get("compressionThreshold") if isinstance(data, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return DEFAULT_THRESHOLD


def window(model: str | None) -> int:
    return GEMMA_4_WINDOW if model and model.startswith("gemma-4") else DEFAULT_WINDOW


def will_compress(payload: dict, env=None) -> bool:
    if str(payload.get("trigger") or "auto") == "manual":
        return True
    tokens, model = _last_recorded(payload.get("transcript_path"))
    if tokens is None:
        return False
    threshold = _settings_threshold(payload.get("cwd"), os.environ if env is None else env)
    return tokens >= threshold * window(model)
