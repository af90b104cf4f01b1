"""Threads for the timeline tests: one with every input state, call status and boundary kind,
and one with a 1,000-call turn; the browser the page tests drive (Debian's Chromium through
its chromedriver, via selenium)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from statemachine import events as ev

#: where the browser tests leave their screenshots (gitignored): $CONTINUATION_TEST_ARTIFACTS,
#: else tests/artifacts
ARTIFACTS = Path(os.environ.get("CONTINUATION_TEST_ARTIFACTS")
                 or Path(__file__).resolve().parent / "artifacts")
SECRET_LOOKING = "</script><script>window.__pwned=1</script>"


def every_state_thread(engine, *, workspace: str | None = None) -> dict:
    """A thread whose inputs end in every state the lifecycle has (queued, pending, handled,
    reconciling, interrupted, superseded, rolled_back), with ok, error and unknown calls, a
    compaction inside a turn, a crash, three checkpoints, a rewind and a fork."""
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.rewind.fork import fork_thread
    from continuation.rewind.operation import apply_rewind, plan_rewind

    t = engine.thread("claude", "every-state", workspace_root=workspace)
    # turn 1: handled, one ok call and one failed call, a compaction while it runs
    t.admit("list the files " + SECRET_LOOKING, input_id="in-handled", turn_id="t1")
    t.tool_started("c1", "Bash", {"command": "ls -la"}, turn_id="t1")
    t.tool_finished("c1", "ok", exit_code=0, output="a.txt\nb.txt", turn_id="t1")
    t.tool_started("c2", "Bash", {"command": "cat missing.txt"}, turn_id="t1")
    t.record(ev.BOUNDARY, {"kind": "compact", "trigger": "auto", "generation": 1})
    t.tool_finished("c2", "error", exit_code=1, output="No such file", turn_id="t1")
    t.claim("listed them", turn_id="t1")
    t.turn_completed("t1")
    first = commit_checkpoint(t, reason="manual", snapshot=False)
    # turn 2: interrupted by the user
    t.admit("refactor the parser", input_id="in-interrupted", turn_id="t2")
    t.tool_started("c3", "Edit", {"file_path": "parser.py"}, turn_id="t2")
    t.tool_finished("c3", "ok", turn_id="t2")
    t.turn_aborted("t2", "interrupted")
    # turn 3: a call without an outcome, then a crash: reconciling
    t.admit("run the migration", input_id="in-reconciling", turn_id="t3")
    t.tool_started("c4", "Bash", {"command": "./migrate.sh"}, turn_id="t3")
    t.crash_detected("the runtime process is gone")
    # turn 4: superseded by the user
    t.admit("write the docs", input_id="in-superseded", turn_id="t4")
    t.record(ev.INPUT_SUPERSEDED, {"input_id": "in-superseded", "reason": "asked otherwise"})
    second = commit_checkpoint(t, reason="manual", snapshot=False)
    # turn 5, rolled back by a rewind to the second checkpoint
    t.admit("delete the cache", input_id="in-rolled-back", turn_id="t5")
    t.tool_started("c5", "Bash", {"command": "rm -rf cache"}, turn_id="t5")
    t.tool_finished("c5", "ok", exit_code=0, turn_id="t5")
    t.turn_completed("t5")
    apply_rewind(engine, plan_rewind(engine, second.checkpoint_id, "conversation",
                                     applying=True, at_once=True))
    # turn 6: pending, with a steer queued behind it
    t.admit("add a test for the parser", input_id="in-pending", turn_id="t6")
    t.admit("and run it", input_id="in-queued", turn_id="t6", queued=True)
    fork = fork_thread(engine, first.checkpoint_id, name="try-other-parser")
    return {"thread": t.key, "fork": fork.thread.key,
            "checkpoints": [first.checkpoint_id, second.checkpoint_id]}


def long_turn_thread(engine, calls: int = 1000, *, errors_every: int = 97,
                     unknown_every: int = 331) -> str:
    """One turn with ``calls`` calls (mostly ok Bash and Read calls, some errors and unknown
    outcomes), appended in batches."""
    t = engine.thread("codex", "long-turn")
    t.admit("fix every failing test", input_id="in-long", turn_id="long")
    batch = []
    for n in range(calls):
        call = f"call-{n:04d}"
        tool = "Read" if n % 3 == 0 else "Bash"
        batch.append((ev.TOOL_STARTED, {"call_id": call, "tool": tool, "turn_id": "long",
                                        "args": {"command": f"pytest tests/test_{n}.py"}}))
        if n % unknown_every == unknown_every - 1:
            continue
        status = "error" if n % errors_every == errors_every - 1 else "ok"
        batch.append((ev.TOOL_FINISHED, {"call_id": call, "status": status, "turn_id": "long",
                                         "exit_code": 1 if status == "error" else 0,
                                         "output": f"{n} passed"}))
    t.store.append_many(t.key, batch, source="test")
    t.turn_completed("long")
    return t.key


def cli(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "continuation", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"continuation {' '.join(args)} failed: {proc.stderr}")
    return proc


def inputs_json(home: Path, thread: str) -> dict[str, str]:
    data = json.loads(cli(home, "inputs", "--thread", thread, "--json").stdout)
    return {r["input_id"]: r["state"] for r in data["inputs"]}


# -- the browser ---------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: without these, Chromium on a machine without network stalls on its background services
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                  "--window-size=1400,1000")


def browser_unavailable() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra)"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.path.exists(path):
            return f"{path} is absent (Debian's {package} package)"
    return None


def start_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='continuation-chromium-')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
