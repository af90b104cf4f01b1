"""A stand-in hook command for building and debugging the e2e harness.

Appends each hook payload (stdin) as one JSON line to ``$RECORDER_HOOK_LOG``.
For ``SessionStart`` with source ``compact`` or ``resume`` it answers with
``hookSpecificOutput.additionalContext`` holding ``RECORDER_MARKER``, so a run
shows whether such context reaches the model without depending on the engine.
Any other event gets ``{}`` (continue). It never fails the agent.
``RECORDER_CONTEXT_CHARS=N`` pads that context to N characters (ending in
``RECORDER-TAIL``) to measure how much of a long context reaches the model.
"""

from __future__ import annotations

import json
import os
import sys

RECORDER_MARKER = "RECORDER-HOOK-CONTEXT-7f3a"


def main() -> int:
    raw = sys.stdin.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = {"unparsed": raw[:2000]}
    log = os.environ.get("RECORDER_HOOK_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(payload) + "\n")
    answer: dict = {}
    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if event == "SessionStart" and payload.get("source") in ("compact", "resume"):
        context = f"{RECORDER_MARKER} source={payload.get('source')}"
        size = int(os.environ.get("RECORDER_CONTEXT_CHARS") or 0)
        if size > len(context) + 20:
            tail = " RECORDER-TAIL"
            filler = "".join(f"{i:07d} " for i in range(size // 8 + 1))
            context = (context + " " + filler)[: size - len(tail)] + tail
        answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
