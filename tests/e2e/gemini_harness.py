"""Drive the real Gemini CLI 0.61.0 offline through an auto-compression, with our hooks installed.

The CLI talks to :mod:`gemini_standin` on 127.0.0.1 (``GOOGLE_GEMINI_BASE_URL``, API-key auth).
A temporary HOME holds a user ``settings.json`` that already has the user's own hook (a
recorder, on every event) and ``hooksConfig.enabled: false``; ``continuation install --runtime
gemini`` merges ours in and switches hooks on. Then three headless runs (``gemini -p``):

1. "append a line to notes.txt": one ``run_shell_command`` call, an answer;
2. ``--resume latest`` "do two steps please": the model chains shell calls; the answer after
   the first call reports 900,000 prompt tokens, so before the third model request the CLI
   compresses (PreCompress auto, two summary requests, a new history). Mode "after-tool": a
   third call follows; mode "next-run": the turn ends on a text answer after the compression;
3. ``--resume latest`` "append a second line".

Then uninstall. The report holds everything the tests assert on: exit codes, files written,
the stand-in's request log, the recorder's payloads, ``continuation events/status --json``,
and the settings bytes before install / after uninstall.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from bounded import run_bounded
from gemini_standin import GeminiStandInServer, last_command, read_log
from npm_tools import ensure_npm_cli

GEMINI_PACKAGE, GEMINI_VERSION = "@google/gemini-cli", "0.61.0"
MODEL = "gemini-2.5-flash"
RUN_TIMEOUT_S = 180
BIG_PROMPT_TOKENS = 900_000  # over half of the 1,048,576-token window: the next request compresses
CHAIN = {"echo one >> steps.txt": "echo two >> steps.txt", "echo two >> steps.txt": "echo three >> steps.txt"}
# "after-tool": a third step follows the compression (AfterTool can carry the context);
# "next-run": the turn ends on text right after it (the next `gemini -p` run must carry it)
MODES = {"after-tool": CHAIN, "next-run": {"echo one >> steps.txt": "echo two >> steps.txt"}}
PROMPTS = ("append a line to notes.txt", "do two steps please", "append a second line")
HERE = Path(__file__).resolve().parent


def ensure_gemini() -> Path:
    return ensure_npm_cli(GEMINI_PACKAGE, GEMINI_VERSION, "gemini")


def launcher() -> list[str]:
    beside = Path(sys.executable).with_name("continuation.exe" if os.name == "nt" else "continuation")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("continuation")
    return [found] if found else [sys.executable, "-m", "continuation"]


def _prompt_tokens(body: dict[str, Any]) -> int:
    """Big only for the answer to the first step's result: the compression comes one step later."""
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    ends_with_result = any("functionResponse" in p for p in last.get("parts") or [] if isinstance(p, dict))
    if ends_with_result and last_command(body) == "echo one >> steps.txt":
        return BIG_PROMPT_TOKENS
    return max(1, len(json.dumps(body)) // 40)


def user_settings(recorder: list[str]) -> dict[str, Any]:
    command = " ".join(recorder)
    hook = {"type": "command", "name": "recorder", "command": command, "timeout": 30000}
    events = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd")
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False},  # the current name: an old one is migrated in place
        "hooksConfig": {"enabled": False},
        "hooks": {e: [{"hooks": [dict(hook)]}] for e in events},
    }


def run_scenario(root: Path, gemini: Path, mode: str = "after-tool") -> dict[str, Any]:
    home, project, state = root / "home", root / "project", root / "state"
    project.mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    run_bounded(["git", "init", "-q"], timeout=30, cwd=project)
    recorder_log = root / "recorder.jsonl"
    settings = home / ".gemini" / "settings.json"
    settings.write_text(json.dumps(user_settings([sys.executable, str(HERE / "recorder_hook.py")]), indent=2) + "\n",
                        encoding="utf-8")
    before = settings.read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    env.update(HOME=str(home), GEMINI_CLI_HOME=str(home), CONTINUATION_HOME=str(state),
               RECORDER_HOOK_LOG=str(recorder_log), GEMINI_API_KEY="standin-key", NO_COLOR="1")
    cont = launcher()
    report: dict[str, Any] = {"settings_before": before.decode("utf-8"), "mode": mode}
    install = run_bounded([*cont, "install", "--runtime", "gemini", "--json"], timeout=60, cwd=project, env=env)
    report["install"] = {"exit": install.returncode, "stderr": install.stderr,
                         "report": json.loads(install.stdout) if install.returncode == 0 else install.stdout}
    report["settings_installed"] = json.loads(settings.read_text(encoding="utf-8"))
    log = root / "requests.jsonl"
    runs = []
    with GeminiStandInServer(log, chain=dict(MODES[mode]), prompt_tokens=_prompt_tokens) as server:
        env["GOOGLE_GEMINI_BASE_URL"] = server.base_url
        for i, prompt in enumerate(PROMPTS):
            first = len(read_log(log))
            resume = ["--resume", "latest"] if i else []
            done = run_bounded([str(gemini), "-m", MODEL, "--yolo", *resume, "-p", prompt],
                               timeout=RUN_TIMEOUT_S, cwd=project, env=env)
            runs.append({"prompt": prompt, "exit": done.returncode, "stdout": done.stdout,
                         "output": done.tail(3000), "requests": [first, len(read_log(log))]})
    report["runs"] = runs
    report["requests"] = read_log(log)
    report["recorded"] = [json.loads(line) for line in recorder_log.read_text(encoding="utf-8").splitlines()
                          if line.strip()] if recorder_log.exists() else []
    for name in ("events", "status"):
        out = run_bounded([*cont, name, "--json"], timeout=60, cwd=project, env=env)
        report[name] = json.loads(out.stdout) if out.returncode == 0 else {"error": out.tail()}
    # the session file the hooks name. Not SessionStart's: `gemini -p --resume` fires it while a
    # throwaway chat is open, whose file (named by the minute) is a stub in another minute
    transcripts = sorted({p["transcript_path"] for p in report["recorded"]
                          if p.get("transcript_path") and p["hook_event_name"] != "SessionStart"})
    report["transcripts"] = transcripts
    if transcripts:  # the session file: into the hooks' store, and into an empty one
        for label, home_dir in (("import_same", state), ("import_fresh", root / "state-import")):
            out = run_bounded([*cont, "import", "gemini", str(transcripts[-1]), "--json"], timeout=120,
                              cwd=project, env={**env, "CONTINUATION_HOME": str(home_dir)})
            report[label] = json.loads(out.stdout) if out.returncode == 0 else {"error": out.tail()}
        fresh = run_bounded([*cont, "events", "--json"], timeout=60, cwd=project,
                            env={**env, "CONTINUATION_HOME": str(root / "state-import")})
        report["import_fresh_events"] = json.loads(fresh.stdout) if fresh.returncode == 0 else {"error": fresh.tail()}
    hooks_log = state / "logs" / "hooks.log"
    report["hook_errors_log"] = hooks_log.read_text(encoding="utf-8") if hooks_log.exists() else None
    for name in ("notes.txt", "steps.txt"):
        path = project / name
        report[name] = path.read_text(encoding="utf-8") if path.exists() else None
    uninstall = run_bounded([*cont, "uninstall", "--runtime", "gemini"], timeout=60, cwd=project, env=env)
    report["uninstall"] = {"exit": uninstall.returncode, "output": uninstall.tail(),
                           "restored": settings.read_bytes() == before}
    return report
