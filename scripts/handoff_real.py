"""Measure, on the REAL runtimes, what a model redoes or loses across a compaction with our hooks.

``python scripts/handoff_real.py [--runtime codex,claude,gemini] [--cases plan40,...] [--quick]
[--encrypt [file|env|file-env]] [--user-allows shell|steps] [--json]`` drives each pinned CLI (Codex CLI 0.171.0, Claude Code 2.1.332, Gemini CLI 0.61.0,
installed by ``tests/e2e/npm_tools.py``) offline against a loopback model stand-in, with our
hooks installed by the project's own ``python -m continuation install --runtime X`` into an
isolated config home, each runtime in its default permission mode.

The stand-in is a *list-reading agent* (``tests/e2e/listreader.py`` holds its pure logic):
the user prompt is a plan of N distinct one-line shell steps, each of which also appends
``step <label>`` to ``runlog.txt``. Before a compaction the stand-in runs the next step of the
plan, counting the steps done by the tool calls in the conversation; it forces the runtime's
own compaction after step C by reporting a nearly full context window on the answer that runs
step C. Once a request carries our checkpoint (its marker), it knows nothing but what it is
shown: it takes the plan(s) from the request text, reads every file the context names (one
read each, with the runtime's own file tool), runs every plan step that no work line shows as
done, then answers "ALL DONE". ``runlog.txt`` then tells, per step, how often it ran:
``redone`` = executions beyond the expected count, ``lost`` = steps that ran fewer times.

``--encrypt``: encryption at rest on, as a user turns it on (``continuation key init``: the key
in ``~/.config/continuation/key``, 0600, outside the state home; ``env``: in
``$CONTINUATION_KEY``; ``file-env``: in a file ``$CONTINUATION_KEY_FILE`` names). The pages and
the spilled context are then sealed and the context names ``continuation source`` commands
instead of files: the reader runs exactly those, in the runtime's own shell tool (Codex shell,
Claude Code Bash, Gemini run_shell_command), reads what the tool returned to it, and follows
the commands that output names, as it follows files. ``continuation`` is the snapshot's script
(a pip-style console script, first on PATH), as a user's pip-installed one. ``failed_runs``
counts source commands whose run failed (not found, a non-zero exit, not approved).

Per runtime, what had to be chosen (printed with the results too):

- Codex: ``codex exec`` in the ``workspace-write`` sandbox: its default one (``read-only``) fails
  every step ("/bin/bash: line 1: runlog.txt: Read-only file system"; ``--codex-sandbox
  read-only`` shows it); reads are allowed everywhere in both. Our hooks are trusted as
  Codex's ``/hooks`` review records it (``codex_harness.trust_like_the_user``); compaction
  through ``model_auto_compact_token_limit``; files read with ``cat <path>`` in the shell tool.
- Claude Code: ``claude -p`` in the default permission mode with a user allow rule for
  ``Bash`` (as the existing e2e tests: root cannot skip permissions); ``Read`` of the
  contexts folder relies on the ``permissions.additionalDirectories`` entry our install adds;
  compaction: the answer reports 990,000 input tokens (Claude Code auto-compacts).
- Gemini CLI: ``gemini -p`` in the default approval mode offers no ``run_shell_command``
  (only read_file, list_directory, glob, grep_search, ...); a user policy file in
  ``~/.gemini/policies`` allows ``run_shell_command`` (``allowRedirection = true``: the steps
  append with ``>>``), so the approval mode stays ``default``; ``read_file`` (``file_path``)
  reads through the ``context.includeDirectories`` entry our install adds; compaction: the
  answer reports 900,000 prompt tokens (the CLI compresses one request later than the
  others: after step C+1). Its inline size is measured as received, HTML escapes included.

The hooks run from a copy of the project's packages taken at the start (``--live``: from the
working tree), so that edits made during a long run cannot break hooks midway: a failing hook
records nothing (Codex prints "hook: PostToolUse Failed"), and the steps it missed are then
redone after the compaction, which measures the edit, not the handoff.

Results are appended to ``/tmp/handoff_real_results.txt`` as each case finishes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
E2E = REPO / "tests" / "e2e"
for _p in (str(REPO), str(E2E)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import listreader as lr  # noqa: E402
from bounded import run_bounded  # noqa: E402
from npm_tools import ToolUnavailable  # noqa: E402

RESULTS_FILE = Path("/tmp/handoff_real_results.txt")
RUNTIMES = ("codex", "claude", "gemini")
CASES = ("plan40", "plan150", "plan1000", "two_compactions", "two_prompts", "not_applied")
DONE_TEXT = "ALL DONE"
SUMMARY = "SUMMARY: the user gave a numbered plan of shell steps; some of them have been run."
LAUNCHER = [sys.executable, "-m", "continuation"]
SLOW_SECONDS = 120  # the step killed mid-run sleeps this long
# The slow step sleeps on its first run only (the one killed), so running it again is quick.
WAIT_SCRIPT = '#!/bin/sh\n[ -e .waited ] && exit 0\ntouch .waited\nsleep "${1:-60}"\n'
PACKAGES = ("capsule", "continuation", "statemachine")
CODE_PATH: list[str] = []  # the code snapshot the hooks import (empty with --live)
BIN_PATH: list[str] = []  # the snapshot's `continuation` script's folder, first on PATH
ENCRYPT = [""]  # --encrypt: "" (off) or one of ENCRYPT_MODES (Driver.key_init)
ENCRYPT_MODES = ("file", "env", "file-env")
# --user-allows: what the user's own rules let the shell tool run without asking (Claude Code,
# Gemini CLI): "shell" (every command) or "steps" (the programs the plan's steps run, by prefix:
# the source commands then run on what `continuation install` allows, or not at all; Claude
# Code 2.1.332 still asks for the steps themselves, compound commands writing through `>>`, so
# there they are lost and only the failed source runs tell)
USER_ALLOWS = ["shell"]
STEP_PROGRAMS = ("echo", "mkdir", "printf", "wc", "test", "touch", "sh wait.sh")


# ---------------------------------------------------------------------------------------------
# Plans and the run log


@dataclass(frozen=True)
class Step:
    label: str  # what the step appends to runlog.txt: "step <label>"
    command: str


def _hex(case: str, label: str) -> str:
    return hashlib.sha1(f"{case}:{label}".encode()).hexdigest()[:8]


def _step_body(case: str, label: str, k: int) -> str:
    """Distinct commands of a few kinds (every fifth fails on purpose), all one line."""
    h = _hex(case, label)
    words = f"{case} item {label} checks the handoff of a long plan"
    kinds = (
        f"test -f missing_{h}.cfg",
        f"mkdir -p notes && printf '%s\\n' 'note {h}: {words}' >> notes/{h}.md",
        f"mkdir -p build/{h} && touch build/{h}/ok",
        f"printf '%s\\n' '{words}' | wc -c > size_{h}.txt",
        f"wc -l < runlog.txt > lines_{h}.txt",
    )
    return kinds[k % len(kinds)]


def make_steps(case: str, count: int, prefix: str = "", slow_at: int | None = None) -> list[Step]:
    """``count`` steps labelled ``<prefix>1``...; ``slow_at``: that step sleeps (to be killed)."""
    steps = []
    for k in range(1, count + 1):
        label = f"{prefix}{k}"
        body = f"sh wait.sh {SLOW_SECONDS}" if k == slow_at else _step_body(case, label, k)
        steps.append(Step(label, f"echo 'step {label}' >> runlog.txt; {body}"))
    return steps


def plan_prompt(steps: list[Step]) -> str:
    lines = [f"{i}. `{s.command}`" for i, s in enumerate(steps, start=1)]
    return "Run these steps in order, one shell call per step:\n" + "\n".join(lines)


def executions(runlog: Path) -> Counter:
    """How many times each step label ran, from ``runlog.txt``."""
    if not runlog.exists():
        return Counter()
    return Counter(line[5:].strip() for line in runlog.read_text(encoding="utf-8").splitlines()
                   if line.startswith("step "))


def score(steps: list[Step], counts: Counter, expected: dict[str, int]) -> dict[str, Any]:
    """redone: runs beyond the expected count (1, or 2 for a killed step run again);
    lost: steps that ran fewer times than expected."""
    redone = {s.label: counts[s.label] - expected.get(s.label, 1) for s in steps
              if counts[s.label] > expected.get(s.label, 1)}
    lost = [s.label for s in steps if counts[s.label] < expected.get(s.label, 1)]
    return {"redone": sum(redone.values()), "lost": len(lost), "redone_steps": redone, "lost_steps": lost}


# ---------------------------------------------------------------------------------------------
# The list-reading model, over a runtime-neutral view of one request


@dataclass
class Event:
    """One thing the model sees in a request: a text, its own tool call, or a tool result."""

    kind: str  # "text" | "call" | "result"
    text: str = ""
    call_id: str = ""
    shell: str | None = None  # a shell call's command
    read: str | None = None  # a file read call's path
    raw: str = ""  # the text as received, when ``text`` undid a runtime's escaping


@dataclass
class Action:
    kind: str  # "shell" (a plan step) | "read" (a file) | "run" (a source command) | "text"
    value: str
    compact: bool = False  # report a full context window with this answer


@dataclass
class Handoff:
    """What the reader saw at one checkpoint (one compaction), for the report."""

    nonce: str
    inline_chars: int
    files: list[str] = field(default_factory=list)
    read_chars: dict[str, int] = field(default_factory=dict)
    plan_steps: int = 0
    shown_done: int = 0
    unsettled: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # source commands whose run failed
    decided: bool = False  # the fields above are filled once, when every named file was read


# how each runtime's shell tool says a command failed (Codex "Process exited with code 127",
# Claude Code "Exit code 127", Gemini CLI "Exit Code: 127") or was not run (Claude Code "This
# command requires approval", Gemini CLI "Tool execution denied by policy."), and the shell's own word for it
_FAILED_RUN = re.compile(r"(?i)command not found|exit(?:ed with)? code:? *[1-9]|requires approval|denied by policy")


class ListReader:
    """The model's decisions; one per case, shared by its runs (thread-safe)."""

    def __init__(self, steps: list[Step], compact_after: set[str], save_dir: Path) -> None:
        self.label_of = {s.command: s.label for s in steps}
        self.pending = set(compact_after)
        self.save_dir = save_dir
        self.reads = 0
        self.handoffs: dict[str, Handoff] = {}
        self._lock = threading.Lock()

    def decide(self, events: list[Event]) -> Action:
        with self._lock:
            action = self._decide(events)
            if action.kind in ("read", "run"):
                self.reads += 1
            if action.kind == "shell" and self.label_of.get(action.value) in self.pending:
                self.pending.discard(self.label_of[action.value])
                action.compact = True
            return action

    def _decide(self, events: list[Event]) -> Action:
        nonce = None
        for e in events:
            nonce = lr.checkpoint_nonce(e.text) or nonce
        if nonce is None:
            return self._before_compaction(events)
        return self._after_compaction(events, nonce)

    def _before_compaction(self, events: list[Event]) -> Action:
        """The next step of the latest plan prompt not yet called after it."""
        at = max((i for i, e in enumerate(events) if e.kind == "text" and lr.plans(e.text)), default=None)
        if at is None:
            return Action("text", DONE_TEXT)
        called = {e.shell for e in events[at + 1:] if e.kind == "call"}
        left = [c for c in lr.plan_steps(events[at].text) if c not in called]
        return Action("shell", left[0]) if left else Action("text", DONE_TEXT)

    def _after_compaction(self, events: list[Event], nonce: str) -> Action:
        """Read what the context names, then run what it does not show as done."""
        at = next(i for i, e in enumerate(events) if lr.checkpoint_nonce(e.text) == nonce)
        inline, after = events[at].text, events[at + 1:]
        handoff = self.handoffs.get(nonce)
        if handoff is None:
            handoff = self.handoffs[nonce] = Handoff(nonce, lr.context_chars(events[at].raw or inline))
            (self.save_dir / f"context-{len(self.handoffs)}-{nonce}.txt").write_text(inline, encoding="utf-8")
        results = {e.call_id: e.text for e in after if e.kind == "result"}
        got: dict[tuple[str, str], str] = {}  # what each read or source command returned
        for e in after:
            if e.kind == "call" and e.call_id in results:
                if e.read:
                    got[("read", e.read)] = results[e.call_id]
                if e.shell:
                    got[("run", e.shell)] = results[e.call_id]
        named, folder = lr.named_sources(inline)
        for source in named:  # grows while what was read names more
            if source not in got:
                return Action(*source)
            more, folder = lr.named_sources(got[source], folder)
            named.extend(m for m in more if m not in named)
        texts = [inline, *(got[source] for source in named)]
        steps = lr.plan_steps("\n".join(e.text for e in events))
        todo = lr.todo(steps, texts)
        if not handoff.decided:
            handoff.decided = True
            handoff.files = [value for _, value in named]
            handoff.read_chars = {value: len(got[(kind, value)]) for kind, value in named}
            handoff.failed = [value for kind, value in named if kind == "run" and _FAILED_RUN.search(got[(kind, value)])]
            with (self.save_dir / f"reads-{nonce}.txt").open("w", encoding="utf-8") as fh:
                for kind, value in named:  # what each read returned, as the model got it
                    fh.write(f"=== {kind} {value}\n{got[(kind, value)]}\n")
            handoff.plan_steps, handoff.shown_done = len(steps), len(steps) - len(todo)
            handoff.todo = [self.label_of.get(c, c) for c in todo]
            handoff.unsettled = [self.label_of.get(c, c) for c in lr.unsettled_commands(texts)]
        called = {e.shell for e in after if e.kind == "call"}
        left = [c for c in todo if c not in called]
        return Action("shell", left[0]) if left else Action("text", DONE_TEXT)


def read_outputs(root: Path) -> dict[str, str]:
    """What each read or source command returned to the reader in the case run in ``root``
    (its ``reads-<nonce>.txt``), by the path or command, as the model got it."""
    found: dict[str, str] = {}
    for path in sorted(root.glob("reads-*.txt")):
        for chunk in ("\n" + path.read_text(encoding="utf-8")).split("\n=== ")[1:]:
            head, _, text = chunk.partition("\n")
            found[head.split(" ", 1)[1]] = text
    return found


# ---------------------------------------------------------------------------------------------
# Runtime plumbing shared by the three drivers


@dataclass
class Run:
    label: str
    exit: int | None
    seconds: float
    tail: str
    hook_failed: int = 0  # "hook: <Event> Failed" lines (Codex prints one per failed hook)


def _text_of(value: Any) -> str:
    """A tool result's text, whatever shape the runtime gives it (string, blocks, object)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        for key in ("output", "content", "result", "error"):
            if key in value:
                return _text_of(value[key])
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _cat_path(command: str) -> str | None:
    """The file a ``cat <path>`` read (the reader's own Codex reads), else None."""
    if not command.startswith("cat "):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[1] if len(words) == 2 else None


def _cli(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> Any:
    """``python -m continuation ARGS`` in the sandbox: its JSON, or its exit and output."""
    done = run_bounded([*LAUNCHER, *args], timeout=timeout, cwd=cwd, env=env)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"exit": done.returncode, "output": (done.stdout + done.stderr)[-2000:]}


def _killed_call_id(listing: Any, label: str) -> str | None:
    """The call waiting for reconciliation whose arguments run step ``label``."""
    for call in (listing or {}).get("calls", []) if isinstance(listing, dict) else []:
        if f"'step {label}'" in json.dumps(call.get("args"), ensure_ascii=False):
            return call.get("call_id")
    return None


def _start(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def run_until_step_then_kill(argv: list[str], cwd: Path, env: dict[str, str], label: str,
                             timeout: float) -> Run:
    """Start the runtime; SIGKILL its whole process group once step ``label`` has begun."""
    import signal

    started = time.monotonic()
    proc = _start(argv, cwd, env)
    runlog = cwd / "runlog.txt"
    while time.monotonic() - started < timeout and proc.poll() is None:
        if executions(runlog)[label]:
            time.sleep(2)  # the slow step is running now
            break
        time.sleep(0.2)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait(timeout=30)
    return Run(f"killed during step {label}", proc.returncode, round(time.monotonic() - started, 1), "")


def _closed_env(root: Path) -> dict[str, str]:
    """PATH and locale only: no real HOME, config home or API key leaks into a run."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "SHELL")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = os.pathsep.join([*BIN_PATH, str(Path(sys.executable).parent), env.get("PATH", "")])
    tmp = root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(root / "home"), TMPDIR=str(tmp), CONTINUATION_HOME=str(root / "state"), NO_COLOR="1")
    return {**env, **code_env()}


def code_env() -> dict[str, str]:
    """PYTHONPATH of the code snapshot, if any: ``continuation install`` then writes the hook
    command with the snapshot's path, and the hooks (which inherit the runtime's environment)
    import the snapshot, not the working tree someone may be editing during a long run."""
    return {"PYTHONPATH": os.pathsep.join(CODE_PATH)} if CODE_PATH else {}


def snapshot_code(base: Path) -> dict[str, Any]:
    """Copy the project's packages as they are now; return what was copied (HEAD, dirty)."""
    import shutil

    target = base / "code"
    for name in PACKAGES:
        shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    CODE_PATH[:] = [str(target)]
    BIN_PATH[:] = [str(console_script(target))]
    head = run_bounded(["git", "rev-parse", "--short", "HEAD"], timeout=30, cwd=REPO)
    dirty = run_bounded(["git", "status", "--porcelain", "--", *PACKAGES], timeout=30, cwd=REPO)
    return {"snapshot": str(target), "head": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def console_script(code: Path) -> Path:
    """A ``continuation`` script as pip writes one (this Python, the project's entry point),
    importing ``code``: the command the model runs in its shell (``continuation source ...``)
    is the snapshot the hooks run, found on PATH as a user's pip-installed one is."""
    folder = code / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "continuation"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(code)!r})\n"
                      "from continuation.cli import entry\nsys.exit(entry())\n", encoding="utf-8")
    script.chmod(0o755)
    return folder


def _init_workspace(project: Path, env: dict[str, str]) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / "wait.sh").write_text(WAIT_SCRIPT, encoding="utf-8")
    for args in (["init", "-q"], ["add", "wait.sh"], ["-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e",
                                                       "commit", "-q", "-m", "init"]):
        run_bounded(["git", *args], timeout=30, cwd=project, env=env)


class Driver:
    """One runtime: a sandbox, our hooks installed, a stand-in serving the reader, runs."""

    name = ""

    def __init__(self, root: Path, reader: ListReader) -> None:
        self.root, self.reader = root, reader
        self.project, self.state = root / "project", root / "state"
        self.env = _closed_env(root)
        (root / "home").mkdir(parents=True, exist_ok=True)
        _init_workspace(self.project, self.env)
        self.notes: list[str] = []

    def serve(self):
        """The stand-in server for this runtime's API, the reader behind it (a context manager)."""
        raise NotImplementedError

    def setup(self, server) -> Any:
        """Point the runtime at ``server``, write the user's settings, install our hooks."""
        raise NotImplementedError

    def first_argv(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def resume_argv(self, prompt: str) -> list[str]:
        """The same session again, with a new prompt."""
        raise NotImplementedError

    def install(self) -> Any:
        """The project's own ``continuation install`` (it also grants the contexts folder), then
        with ``--encrypt`` the user's ``continuation key init``."""
        installed = _cli(["install", "--runtime", self.name, "--json"], self.project, self.env)
        if ENCRYPT[0]:
            return {"install": installed, "key": self.key_init()}
        return installed

    def key_init(self) -> Any:
        """Encryption on, as a user turns it on: ``key init`` keeps a new key in its default
        file (``~/.config/continuation/key``, 0600, outside the state home), which the hooks and
        the model's shell both find through HOME. ``env``: the key then moves into
        ``$CONTINUATION_KEY`` (the file is removed); ``file-env``: into a file of its own named
        by ``$CONTINUATION_KEY_FILE``, as users keeping it elsewhere do."""
        made = _cli(["key", "init", "--json"], self.project, self.env)
        key_file = Path(self.env["HOME"]) / ".config" / "continuation" / "key"
        if ENCRYPT[0] == "env":
            self.env["CONTINUATION_KEY"] = key_file.read_text(encoding="utf-8").strip()
            key_file.unlink()
        elif ENCRYPT[0] == "file-env":
            elsewhere = self.root / "keys" / "continuation.key"
            elsewhere.parent.mkdir(mode=0o700, exist_ok=True)
            key_file.rename(elsewhere)
            self.env["CONTINUATION_KEY_FILE"] = str(elsewhere)
        status = _cli(["key", "status", "--json"], self.project, self.env)
        self.notes.append(f"encryption on: key from {ENCRYPT[0]}")
        return {"init": made, "status": status}

    def reconcile_not_applied(self, label: str) -> dict[str, Any]:
        listing = _cli(["reconcile", "--json"], self.project, self.env)
        call = _killed_call_id(listing, label)
        if call is None:
            return {"error": "no call of the killed step waits for reconciliation", "listing": listing}
        decided = _cli(["reconcile", call, "--not-applied", "--json"], self.project, self.env)
        return {"call": call, "decided": decided}

    def hook_errors(self) -> str | None:
        log = self.state / "logs" / "hooks.log"
        return log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.exists() else None

    def hook_log_lines(self) -> int:
        """Lines in hooks.log: a hook writes one only for a fault (an error, a lost write)."""
        log = self.state / "logs" / "hooks.log"
        return len(log.read_text(encoding="utf-8", errors="replace").splitlines()) if log.exists() else 0

    def bounded(self, label: str, argv: list[str], timeout: float) -> Run:
        """One run to its end (or killed at ``timeout``); its whole output kept in the root."""
        done = run_bounded(argv, timeout=timeout, cwd=self.project, env=self.env)
        slug = re.sub(r"\W+", "-", label).strip("-")
        (self.root / f"run-{slug}.out").write_text(f"{done.stdout}\n--- stderr\n{done.stderr}", encoding="utf-8")
        failed = len(re.findall(r"^hook: \w+ Failed$", done.stderr, re.MULTILINE))
        return Run(label, done.returncode, round(done.seconds, 1), done.tail(1200), failed)


# ---------------------------------------------------------------------------------------------
# Codex CLI (Responses API)


CODEX_LIMIT = 100_000
CODEX_SANDBOX = ["workspace-write"]  # --codex-sandbox sets it
LOW_TOKENS = 1_000


def codex_events(body: dict[str, Any]) -> list[Event]:
    """The model's view of a Responses request: messages, its function calls, their outputs."""
    import responses_standin as rs

    events = []
    for item in body.get("input") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            events.append(Event("text", rs._message_text(item)))
        elif kind == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                args = {}
            command = args.get("cmd") or args.get("command")
            if isinstance(command, list):
                command = command[-1]
            events.append(Event("call", call_id=item.get("call_id", ""), shell=command,
                                read=_cat_path(command) if isinstance(command, str) else None))
        elif kind == "function_call_output":
            events.append(Event("result", _text_of(item.get("output")), call_id=item.get("call_id", "")))
    return events


class CodexModel:
    """Duck-types ``responses_standin.ScriptedModel.respond`` with the list reader behind it."""

    def __init__(self, reader: ListReader) -> None:
        self.reader = reader
        self._ids = iter(range(1, 10**9))
        self._lock = threading.Lock()

    def respond(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], int]:
        import responses_standin as rs

        with self._lock:
            n = next(self._ids)
        if rs.request_kind(body) == "compaction":
            return "compaction", [rs._assistant_message(f"msg_{n}", SUMMARY)], LOW_TOKENS
        action = self.reader.decide(codex_events(body))
        if action.kind == "text":
            return "turn", [rs._assistant_message(f"msg_{n}", action.value)], LOW_TOKENS
        command = f"cat {shlex.quote(action.value)}" if action.kind == "read" else action.value
        tokens = CODEX_LIMIT + 50_000 if action.compact else LOW_TOKENS
        return "turn", [rs._function_call(n, command, rs.tool_names(body))], tokens


class CodexDriver(Driver):
    name = "codex"

    def __init__(self, root: Path, reader: ListReader) -> None:
        super().__init__(root, reader)
        import codex_harness as ch

        self.ch = ch
        self.codex = ch.ensure_codex()
        self.box = ch.CodexSandbox(root, self.codex, LAUNCHER)  # the same project folder, its state home
        self.state = self.box.state
        self.env = {**self.box.env(), "PATH": self.env["PATH"], **code_env()}
        self.sandbox = CODEX_SANDBOX[0]
        self.notes.append(f"codex exec --sandbox {self.sandbox}; hooks trusted as /hooks records it")

    def serve(self):
        import responses_standin as rs

        class Quiet(rs.ResponsesStandin):
            def _log(self, record: dict[str, Any]) -> int:  # bodies of 1,000-step runs are large
                return super()._log({k: v for k, v in record.items() if k not in ("body", "reply")})

        return Quiet(self.root / "requests.jsonl", CodexModel(self.reader))

    def setup(self, server) -> Any:
        self.box.write_config(server.base_url)
        installed = self.install()
        trusted = self.ch.trust_like_the_user(self.box, self.box.codex_home / "hooks.json")
        return {"install": installed, "trusted_hooks": trusted}

    def _exec(self, *tail: str) -> list[str]:
        return [str(self.codex), "exec", "--skip-git-repo-check", "--sandbox", self.sandbox, "-c",
                f"model_auto_compact_token_limit={CODEX_LIMIT}", *tail]

    def first_argv(self, prompt: str) -> list[str]:
        return self._exec(prompt)

    def resume_argv(self, prompt: str) -> list[str]:
        return self._exec("resume", "--last", prompt)


# ---------------------------------------------------------------------------------------------
# Claude Code (Messages API)


_READ_PREFIX = re.compile(r"^ *\d+[\t→]", re.MULTILINE)


def claude_events(body: dict[str, Any]) -> list[Event]:
    """The model's view of a Messages request. Read results lose their line-number prefixes
    (``     1→``), as a model reading them does."""
    events, reads = [], set()
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            events.append(Event("text", content))
            continue
        for block in content or []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                events.append(Event("text", block.get("text", "")))
            elif kind == "tool_use":
                args = block.get("input") or {}
                read = args.get("file_path") if block.get("name") == "Read" else None
                if read:
                    reads.add(block.get("id"))
                shell = args.get("command") if block.get("name") == "Bash" else None
                events.append(Event("call", call_id=block.get("id", ""), shell=shell, read=read))
            elif kind == "tool_result":
                text = _text_of(block.get("content"))
                if block.get("tool_use_id") in reads:
                    text = _READ_PREFIX.sub("", text)
                events.append(Event("result", text, call_id=block.get("tool_use_id", "")))
    return events


class ClaudeModel:
    """Duck-types ``messages_standin.StandIn`` (log / answer / input_tokens) for its handler."""

    def __init__(self, reader: ListReader, log_path: Path) -> None:
        self.reader, self.log_path = reader, log_path
        self._lock = threading.Lock()
        self._ids = iter(range(1, 10**9))
        self._tokens: dict[int, int] = {}

    def log(self, method: str, path: str, body: Any) -> None:
        with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"method": method, "path": path}) + "\n")

    def input_tokens(self, body: Any) -> int:
        with self._lock:
            return self._tokens.pop(id(body), LOW_TOKENS)

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        import messages_standin as ms

        with self._lock:
            n = next(self._ids)
        if ms.is_compaction_request(body):
            return [{"type": "text", "text": f"<analysis>scripted</analysis>\n<summary>{SUMMARY}</summary>"}]
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if "Bash" not in tools:  # a side request (title, topic, ...)
            return [{"type": "text", "text": "ok"}]
        action = self.reader.decide(claude_events(body))
        if action.kind == "text":
            return [{"type": "text", "text": action.value}]
        if action.compact:
            with self._lock:
                self._tokens[id(body)] = 990_000
        if action.kind == "read":
            return [{"type": "tool_use", "id": f"toolu_{n:05d}", "name": "Read", "input": {"file_path": action.value}}]
        return [{"type": "tool_use", "id": f"toolu_{n:05d}", "name": "Bash",
                 "input": {"command": action.value, "description": "plan step"}}]


class ClaudeDriver(Driver):
    name = "claude"

    def __init__(self, root: Path, reader: ListReader) -> None:
        super().__init__(root, reader)
        import claude_tools as ct

        self.claude = ct.ensure_claude()
        self.session = str(uuid.uuid4())
        self.env.update(ANTHROPIC_API_KEY="test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                        DISABLE_AUTOUPDATER="1")
        self.notes.append("claude -p, default permission mode, user allow rule for Bash")

    def serve(self):
        import messages_standin as ms
        from standin_server import BackgroundServer

        return BackgroundServer(ms._make_handler(ClaudeModel(self.reader, self.root / "requests.jsonl")),
                                name="claude-listreader")

    def setup(self, server) -> Any:
        self.env["ANTHROPIC_BASE_URL"] = server.base_url
        settings = self.root / "home" / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        allow = ["Bash"] if USER_ALLOWS[0] == "shell" else [f"Bash({p}:*)" for p in STEP_PROGRAMS]
        settings.write_text(json.dumps({"permissions": {"allow": allow}}, indent=2) + "\n", encoding="utf-8")
        installed = self.install()
        perms = json.loads(settings.read_text(encoding="utf-8")).get("permissions", {})
        return {"install": installed, "permissions": perms}

    def first_argv(self, prompt: str) -> list[str]:
        return [str(self.claude), "-p", "--output-format", "json", "--session-id", self.session, prompt]

    def resume_argv(self, prompt: str) -> list[str]:
        return [str(self.claude), "-p", "--output-format", "json", "--resume", self.session, prompt]


# ---------------------------------------------------------------------------------------------
# Gemini CLI (generativelanguage v1beta)


GEMINI_MODEL = "gemini-2.5-flash"
SHELL_POLICY = ('[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n'
                "allowRedirection = true\n")


def gemini_events(body: dict[str, Any]) -> list[Event]:
    """The model's view of a Gemini request, hook-context escaping undone (``lr.ungemini``).
    A functionResponse answers the oldest open call of its name (ids when the CLI sends them)."""
    events, open_calls, k = [], [], 0
    for content in body.get("contents") or []:
        for part in content.get("parts") or [] if isinstance(content, dict) else []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                events.append(Event("text", lr.ungemini(part["text"]), raw=part["text"]))
            elif isinstance(part.get("functionCall"), dict):
                call, k = part["functionCall"], k + 1
                args = call.get("args") or {}
                event = Event("call", call_id=call.get("id") or f"g{k}",
                              shell=args.get("command") if call.get("name") == "run_shell_command" else None,
                              read=args.get("file_path") if call.get("name") == "read_file" else None)
                open_calls.append((call.get("name"), event.call_id))
                events.append(event)
            elif isinstance(part.get("functionResponse"), dict):
                resp = part["functionResponse"]
                match = next((c for c in open_calls if (resp.get("id") and c[1] == resp["id"])
                              or (not resp.get("id") and c[0] == resp.get("name"))), None)
                if match:
                    open_calls.remove(match)
                text = _text_of(resp.get("response"))
                events.append(Event("result", lr.ungemini(text), call_id=match[1] if match else "", raw=text))
    return events


class GeminiModel:
    """Duck-types ``gemini_standin.GeminiStandIn`` (log / response) for its handler."""

    def __init__(self, reader: ListReader, log_path: Path) -> None:
        self.reader, self.log_path = reader, log_path
        self._lock = threading.Lock()

    def log(self, method: str, path: str, body: Any) -> None:
        with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"method": method, "path": path}) + "\n")

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        parts, tokens = self._parts(body)
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": tokens, "candidatesTokenCount": 5,
                                  "totalTokenCount": tokens + 5},
                "modelVersion": "gemini-standin"}

    def _parts(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        import gemini_standin as gs

        if "<state_snapshot>" in gs.latest_prompt(body):
            return [{"text": gs.SNAPSHOT}], LOW_TOKENS
        if (body.get("generationConfig") or {}).get("responseMimeType") == "application/json":
            return [{"text": json.dumps({"reasoning": "scripted", "next_speaker": "user",
                                         "model_choice": "flash"})}], LOW_TOKENS
        tools = {f.get("name") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []}
        if "run_shell_command" not in tools:
            return [{"text": "ok"}], LOW_TOKENS
        action = self.reader.decide(gemini_events(body))
        tokens = 900_000 if action.compact else LOW_TOKENS
        if action.kind == "text":
            return [{"text": action.value}], tokens
        if action.kind == "read":
            return [{"functionCall": {"name": "read_file", "args": {"file_path": action.value}}}], tokens
        return [{"functionCall": {"name": "run_shell_command",
                                  "args": {"command": action.value, "description": "plan step"}}}], tokens


class GeminiDriver(Driver):
    name = "gemini"

    def __init__(self, root: Path, reader: ListReader) -> None:
        super().__init__(root, reader)
        import gemini_harness as gh

        self.gemini = gh.ensure_gemini()
        home = root / "home"
        self.env.update(GEMINI_CLI_HOME=str(home), GEMINI_API_KEY="standin-key")
        self.notes.append("gemini -p, approval mode default, user policy allows run_shell_command")

    def serve(self):
        import gemini_standin as gs
        from standin_server import BackgroundServer

        return BackgroundServer(gs._handler(GeminiModel(self.reader, self.root / "requests.jsonl")),
                                name="gemini-listreader")

    def setup(self, server) -> Any:
        self.env["GOOGLE_GEMINI_BASE_URL"] = server.base_url
        gemini_dir = self.root / "home" / ".gemini"
        (gemini_dir / "policies").mkdir(parents=True, exist_ok=True)
        policy = SHELL_POLICY + ("" if USER_ALLOWS[0] == "shell" else f"commandPrefix = {json.dumps(STEP_PROGRAMS)}\n")
        (gemini_dir / "policies" / "allow-shell.toml").write_text(policy, encoding="utf-8")
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                    "privacy": {"usageStatisticsEnabled": False}, "general": {"enableAutoUpdate": False}}
        (gemini_dir / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        installed = self.install()
        context = json.loads((gemini_dir / "settings.json").read_text(encoding="utf-8")).get("context", {})
        return {"install": installed, "context": context}

    def first_argv(self, prompt: str) -> list[str]:
        return [str(self.gemini), "-m", GEMINI_MODEL, "-p", prompt]

    def resume_argv(self, prompt: str) -> list[str]:
        return [str(self.gemini), "-m", GEMINI_MODEL, "--resume", "latest", "-p", prompt]


DRIVERS: dict[str, Callable[[Path, ListReader], Driver]] = {
    "codex": CodexDriver, "claude": ClaudeDriver, "gemini": GeminiDriver}


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    """Prompts run in one session (a later one resumes it), where compactions are forced,
    which step is killed (then reconciled not applied), and how often each step must run."""

    name: str
    prompts: list[list[Step]]
    compact_after: set[str]
    kill_at: str | None = None

    @property
    def steps(self) -> list[Step]:
        return [s for p in self.prompts for s in p]

    def expected(self) -> dict[str, int]:
        return {self.kill_at: 2} if self.kill_at else {}


def build_case(name: str) -> Case:
    if name == "plan40":
        return Case(name, [make_steps(name, 40)], {"30"})
    if name == "plan150":
        return Case(name, [make_steps(name, 150)], {"120"})
    if name == "plan1000":
        return Case(name, [make_steps(name, 1000)], {"900"})
    if name == "two_compactions":
        return Case(name, [make_steps(name, 60)], {"25", "50"})
    if name == "two_prompts":
        return Case(name, [make_steps(name, 25, "A"), make_steps(name, 40, "B")], {"B20"})
    if name == "not_applied":
        return Case(name, [make_steps(name, 12, slow_at=6)], set(), kill_at="6")
    raise ValueError(f"unknown case {name!r}")


RESUME_PROMPT = "Continue with the plan."


def run_timeout(case: Case) -> float:
    return 180 + 4 * len(case.steps)


def run_case(runtime: str, case: Case, root: Path) -> dict[str, Any]:
    """One runtime x case: sandbox, install, runs, then the run log scored."""
    started = time.monotonic()
    reader = ListReader(case.steps, case.compact_after, root)
    driver = DRIVERS[runtime](root, reader)
    runs: list[Run] = []
    extra: dict[str, Any] = {}
    with driver.serve() as server:
        extra["setup"] = driver.setup(server)
        timeout = run_timeout(case)
        for i, steps in enumerate(case.prompts):
            argv = (driver.resume_argv if i else driver.first_argv)(plan_prompt(steps))
            if case.kill_at and i == 0:
                runs.append(run_until_step_then_kill(argv, driver.project, driver.env, case.kill_at, timeout))
                extra["reconcile"] = driver.reconcile_not_applied(case.kill_at)
                argv = driver.resume_argv(RESUME_PROMPT)
            runs.append(driver.bounded(f"prompt {i + 1}", argv, timeout))
    counts = executions(driver.project / "runlog.txt")
    result = {"runtime": runtime, "case": case.name, "encrypt": ENCRYPT[0] or "off", "steps": len(case.steps),
              **score(case.steps, counts, case.expected()),
              "inline_chars": [h.inline_chars for h in reader.handoffs.values()],
              "files_read": reader.reads,
              "compactions_forced": sorted(case.compact_after - reader.pending),
              "handoffs": [asdict(h) for h in reader.handoffs.values()],
              "runs": [asdict(r) for r in runs], "notes": driver.notes, "root": str(root),
              "hook_errors": driver.hook_errors(), "hook_log_lines": driver.hook_log_lines(), "seconds": round(time.monotonic() - started, 1), **extra}
    return result


# ---------------------------------------------------------------------------------------------
# Output


COLUMNS = ("runtime", "case", "encrypt", "steps", "redone", "lost", "inline", "files_read", "failed_runs",
           "hook_errors", "seconds")


def row(result: dict[str, Any]) -> dict[str, str]:
    if "na" in result:
        return {"runtime": result["runtime"], "case": result["case"], "encrypt": ENCRYPT[0] or "off",
                "steps": f"n/a: {result['na']}"}
    inline = "/".join(str(c) for c in result["inline_chars"]) or "-"
    return {"runtime": result["runtime"], "case": result["case"], "encrypt": result["encrypt"],
            "steps": str(result["steps"]),
            "redone": str(result["redone"]), "lost": str(result["lost"]), "inline": inline,
            "files_read": str(result["files_read"]),
            "failed_runs": str(sum(len(h["failed"]) for h in result["handoffs"])),
            "hook_errors": str(hook_error_count(result)), "seconds": str(result["seconds"])}


def hook_error_count(result: dict[str, Any]) -> int:
    """Hook faults: lines in the state home's hooks.log, and hooks the runtime said failed
    (Codex's "hook: <Event> Failed")."""
    return result.get("hook_log_lines", 0) + sum(r.get("hook_failed", 0) for r in result["runs"])


def table(results: list[dict[str, Any]]) -> str:
    rows = [row(r) for r in results]
    widths = {c: max([len(c), *(len(r.get(c, "")) for r in rows)]) for c in COLUMNS}
    lines = ["  ".join(c.ljust(widths[c]) for c in COLUMNS)]
    lines += ["  ".join(r.get(c, "").ljust(widths[c]) for c in COLUMNS).rstrip() for r in rows]
    return "\n".join(lines)


def record(result: dict[str, Any]) -> None:
    """Append one result (its table row and its JSON) to the results file as it comes."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with RESULTS_FILE.open("a", encoding="utf-8") as fh:
        fh.write(f"[{stamp}] {json.dumps(row(result))}\n{json.dumps(result, ensure_ascii=False)}\n")


def _few(items: list, shown: int = 12) -> str:
    """A list cut for a terminal: its first items and how many there are."""
    if len(items) <= shown:
        return str(items)
    return f"{items[:shown]}... ({len(items)} in all)"


def details(result: dict[str, Any]) -> str:
    """Where a step was redone or lost, and what the reader saw at each checkpoint."""
    if "na" in result:
        return ""
    out = [f"{result['runtime']} {result['case']}: redone {_few(list(result['redone_steps'].items()))} "
           f"lost {_few(result['lost_steps'])}"]
    for h in result["handoffs"]:
        out.append(f"  checkpoint {h['nonce']}: inline {h['inline_chars']} chars, read {len(h['files'])} files, "
                   f"plan {h['plan_steps']} steps, shown done {h['shown_done']}, unsettled {h['unsettled']}, "
                   f"todo {_few(h['todo'])}")
    if result.get("hook_errors"):
        out.append(f"  hook errors: {result['hook_errors'][-500:]}")
    for r in result["runs"]:
        if r.get("hook_failed"):
            out.append(f"  run {r['label']!r}: {r['hook_failed']} hook(s) failed (the runtime says so)")
        if r["exit"] != 0 and not r["label"].startswith("killed"):
            out.append(f"  run {r['label']!r}: exit {r['exit']} after {r['seconds']}s {r['tail'][-600:]}")
    return "\n".join(out)


def run_or_explain(runtime: str, case: Case, root: Path) -> dict[str, Any]:
    """``run_case``, or a row saying why it could not run (the other cases still run)."""
    from claude_tools import ClaudeUnavailable

    try:
        return run_case(runtime, case, root)
    except (ToolUnavailable, ClaudeUnavailable) as exc:
        return {"runtime": runtime, "case": case.name, "na": f"runtime unavailable: {exc}"}
    except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others' numbers
        return {"runtime": runtime, "case": case.name, "na": f"harness error: {type(exc).__name__}: {exc}"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", default=",".join(RUNTIMES), help="comma-separated: codex,claude,gemini")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    parser.add_argument("--quick", action="store_true", help="skip plan1000")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--codex-sandbox", default=CODEX_SANDBOX[0],
                        help="codex exec --sandbox (default workspace-write; read-only fails every step)")
    parser.add_argument("--root", type=Path, default=None, help="work folder (default: a new temp folder)")
    parser.add_argument("--encrypt", nargs="?", const="file", default="", choices=ENCRYPT_MODES,
                        help="encryption at rest on (continuation key init): the key in its default "
                             "file (file, the default), in $CONTINUATION_KEY (env) or in a file "
                             "$CONTINUATION_KEY_FILE names (file-env)")
    parser.add_argument("--user-allows", default="shell", choices=("shell", "steps"),
                        help="Claude Code / Gemini CLI: the user's rules allow every shell command "
                             "(default) or only the plan's steps (then the source commands run on "
                             "what continuation install allows)")
    parser.add_argument("--live", action="store_true",
                        help="hooks import the working tree (default: a snapshot of it taken at the start)")
    args = parser.parse_args(argv)
    args.cases = [c for c in args.cases.split(",") if c and not (args.quick and c == "plan1000")]
    args.runtime = [r for r in args.runtime.split(",") if r]
    unknown = sorted(set(args.cases) - set(CASES)) + sorted(set(args.runtime) - set(RUNTIMES))
    if unknown:
        parser.error(f"unknown runtime or case: {', '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    CODEX_SANDBOX[0] = args.codex_sandbox
    ENCRYPT[0] = args.encrypt
    USER_ALLOWS[0] = args.user_allows
    base = args.root or Path(tempfile.mkdtemp(prefix="handoff-real-"))
    base.mkdir(parents=True, exist_ok=True)
    code = {"snapshot": None} if args.live else snapshot_code(base)
    if not args.json:
        print(f"code: {code}", flush=True)
    results = []
    for runtime in args.runtime:
        for name in args.cases:
            result = {**run_or_explain(runtime, build_case(name), base / f"{runtime}-{name}"), "code": code}
            record(result)
            results.append(result)
            if not args.json:
                print(table([result]).splitlines()[1], flush=True)
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
    else:
        print(f"\n{table(results)}\n")
        print("\n".join(d for d in (details(r) for r in results) if d))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
