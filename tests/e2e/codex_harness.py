"""Drive the real Codex CLI 0.171.0 offline, through an auto-compaction, with our hooks.

Used by ``test_codex_e2e.py`` and, run as a script, by ``scripts/e2e_codex.sh``.

The scenario (:func:`run_compaction_scenario`):

1. a temporary ``CODEX_HOME`` whose ``config.toml`` points a ``model_providers``
   entry (``wire_api = "responses"``) at the scripted stand-in on 127.0.0.1,
   a temporary git repository, a temporary ``CONTINUATION_HOME``;
2. our hooks installed with ``continuation install --runtime codex --scope user``
   (through :func:`continuation.install.install` while the CLI lacks that
   command) into ``$CODEX_HOME/hooks.json``, and ``codex app-server``
   ``hooks/list`` read back (keys, trust status, ``currentHash``);
3. ``codex exec "<prompt 1>"``: one ``exec_command`` tool call, then an answer;
4. ``codex exec -c model_auto_compact_token_limit=1400 resume --last "<prompt 2>"``:
   the stand-in reported 1500 input tokens per response, so Codex compacts
   before the turn (a real local compaction: the stand-in answers the
   compaction request with a summary), then runs prompt 2 (tool call, answer);
5. the stand-in's request log, the hook events Codex printed, and the engine's
   view (``continuation inputs --json``) are collected into a report.

``mode="mid-turn"`` moves the compaction inside the second turn, after its
tool call. Hooks run with ``--dangerously-bypass-hook-trust`` (untrusted hooks
are silently skipped by 0.171.0; see ``continuation/install/codex.py``);
:func:`run_trust_scenario` shows that, then trusts the hooks the way Codex's
``/hooks`` review records it and runs again without the bypass flag.
:func:`run_killed_tool_call_scenario` kills Codex (SIGKILL of the process
group, or SIGINT like Ctrl-C) while a ``sleep 30`` tool call runs, then asks
``continuation recover`` / ``reconcile`` and resumes the session.
:func:`measure_context_limit` measures how much hook context Codex passes whole.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # sibling helpers import as top-level modules (no package here)
    sys.path.insert(0, str(HERE))

from bounded import Finished, run_bounded  # noqa: E402
from npm_tools import ToolUnavailable, ensure_npm_cli  # noqa: E402
from responses_standin import ResponsesStandin, ScriptedModel  # noqa: E402

CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
CODEX_TIMEOUT_S = 120
COMPACT_LIMIT = 1400
PROMPT_1 = "append a line to notes.txt: `echo line >> notes.txt`"
PROMPT_2 = "append a second line: `echo second >> notes.txt`"
CAPSULE_MARKER = "CONTINUATION-CHECKPOINT"  # capsule/render.py MARKER; the begin line is <<<MARKER nonce BEGIN>>>
_HOOK_LINE = re.compile(r"^hook: (\w+)$", re.MULTILINE)


def ensure_codex() -> Path:
    return ensure_npm_cli(CODEX_PACKAGE, CODEX_VERSION, "codex")


def codex_or_skip() -> Path:
    """The pinned Codex CLI for a test, or ``pytest.skip`` saying why it cannot be had."""
    import pytest

    try:
        return ensure_codex()
    except ToolUnavailable as exc:
        pytest.skip(f"real Codex CLI unavailable: {exc}")


def default_launcher() -> list[str]:
    """The ``continuation`` script of this interpreter's environment, else ``python -m continuation``."""
    beside = Path(sys.executable).with_name("continuation.exe" if os.name == "nt" else "continuation")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("continuation")
    return [found] if found else [sys.executable, "-m", "continuation"]


@dataclass
class CodexRun:
    label: str
    finished: Finished
    hook_events: list[str]  # "hook: <Event>" lines Codex printed, in order

    def summary(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "exit": self.finished.returncode,
            "seconds": round(self.finished.seconds, 2),
            "hook_events": self.hook_events,
        }


@dataclass
class CodexSandbox:
    root: Path
    codex: Path
    launcher: list[str]
    codex_home: Path = field(init=False)
    project: Path = field(init=False)
    state: Path = field(init=False)
    request_log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.codex_home = self.root / "codex-home"
        self.project = self.root / "project"
        self.state = self.root / "continuation-state"
        self.request_log = self.root / "requests.jsonl"
        for folder in (self.codex_home, self.project, self.state, self.root / "home"):
            folder.mkdir(parents=True, exist_ok=True)
        git = shutil.which("git") or "git"
        for args in (["init", "-q"], ["config", "user.email", "e2e@example.invalid"], ["config", "user.name", "e2e"],
                     ["commit", "-q", "--allow-empty", "-m", "init"]):
            done = run_bounded([git, *args], timeout=30, cwd=self.project, env=self.env())
            if done.returncode != 0:
                raise RuntimeError(f"git {' '.join(args)} failed: {done.tail()}")

    def env(self) -> dict[str, str]:
        """A closed environment: nothing from the real HOME, CODEX_HOME or API keys leaks in."""
        keep = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "COMSPEC", "PATHEXT")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        tmp = self.root / "tmp"  # Codex spills long hook output under the temp dir: keep it in here
        tmp.mkdir(exist_ok=True)
        env.update(
            TMPDIR=str(tmp),
            TEMP=str(tmp),
            TMP=str(tmp),
            HOME=str(self.root / "home"),
            USERPROFILE=str(self.root / "home"),
            CODEX_HOME=str(self.codex_home),
            CONTINUATION_HOME=str(self.state),
            STANDIN_API_KEY="sk-standin",
            NO_COLOR="1",
        )
        return env

    def write_config(self, base_url: str) -> None:
        (self.codex_home / "config.toml").write_text(
            "\n".join(
                [
                    'model = "mock-model"',
                    'model_provider = "standin"',
                    "",
                    "[model_providers.standin]",
                    'name = "standin"',
                    f'base_url = "{base_url}"',
                    'wire_api = "responses"',
                    'env_key = "STANDIN_API_KEY"',
                    "request_max_retries = 0",
                    "stream_max_retries = 0",
                    "",
                ]
            ),
            encoding="utf-8",
        )

    def install_hooks(self) -> dict[str, Any]:
        """``continuation install --runtime codex --scope user`` (CODEX_HOME from the sandbox env);
        through :func:`continuation.install.install` while the CLI has no ``install`` command."""
        from continuation.install import install, status

        via = "cli"
        done = self.continuation("install", "--runtime", "codex", "--scope", "user")
        cli_output = done.stdout + done.stderr
        if done.returncode != 0:
            if "invalid choice" not in cli_output:
                raise RuntimeError(f"continuation install failed: {done.tail()}")
            via = "python-api"
            install("codex", "user", project_dir=self.project, home=self.root / "home", state_home=self.state,
                    command=self.launcher, env={"CODEX_HOME": str(self.codex_home)})
        st = status("codex", "user", project_dir=self.project, home=self.root / "home", state_home=self.state,
                    env={"CODEX_HOME": str(self.codex_home)})
        return {"via": via, "path": st["path"], "installed": st["installed"], "events": st["events"],
                "hook_command": st["commands"][0] if len(st["commands"]) == 1 else st["commands"],
                "record": st["record"], "trust": st["trust"]["hooks"], "cli_output": cli_output[-1500:],
                "hooks_json": json.loads(Path(st["path"]).read_text(encoding="utf-8"))}

    def uninstall_hooks(self) -> dict[str, Any]:
        """``continuation uninstall --runtime codex --scope user``: hooks.json did not exist before."""
        from continuation.install import uninstall

        hooks_json = self.codex_home / "hooks.json"
        done = self.continuation("uninstall", "--runtime", "codex", "--scope", "user")
        via = "cli"
        if done.returncode != 0 and "invalid choice" in done.stdout + done.stderr:
            via = "python-api"
            uninstall("codex", "user", project_dir=self.project, home=self.root / "home", state_home=self.state,
                      env={"CODEX_HOME": str(self.codex_home)})
        elif done.returncode != 0:
            raise RuntimeError(f"continuation uninstall failed: {done.tail()}")
        return {"via": via, "hooks_json_exists": hooks_json.exists(),
                "codex_home_entries": sorted(p.name for p in self.codex_home.iterdir())}

    def run_codex(self, label: str, args: list[str], timeout: float = CODEX_TIMEOUT_S) -> CodexRun:
        done = run_bounded([self.codex, *args], timeout=timeout, cwd=self.project, env=self.env())
        return CodexRun(label, done, _HOOK_LINE.findall(done.stderr + "\n" + done.stdout))

    def exec_args(self, *extra: str) -> list[str]:
        return ["exec", "--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check", *extra]

    def continuation(self, *args: str, timeout: float = 60) -> Finished:
        return run_bounded([*self.launcher, *args], timeout=timeout, cwd=self.project, env=self.env())

    def hooks_list(self, timeout: float = 30) -> list[dict[str, Any]]:
        """``hooks/list`` from ``codex app-server``: key, currentHash and trustStatus per hook."""
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "e2e", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(self.project)]}},
        ]
        return _app_server_hooks(self.codex, messages, self.env(), self.project, timeout)


def _app_server_hooks(codex: Path, messages: list[dict], env: dict, cwd: Path, timeout: float) -> list[dict]:
    import subprocess
    import threading

    kwargs: dict = {"start_new_session": True} if os.name != "nt" else {}
    proc = subprocess.Popen([str(codex), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd, env=env, text=True, encoding="utf-8", **kwargs)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        for line in proc.stdout:
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if reply.get("id") == 2:
                if "error" in reply:
                    raise RuntimeError(f"hooks/list failed: {reply['error']}")
                return [hook for entry in reply["result"]["data"] for hook in entry["hooks"]]
        raise RuntimeError("codex app-server ended without answering hooks/list")
    finally:
        timer.cancel()
        proc.kill()
        proc.wait(timeout=10)


def _request_text(record: dict[str, Any]) -> str:
    return json.dumps(record.get("body", {}), ensure_ascii=False)


def _items_with(record: dict[str, Any], needle: str) -> list[dict[str, Any]]:
    found = []
    for item in record.get("body", {}).get("input") or []:
        text = json.dumps(item, ensure_ascii=False)
        if needle in text:
            found.append({"type": item.get("type"), "role": item.get("role"), "chars": len(text)})
    return found


# Reported input tokens per model request, which decide where Codex compacts:
# "pre-turn": every response of run 1 reports 1500 > 1400, so the resumed run
#   compacts before its first request;
# "mid-turn": run 1 stays low; the resumed run's first response (the tool call)
#   reports 1500, so Codex compacts after that tool call, inside the turn.
COMPACTION_MODES = {
    "pre-turn": {"tokens_before_compaction": 1500, "tokens_after_compaction": 200},
    "mid-turn": {"turn_tokens": [200, 200, 1500, 200]},
}


def long_prompt(chars: int) -> str:
    """PROMPT_2 followed by ``chars`` of numbered filler and an end marker (a long pending request)."""
    filler = "".join(f" detail-{i:05d}" for i in range(chars // 13 + 1))[:chars]
    return f"{PROMPT_2}\nContext for this request:{filler}\nEND-OF-LONG-REQUEST"


def run_compaction_scenario(
    root: Path, *, mode: str = "pre-turn", codex: Path | None = None, launcher: list[str] | None = None,
    prompt_2: str = PROMPT_2,
) -> dict:
    """Run the scenario under ``root``; return a JSON-able report (see the module docstring)."""
    started = time.monotonic()
    codex = codex or ensure_codex()
    sandbox = CodexSandbox(root, codex, launcher or default_launcher())
    report: dict[str, Any] = {"codex": str(codex), "codex_version": CODEX_VERSION, "root": str(root), "mode": mode}
    model = ScriptedModel(**COMPACTION_MODES[mode])
    with ResponsesStandin(sandbox.request_log, model) as standin:
        sandbox.write_config(standin.base_url)
        report["install"] = sandbox.install_hooks()
        try:
            listed = sandbox.hooks_list()
        except (RuntimeError, OSError) as exc:
            listed = []
            report["hooks_list_error"] = str(exc)
        report["hooks_list"] = [
            {"key": h["key"], "event": h["eventName"], "trust": h["trustStatus"], "currentHash": h["currentHash"],
             "command": h["command"], "timeoutSec": h["timeoutSec"]}
            for h in listed
        ]
        run1 = sandbox.run_codex("exec", sandbox.exec_args(PROMPT_1))
        inputs_after_run1 = sandbox.continuation("inputs", "--json")
        run2 = sandbox.run_codex(
            f"exec resume ({mode} auto-compaction)",
            sandbox.exec_args("-c", f"model_auto_compact_token_limit={COMPACT_LIMIT}", "resume", "--last", prompt_2),
        )
        requests = standin.requests()
    inputs = sandbox.continuation("inputs", "--json")
    status_out = sandbox.continuation("status", "--json")
    events_out = sandbox.continuation("events", "--json")
    report["uninstall"] = sandbox.uninstall_hooks()

    posts = [r for r in requests if r.get("method") == "POST"]
    compaction_at = next((i for i, r in enumerate(posts) if r.get("kind") == "compaction"), None)
    after = posts[compaction_at + 1] if compaction_at is not None and compaction_at + 1 < len(posts) else None
    report.update(
        runs=[run1.summary(), run2.summary()],
        run_output={"exec": run1.finished.tail(3000), "resume": run2.finished.tail(3000)},
        requests=[{"seq": r["seq"], "kind": r.get("kind"), "input_items": len((r.get("body") or {}).get("input") or []),
                   "reply": [i.get("type") for i in r.get("reply", [])],
                   "capsule_items": _items_with(r, CAPSULE_MARKER)} for r in posts],
        compaction_request_index=compaction_at,
        marker_in_request_after_compaction=bool(after and CAPSULE_MARKER in _request_text(after)),
        marker_items_after_compaction=_items_with(after, CAPSULE_MARKER) if after else [],
        message_texts_after_compaction=_message_texts(after) if after else None,
        context_items_after_compaction=_developer_texts_with(after, CAPSULE_MARKER) if after else [],
        marker_in_requests_before_compaction=any(
            CAPSULE_MARKER in _request_text(r) for r in posts[: compaction_at or 0]
        ),
        notes_txt=(sandbox.project / "notes.txt").read_text(encoding="utf-8")
        if (sandbox.project / "notes.txt").exists() else None,
        inputs_after_run1=_json_or_text(inputs_after_run1),
        inputs=_json_or_text(inputs),
        engine_status=_json_or_text(status_out),
        events=_json_or_text(events_out),
        hook_errors_log=_read(sandbox.state / "logs" / "hooks.log"),
        seconds=round(time.monotonic() - started, 2),
    )
    return report


def trust_like_the_user(sandbox: CodexSandbox, hooks_json: Path) -> int:
    """Write ``[hooks.state]`` trust entries for our hooks into ``$CODEX_HOME/config.toml``,
    as Codex's /hooks review does when the user trusts them (test-only: the installer never
    writes trust). Keys and hashes come from our own code, so Codex running the hooks
    afterwards proves them right. Returns the number of entries written."""
    from continuation.install.codex import codex_hook_hash, event_key_label
    from continuation.install.target import ours_pattern

    ours = ours_pattern("codex")
    data = json.loads(hooks_json.read_text(encoding="utf-8"))
    lines = []
    for event, groups in data["hooks"].items():
        for gi, group in enumerate(groups):
            for hi, handler in enumerate(group.get("hooks", [])):
                if ours.search(handler.get("command", "")):
                    key = f"{hooks_json}:{event_key_label(event)}:{gi}:{hi}"
                    digest = codex_hook_hash(event, group.get("matcher"), handler)
                    lines += [f"[hooks.state.{json.dumps(key)}]", f"trusted_hash = {json.dumps(digest)}", ""]
    with (sandbox.codex_home / "config.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n" + "\n".join(lines))
    return len(lines) // 3


def run_trust_scenario(root: Path, *, codex: Path | None = None, launcher: list[str] | None = None) -> dict:
    """Installed but untrusted hooks are skipped silently; trusted (as /hooks records it) they run.

    No ``--dangerously-bypass-hook-trust`` here."""
    from continuation.install import status

    started = time.monotonic()
    codex = codex or ensure_codex()
    sandbox = CodexSandbox(root, codex, launcher or default_launcher())
    args = ["exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
    report: dict[str, Any] = {"mode": "trust", "root": str(root)}

    def trust_view() -> dict[str, Any]:
        st = status("codex", "user", project_dir=sandbox.project, home=root / "home", state_home=sandbox.state,
                    env={"CODEX_HOME": str(sandbox.codex_home)})
        return {"ours": st["trust"]["hooks"], "all_trusted": st["trust"]["all_trusted"],
                "codex": sorted({h["trustStatus"] for h in sandbox.hooks_list()})}

    with ResponsesStandin(sandbox.request_log, ScriptedModel(tokens_before_compaction=200)) as standin:
        sandbox.write_config(standin.base_url)
        installed = sandbox.install_hooks()
        report["install"] = installed
        report["before_trust"] = trust_view()
        untrusted = sandbox.run_codex("exec, untrusted hooks", [*args, "say hello (untrusted)"])
        report["untrusted_run"] = untrusted.summary()
        report["inputs_after_untrusted"] = _json_or_text(sandbox.continuation("inputs", "--json"))
        report["trust_entries"] = trust_like_the_user(sandbox, Path(installed["path"]))
        report["after_trust"] = trust_view()
        trusted = sandbox.run_codex("exec, trusted hooks", [*args, "say hello (trusted)"])
        report["trusted_run"] = trusted.summary()
        report["run_output"] = {"untrusted": untrusted.finished.tail(1500), "trusted": trusted.finished.tail(1500)}
    report["inputs"] = _json_or_text(sandbox.continuation("inputs", "--json"))
    report["seconds"] = round(time.monotonic() - started, 2)
    return report


PROMPT_SLOW = "slow task: wait for the build: `sleep 30`"
PROMPT_AFTER_CRASH = "where were we?"


def run_until_hook_then_kill(sandbox: CodexSandbox, args: list[str], hook: str, *, timeout: float = 60,
                             interrupt: bool = False) -> dict:
    """Start Codex; SIGKILL its whole process group right after ``hook`` completed (or at ``timeout``).

    With ``interrupt``, send SIGINT to Codex first (Ctrl-C) and give it 20 s to stop by itself."""
    import signal
    import subprocess
    import threading

    kwargs: dict = {"start_new_session": True} if os.name != "nt" else {
        "creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
    started = time.monotonic()
    proc = subprocess.Popen([str(sandbox.codex), *args], cwd=sandbox.project, env=sandbox.env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, encoding="utf-8", errors="replace", **kwargs)
    seen: list[str] = []
    fired = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line.rstrip("\n"))
            if line.strip() == f"hook: {hook} Completed":
                fired.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    fired.wait(timeout)
    time.sleep(0.3)  # the tool call is running now
    if interrupt and os.name != "nt":
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait(timeout=10)
    reader.join(timeout=5)
    return {"hook_fired": fired.is_set(), "exit": proc.returncode, "seconds": round(time.monotonic() - started, 2),
            "hook_events": _HOOK_LINE.findall("\n".join(seen))}


def run_killed_tool_call_scenario(root: Path, *, codex: Path | None = None,
                                  launcher: list[str] | None = None, interrupt: bool = False) -> dict:
    """``codex exec`` whose tool call (``sleep 30``) is running when the whole process group is
    SIGKILLed (or, with ``interrupt``, when Codex gets SIGINT like a Ctrl-C); then
    ``continuation recover`` and the engine's view of the input."""
    started = time.monotonic()
    codex = codex or ensure_codex()
    sandbox = CodexSandbox(root, codex, launcher or default_launcher())
    report: dict[str, Any] = {"mode": "interrupted" if interrupt else "killed", "root": str(root)}
    with ResponsesStandin(sandbox.request_log, ScriptedModel(tokens_before_compaction=200)) as standin:
        sandbox.write_config(standin.base_url)
        report["install"] = sandbox.install_hooks()
        first = sandbox.run_codex("exec", sandbox.exec_args(PROMPT_1))
        report["first_run"] = first.summary()
        report["killed_run"] = run_until_hook_then_kill(
            sandbox, sandbox.exec_args("resume", "--last", PROMPT_SLOW), "PreToolUse", interrupt=interrupt)
        report["inputs_before_recover"] = _json_or_text(sandbox.continuation("inputs", "--json"))
        report["recover"] = _json_or_text(sandbox.continuation("recover", "--record", "--json"))
        report["inputs"] = _json_or_text(sandbox.continuation("inputs", "--json"))
        report["reconcile"] = _json_or_text(sandbox.continuation("reconcile", "--json"))
        seen = len(standin.requests())
        resumed = sandbox.run_codex("exec resume after the crash", sandbox.exec_args("resume", "--last", PROMPT_AFTER_CRASH))
        report["resumed_run"] = resumed.summary()
        posts = [r for r in standin.requests()[seen:] if r.get("method") == "POST"]
        report["resumed_first_request_contexts"] = _developer_texts_with(posts[0], CAPSULE_MARKER) if posts else None
        report["inputs_after_resume"] = _json_or_text(sandbox.continuation("inputs", "--json"))
    report["hook_errors_log"] = _read(sandbox.state / "logs" / "hooks.log")
    report["seconds"] = round(time.monotonic() - started, 2)
    return report


def measure_context_limit(root: Path, sizes: tuple[int, ...] = (10_000, 10_010), *, codex: Path | None = None) -> dict:
    """How much of a SessionStart ``additionalContext`` reaches the model whole.

    Uses ``recorder_hook.py`` (not our engine) as the only hook: ``codex exec``,
    then one ``codex exec resume --last`` per size with the recorder padding its
    resume context to that many characters. Returns size -> what arrived."""
    codex = codex or ensure_codex()
    sandbox = CodexSandbox(root, codex, [sys.executable, "-m", "continuation"])
    recorder = [sys.executable, str(HERE / "recorder_hook.py")]
    from continuation.install.target import render_command

    (sandbox.codex_home / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": render_command(recorder), "timeout": 30}]}]}}), encoding="utf-8")
    results: dict[str, Any] = {}
    with ResponsesStandin(sandbox.request_log, ScriptedModel(tokens_before_compaction=200)) as standin:
        sandbox.write_config(standin.base_url)
        first = run_bounded([codex, *sandbox.exec_args("hello")], timeout=CODEX_TIMEOUT_S, cwd=sandbox.project,
                            env=sandbox.env())
        results["exec_exit"] = first.returncode
        for size in sizes:
            env = {**sandbox.env(), "RECORDER_CONTEXT_CHARS": str(size), "RECORDER_HOOK_LOG": str(root / "rec.jsonl")}
            seen = len(standin.requests())
            done = run_bounded([codex, *sandbox.exec_args("resume", "--last", f"size {size}")],
                               timeout=CODEX_TIMEOUT_S, cwd=sandbox.project, env=env)
            new = [r for r in standin.requests()[seen:] if r.get("method") == "POST"]
            # The resumed history still holds earlier runs' contexts: this run's is the last one.
            texts = _developer_texts_with(new[0], "RECORDER-HOOK-CONTEXT")[-1:] if new else []
            results[str(size)] = {
                "exit": done.returncode,
                "arrived_chars": [len(t) for t in texts],
                "whole": [t.endswith("RECORDER-TAIL") and len(t) == size for t in texts],
                "cut_notice": [("truncated" in t) or ("Full hook output saved to" in t) for t in texts],
            }
    return results


def _developer_texts_with(record: dict[str, Any], needle: str) -> list[str]:
    """The full text of each developer message holding ``needle`` (one per hook context)."""
    texts = []
    for item in (record.get("body") or {}).get("input") or []:
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "developer":
            text = "".join(p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict))
            if needle in text:
                texts.append(text)
    return texts


def _message_texts(record: dict[str, Any]) -> str:
    """All message text of a request's input, joined (what the model reads)."""
    return "\n".join(
        part.get("text", "")
        for item in (record.get("body") or {}).get("input") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _json_or_text(done: Finished) -> Any:
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"exit": done.returncode, "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-4000:]
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Real Codex CLI e2e: exec, resume with auto-compaction")
    parser.add_argument("--root", type=Path, help="work folder (default: a new temp folder, kept)")
    parser.add_argument("--report", type=Path, help="write the JSON report here too")
    parser.add_argument("--mode", choices=sorted(COMPACTION_MODES), default="pre-turn")
    args = parser.parse_args(argv)
    try:
        codex = ensure_codex()
    except ToolUnavailable as exc:
        print(f"SKIP: {exc}")
        return 0
    root = args.root or Path(tempfile.mkdtemp(prefix="continuation-e2e-codex-"))
    report = run_compaction_scenario(root, mode=args.mode, codex=codex)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if args.report:
        args.report.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
