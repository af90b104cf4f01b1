"""A seeded, realistic Claude Code transcript of a chosen size, for the import benchmarks.

Shaped like real Claude Code 2.1 session files (see the ``claude-real`` fixture): every record
carries the session's metadata (36-char ``uuid`` / ``parentUuid`` / ``promptId``, cwd, version,
git branch), a turn is a user prompt, assistant records with ``tool_use`` blocks (distinct Bash
commands, Reads, Edits, TodoWrite) each answered by a user record with a ``tool_result`` (most
outputs a few lines, one in 25 a dump of 30-250 KB; Reads, Edits and Writes carry the file in ``toolUseResult`` as Claude Code does), thinking and text blocks, Bash progress records, a final text reply with
``stop_reason: end_turn`` and a ``stop_hook_summary``. Attachments and queue operations are
sprinkled in as the runtime writes them; a compaction every 400 turns.

Usage: ``python scripts/gen_claude_transcript.py OUT.jsonl SIZE_MB [SEED]``.
"""
from __future__ import annotations

import json
import random
import sys
import time
import uuid as uuidlib
from pathlib import Path

VERSION = "2.1.332"
CWD = "/home/dev/project"
WORDS = ("module", "import", "cache", "thread", "record", "value", "error", "config", "parser",
         "buffer", "index", "session", "event", "store", "return", "class", "def", "self")


def _uuid(rng: random.Random) -> str:
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


class _Writer:
    def __init__(self, fh, rng: random.Random, session: str):
        self.fh, self.rng, self.session = fh, rng, session
        self.parent: str | None = None
        self.bytes = 0
        self.call = 0
        self.ts = 1_795_945_864_000

    def _stamp(self) -> str:
        self.ts += self.rng.randint(5, 4000)
        s, ms = divmod(self.ts, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{ms:03d}Z"

    def emit(self, record: dict, *, chain: bool = True) -> str:
        uid = _uuid(self.rng)
        if chain:
            record = {"parentUuid": self.parent, "isSidechain": False, **record, "uuid": uid,
                      "timestamp": self._stamp(), "userType": "external",
                      "entrypoint": "cli", "cwd": CWD, "sessionId": self.session,
                      "version": VERSION, "gitBranch": "main"}
            self.parent = uid
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.fh.write(line)
        self.bytes += len(line.encode("utf-8"))
        return uid

    def text(self, n_words: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(n_words))

    def lines(self, n: int) -> str:
        return "\n".join(f"{i:5d}\u2192{self.text(self.rng.randint(3, 12))}" for i in range(1, n + 1))

    def output(self) -> str:
        roll = self.rng.random()
        if roll < 1 / 25:  # a big dump: a test log, a long file read, a wide grep
            return self.lines(self.rng.randint(400, 3000))
        if roll < 0.3:
            return ""
        return self.lines(self.rng.randint(1, 40))

    def assistant(self, content: list, stop: str | None, n: int) -> None:
        # Claude Code writes each content block of a message as a record of its own
        self.emit({"message": {"id": f"msg_{n:08d}", "type": "message", "role": "assistant",
                               "model": "claude-opus-5-5", "content": content,
                               "stop_reason": stop, "stop_sequence": None,
                               "usage": {"input_tokens": self.rng.randint(1000, 90000),
                                         "cache_creation_input_tokens": 0,
                                         "cache_read_input_tokens": self.rng.randint(0, 90000),
                                         "output_tokens": self.rng.randint(5, 900),
                                         "service_tier": "standard"}},
                   "requestId": "req_" + _uuid(self.rng).replace("-", "")[:24],
                   "type": "assistant"})

    def tool(self, prompt_id: str, n: int) -> None:
        self.call += 1
        call_id = f"toolu_{_uuid(self.rng).replace('-', '')[:24]}"
        kind = self.rng.random()
        out = self.output()
        extra: dict = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        path = f"{CWD}/src/{self.rng.choice(WORDS)}_{self.call % 97}.py"
        if kind < 0.5:  # distinct commands: the call number is in each
            name, args = "Bash", {"command": f"cd src && grep -rn {self.text(2)!r} . | head -{self.call}",
                                  "description": self.text(5)}
        elif kind < 0.75:
            name, args = "Read", {"file_path": path}
            extra = {"type": "text", "file": {"filePath": path, "content": out,
                                              "numLines": out.count("\n") + 1, "startLine": 1}}
        elif kind < 0.9:
            name, args = "Edit", {"file_path": path, "old_string": self.text(30),
                                  "new_string": self.text(40), "replace_all": False}
            out = f"The file {path} has been updated."
            extra = {"filePath": path, "oldString": args["old_string"],
                     "newString": args["new_string"], "originalFile": self.lines(self.rng.randint(20, 400)),
                     "structuredPatch": [{"oldStart": 3, "oldLines": 1, "newStart": 3,
                                          "newLines": 1, "lines": ["-" + args["old_string"],
                                                                   "+" + args["new_string"]]}]}
        elif kind < 0.97:
            name, args = "Write", {"file_path": path, "content": self.lines(self.rng.randint(10, 300))}
            out = f"File created successfully at: {path}"
            extra = {"type": "create", "filePath": path, "content": args["content"]}
        else:
            name, args = "TodoWrite", {"todos": [{"content": self.text(6), "status": "pending",
                                                  "activeForm": self.text(4)} for _ in range(3)]}
            out = "Todos have been modified successfully."
            extra = {"oldTodos": [], "newTodos": args["todos"]}
        if self.rng.random() < 0.5:
            self.assistant([{"type": "thinking", "thinking": self.text(self.rng.randint(20, 300)),
                             "signature": _uuid(self.rng).replace("-", "") * 8}], None, n)
        if self.rng.random() < 0.4:
            self.assistant([{"type": "text", "text": self.text(self.rng.randint(10, 60))}], None, n)
        self.assistant([{"type": "tool_use", "id": call_id, "name": name, "input": args}],
                       "tool_use", n)
        tool_uuid = self.parent
        if name == "Bash":
            for i in range(self.rng.randint(0, 3)):  # streamed output, as Claude Code logs it
                self.emit({"type": "progress", "data": {"type": "bash_progress",
                                                        "output": out[: 200 * (i + 1)],
                                                        "elapsedTimeSeconds": i + 1},
                           "toolUseID": call_id, "parentToolUseID": call_id})
        self.emit({"promptId": prompt_id, "type": "user",
                   "message": {"role": "user", "content": [
                       {"tool_use_id": call_id, "type": "tool_result", "content": out,
                        "is_error": self.rng.random() < 0.05}]},
                   "toolUseResult": extra, "sourceToolAssistantUUID": tool_uuid})


def generate(path: Path, size_mb: float, seed: int = 35) -> dict:
    """Write ``path`` (about ``size_mb`` MB); returns its turn, call and byte counts."""
    rng = random.Random(seed)
    session = _uuid(rng)
    target = int(size_mb * 1024 * 1024)
    turns = 0
    with open(path, "w", encoding="utf-8") as fh:
        w = _Writer(fh, rng, session)
        n = 0
        while w.bytes < target:
            turns += 1
            prompt_id = _uuid(rng)
            prompt = f"turn {turns}: please {w.text(rng.randint(6, 40))}"
            w.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": w._stamp(),
                    "sessionId": session, "content": prompt}, chain=False)
            w.emit({"type": "queue-operation", "operation": "dequeue", "timestamp": w._stamp(),
                    "sessionId": session}, chain=False)
            w.emit({"promptId": prompt_id, "type": "user",
                    "message": {"role": "user", "content": prompt}, "permissionMode": "default"})
            w.emit({"type": "attachment", "attachment": {
                "type": "hook_success", "hookName": "UserPromptSubmit", "content": "",
                "stdout": "{}\n", "stderr": "", "exitCode": 0}})
            for _ in range(rng.randint(1, 30)):
                n += 1
                w.tool(prompt_id, n)
            n += 1
            w.assistant([{"type": "text", "text": f"done with turn {turns}: "
                          + w.text(rng.randint(20, 120))}], "end_turn", n)
            w.emit({"type": "system", "subtype": "stop_hook_summary", "hookCount": 1,
                    "hookInfos": [{"command": "/home/dev/bin/log-hook", "durationMs": 5}],
                    "hookErrors": [], "preventedContinuation": False, "stopReason": "",
                    "hasOutput": True, "level": "suggestion"})
            if turns % 400 == 0:
                w.emit({"type": "system", "subtype": "compact_boundary",
                        "content": "Conversation compacted", "isMeta": False, "level": "info",
                        "compactMetadata": {"trigger": "auto", "preTokens": 150000}})
    return {"path": str(path), "bytes": w.bytes, "turns": turns, "tool_calls": w.call,
            "session": session}


if __name__ == "__main__":  # pragma: no cover - a command-line entry
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.strip().splitlines()[-1])
    info = generate(Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    print(json.dumps(info))
