"""Helpers to drive the real Claude Code CLI offline in tests and in ``scripts/e2e_claude.sh``.

- ``ensure_claude()`` installs the pinned ``@anthropic-ai/claude-code`` with npm into a cache folder
  outside the repository (``$CONTINUATION_E2E_CACHE`` or ``~/.cache/continuation-e2e``), once.
- ``ClaudeSandbox`` is a temporary HOME + git repository + environment pointing the CLI at a
  loopback Messages-API stand-in; ``run()`` / ``start()`` launch ``claude`` in its own process group
  with a timeout, ``kill_tree()`` SIGKILLs the whole group (and detached descendants).
- Run as a script, this file is a *recorder* command hook: ``python claude_tools.py record LOG
  [--markers]`` appends the hook payload (stdin) as one JSON line to LOG and answers ``{}``; with
  ``--markers`` SessionStart and UserPromptSubmit answer with marker ``additionalContext`` so that a
  test can see which hook context reaches the model.

Only the standard library and filelock are imported: the recorder runs as a hook process.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.332"
INSTALL_TIMEOUT_S = 900
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SessionEnd",
)
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
ALLOWED_TOOLS = ["Bash", "Read", "Edit", "Write", "Glob", "Grep"]
SS_MARKER = "MARKER-SS-{source}-123"
UPS_MARKER = "MARKER-UPS-456"
BUILD_SCRIPT = '#!/bin/sh\n# a slow build step: sleeps $1 seconds (default 30)\nsleep "${1:-30}"\necho build finished\n'


class ClaudeUnavailable(RuntimeError):
    """The pinned Claude Code cannot be installed or run here (the reason is the message)."""


def cache_root() -> Path:
    configured = os.environ.get("CONTINUATION_E2E_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "continuation-e2e"


def _claude_bin(prefix: Path) -> Path:
    name = "claude.cmd" if os.name == "nt" else "claude"
    return prefix / "node_modules" / ".bin" / name


def _installed_version(binary: Path) -> str | None:
    if not binary.exists():
        return None
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().split(" ", 1)[0] if out.returncode == 0 else None


def ensure_claude(version: str = CLAUDE_VERSION) -> Path:
    """Path to the pinned ``claude`` binary, installing it with npm when absent.

    Raises ClaudeUnavailable with a readable reason when node/npm are missing or the install fails.
    """
    prefix = cache_root() / f"claude-{version}"
    binary = _claude_bin(prefix)
    if _installed_version(binary) == version:
        return binary
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        raise ClaudeUnavailable("node/npm not found on PATH: cannot install Claude Code for the e2e test")
    prefix.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock  # imported here: the recorder hook never needs it

    with FileLock(str(prefix) + ".lock", timeout=INSTALL_TIMEOUT_S):
        if _installed_version(binary) == version:  # another process installed it meanwhile
            return binary
        cmd = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
               f"{CLAUDE_PACKAGE}@{version}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClaudeUnavailable(f"npm install {CLAUDE_PACKAGE}@{version} failed: {exc}") from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise ClaudeUnavailable(f"npm install {CLAUDE_PACKAGE}@{version} failed: " + " | ".join(tail))
    got = _installed_version(binary)
    if got != version:
        raise ClaudeUnavailable(f"installed Claude Code reports version {got!r}, expected {version}")
    return binary


# ---------------------------------------------------------------------------------------------
# Process control


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids from /proc (Linux); empty elsewhere (the process-group kill still applies)."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return children
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        # Field 4 is the ppid; the command name (field 2) may hold spaces, so split after ')'.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) >= 2:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    tree = _children_map()
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the process group of ``proc`` and any descendant that left it, then reap ``proc``."""
    pids = descendants(proc.pid)
    if os.name == "nt":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True, timeout=30)
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in pids:  # e.g. a tool command started in its own session
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def _popen_group_kwargs() -> dict[str, Any]:
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


@dataclass
class RunResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> dict[str, Any]:
        """The ``--output-format json`` result object (the last JSON line of stdout)."""
        for line in reversed(self.stdout.strip().splitlines()):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
        raise AssertionError(f"no JSON result in claude output: {self.stdout[-2000:]!r} {self.stderr[-2000:]!r}")


def run_bounded(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
                input_text: str | None = None) -> RunResult:
    """Run a command in its own process group; on timeout kill the whole group and raise."""
    started = time.monotonic()
    proc = subprocess.Popen(args, cwd=str(cwd), env=env, text=True, encoding="utf-8", errors="replace",
                            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **_popen_group_kwargs())
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        out, err = proc.communicate()
        raise AssertionError(f"timed out after {timeout}s: {args!r}\nstdout: {out[-3000:]}\nstderr: {err[-3000:]}")
    return RunResult(args, proc.returncode, out, err, time.monotonic() - started)


# ---------------------------------------------------------------------------------------------
# Sandbox: temporary HOME, git repository, settings, environment


def recorder_command(log: Path, markers: bool = False) -> str:
    """Shell command for a recorder hook (Claude Code runs hook commands through a shell)."""
    parts = [sys.executable, str(Path(__file__).resolve()), "record", str(log)]
    if markers:
        parts.append("--markers")
    if os.name == "nt":
        return subprocess.list2cmdline(parts)
    return " ".join(shlex.quote(p) for p in parts)


def recorder_hooks(command: str) -> dict[str, list[dict[str, Any]]]:
    entry = {"type": "command", "command": command, "timeout": 60}
    return {
        event: [{"matcher": "*", "hooks": [dict(entry)]}] if event in TOOL_EVENTS else [{"hooks": [dict(entry)]}]
        for event in HOOK_EVENTS
    }


def _scrubbed_environ() -> dict[str, str]:
    """The parent environment without anything that would point the CLIs at real services/state."""
    drop_prefixes = ("ANTHROPIC_", "CLAUDE_", "CONTINUATION_", "OPENAI_", "CODEX_")
    drop = {"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"}
    return {k: v for k, v in os.environ.items() if not k.startswith(drop_prefixes) and k not in drop}


@dataclass
class ClaudeSandbox:
    root: Path
    claude: Path
    base_url: str
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.repo = self.root / "repo"
        self.hook_log = self.root / "hook-payloads.jsonl"
        self.settings_path = self.home / ".claude" / "settings.json"
        self.home.mkdir(parents=True, exist_ok=True)
        self.repo.mkdir(parents=True, exist_ok=True)

    @property
    def env(self) -> dict[str, str]:
        env = _scrubbed_environ()
        # The hook command (`continuation`, the recorder's python) must resolve from Claude's shell.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env.update(
            HOME=str(self.home),
            USERPROFILE=str(self.home),
            ANTHROPIC_BASE_URL=self.base_url,
            ANTHROPIC_API_KEY="test",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            GIT_AUTHOR_NAME="e2e", GIT_AUTHOR_EMAIL="e2e@example.invalid",
            GIT_COMMITTER_NAME="e2e", GIT_COMMITTER_EMAIL="e2e@example.invalid",
        )
        env.update(self.extra_env)
        return env

    def init_repo(self) -> None:
        """A git repository with a slow ``build.sh`` (the scripted "slow task" runs it)."""
        (self.repo / "build.sh").write_text(BUILD_SCRIPT, encoding="utf-8", newline="\n")
        for args in (["git", "init", "-q"], ["git", "add", "build.sh"], ["git", "commit", "-q", "-m", "init"]):
            done = run_bounded(args, cwd=self.repo, env=self.env, timeout=60)
            assert done.returncode == 0, done.stderr

    def write_settings(self, *, markers: bool = False, record: bool = True) -> None:
        """Allow the tools (root cannot use --dangerously-skip-permissions) and add recorder hooks."""
        settings: dict[str, Any] = {"permissions": {"allow": list(ALLOWED_TOOLS)}}
        if record:
            settings["hooks"] = recorder_hooks(recorder_command(self.hook_log, markers))
        self.settings_path.parent.mkdir(parents=True, exist_ok=True)
        self.settings_path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")

    def claude_args(self, prompt: str, resume: str | None = None) -> list[str]:
        args = [str(self.claude), "-p", "--output-format", "json"]
        if resume:
            args += ["--resume", resume]
        return args + [prompt]

    def run(self, prompt: str, resume: str | None = None, timeout: float = 120) -> RunResult:
        return run_bounded(self.claude_args(prompt, resume), cwd=self.repo, env=self.env, timeout=timeout)

    def start(self, prompt: str, resume: str | None = None) -> subprocess.Popen:
        return subprocess.Popen(self.claude_args(prompt, resume), cwd=str(self.repo), env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                **_popen_group_kwargs())

    def start_streaming(self, resume: str | None = None) -> subprocess.Popen:
        """A long-lived ``claude -p`` fed user messages as stream-json lines (see ``send``): a
        message written while a turn runs is a prompt typed mid-turn."""
        args = [str(self.claude), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                "--verbose"] + (["--resume", resume] if resume else [])
        return subprocess.Popen(args, cwd=str(self.repo), env=self.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
                                **_popen_group_kwargs())


    def hook_payloads(self) -> list[dict[str, Any]]:
        return read_jsonl(self.hook_log)

    def transcript(self, session_id: str) -> Path:
        found = sorted((self.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
        assert found, f"no transcript for session {session_id} under {self.home}"
        return found[0]


def finish_streaming(proc: subprocess.Popen, timeout: float) -> list[dict[str, Any]]:
    """Close stdin (no more messages), let the queued turns finish, and return the stream-json output
    records; the process group is killed when it does not exit within ``timeout``."""
    try:
        out, _ = proc.communicate(timeout=timeout)  # closes stdin first
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        raise AssertionError(f"claude (stream-json) did not finish within {timeout}s")
    records = []
    for line in out.splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def send(proc: subprocess.Popen, text: str) -> None:
    """Write one user message to a ``start_streaming`` process."""
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n")
    proc.stdin.flush()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSON-lines file; a torn or malformed line is skipped."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def wait_for(predicate, timeout: float, interval: float = 0.1, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def hook_outputs(transcript: Path, hook_name: str) -> list[str]:
    """Stdout of every successful ``hook_name`` hook (e.g. "SessionStart:compact") in a transcript."""
    outputs = []
    for record in read_jsonl(transcript):
        attachment = record.get("attachment")
        if isinstance(attachment, dict) and attachment.get("hookName") == hook_name:
            outputs.append(str(attachment.get("stdout", "")))
    return outputs


def event_names(payloads: Iterable[dict[str, Any]]) -> list[str]:
    """``Event`` or ``Event:detail`` (SessionStart source, compaction trigger, tool name) per payload."""
    names = []
    for p in payloads:
        name = str(p.get("hook_event_name"))
        detail = p.get("source") or p.get("trigger") or p.get("tool_name")
        names.append(f"{name}:{detail}" if detail else name)
    return names


# ---------------------------------------------------------------------------------------------
# Recorder hook entry point


def _record(argv: list[str]) -> int:
    log = Path(argv[0])
    markers = "--markers" in argv[1:]
    raw = sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        payload = {"unparsed": raw}
    line = json.dumps(payload, ensure_ascii=False) + "\n"
    with log.open("a", encoding="utf-8") as fh:  # one write per payload: parallel hooks stay whole lines
        fh.write(line)
    answer: dict[str, Any] = {}
    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if markers and event == "SessionStart":
        context = SS_MARKER.format(source=payload.get("source"))
        answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    elif markers and event == "UserPromptSubmit":
        answer = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": UPS_MARKER}}
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        sys.exit(_record(sys.argv[2:]))
    if len(sys.argv) >= 2 and sys.argv[1] == "ensure":
        try:
            print(ensure_claude())
        except ClaudeUnavailable as exc:
            print(f"SKIP: {exc}", file=sys.stderr)
            sys.exit(3)
        sys.exit(0)
    print("usage: claude_tools.py record LOG [--markers] | ensure", file=sys.stderr)
    sys.exit(2)
