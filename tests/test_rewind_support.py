"""Helpers for the rewind / fork / restore tests (no tests here): drive a thread through the real
hook handler with payloads shaped like ``../shared/fixtures/claude-real/hook-payloads.jsonl``, in
a temporary git repository used as ``cwd``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from continuation import hooks
from continuation.session.engine import Engine


class HookSession:
    """One Claude Code session whose hook payloads we send, with the repository as cwd."""

    def __init__(self, home: Path, repo: Path, session_id: str | None = None,
                 runtime: str = "claude"):
        self.home, self.repo, self.runtime = home, repo, runtime
        self.session_id = session_id or str(uuid.uuid4())
        self.transcript = str(home.parent / f"{self.session_id}.jsonl")
        self.prompts = 0

    def send(self, event: str, **fields) -> dict:
        payload = {"session_id": self.session_id, "transcript_path": self.transcript,
                   "cwd": str(self.repo), "hook_event_name": event, **fields}
        out, code = hooks.run(self.runtime, json.dumps(payload).encode())
        log = self.home / "logs" / "hooks.log"
        assert code == 0 and not log.exists(), log.read_text() if log.exists() else code
        return json.loads(out)

    def start(self, source: str = "startup") -> dict:
        return self.send("SessionStart", source=source)

    def prompt(self, text: str) -> str:
        self.prompts += 1
        pid = str(uuid.uuid4())
        self.send("UserPromptSubmit", prompt_id=pid, permission_mode="default", prompt=text)
        return pid

    def tool(self, pid: str, tool: str, tool_input: dict, *, exit_code: int | None = 0,
             stderr: str = "", finish: bool = True, write: dict[str, str] | None = None) -> str:
        """PreToolUse, the tool's effect on disk (``write``), then PostToolUse (or nothing when
        ``finish`` is False: the outcome stays unknown)."""
        call = f"toolu_{uuid.uuid4().hex[:12]}"
        self.send("PreToolUse", prompt_id=pid, tool_name=tool, tool_input=tool_input,
                  tool_use_id=call)
        for name, content in (write or {}).items():
            path = self.repo / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        if finish:
            response = {"stdout": "", "stderr": stderr, "interrupted": False, "isImage": False}
            if exit_code is not None:
                response["exit_code"] = exit_code
            self.send("PostToolUse", prompt_id=pid, tool_name=tool, tool_input=tool_input,
                      tool_response=response, tool_use_id=call)
        return call

    def write_file(self, pid: str, name: str, content: str) -> str:
        return self.tool(pid, "Write", {"file_path": str(self.repo / name), "content": content},
                         exit_code=None, write={name: content})

    def stop(self, pid: str, message: str = "done") -> None:
        self.send("Stop", prompt_id=pid, stop_hook_active=False, last_assistant_message=message)

    def compact(self, trigger: str = "manual") -> dict:
        self.send("PreCompact", trigger=trigger, custom_instructions=None)
        answer = self.send("SessionStart", source="compact")
        self.send("PostCompact", trigger=trigger, compact_summary="Summary: work so far.")
        return answer

    def thread(self, engine: Engine):
        return engine.find_thread(self.runtime, self.session_id)


def cli(*args: str, home: Path, cwd: Path | None = None, stdin: bytes | None = b""):
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "continuation", *args], input=stdin,
                          capture_output=True, env=env, cwd=cwd, timeout=120)


def cli_json(*args: str, home: Path) -> dict:
    r = cli(*args, "--json", home=home)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def store_fingerprint(home: Path) -> dict:
    """Every row of every table of the store (plus the per-thread files: spilled contexts,
    handoff prompts): equal before and after a command that must change nothing."""
    import sqlite3

    conn = sqlite3.connect(home / "store.sqlite3")
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"').fetchall())) for t in tables}
    finally:
        conn.close()
    files = {str(p.relative_to(home)): p.read_bytes()
             for folder in ("capsules", "contexts", "handoff")
             for p in sorted((home / folder).rglob("*")) if p.is_file()}
    return {"rows": rows, "files": files}
