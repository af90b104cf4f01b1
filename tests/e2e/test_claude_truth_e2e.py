"""With the real Claude Code 2.1.332: after a kill -9 inside a tool call, `status` says
the runtime was killed (item 8), and a `reconcile --applied` decision reaches the model in the
first request of the resumed session, saying the call took effect (item 3)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_claude_e2e as tc  # noqa: E402

from test_claude_e2e import claude_bin, continuation_cmd  # noqa: E402,F401  (fixtures)


@tc.e2e
def test_claude_killed_then_applied_decision_reaches_the_model(continuation_cmd, claude_bin,  # noqa: F811
                                                               tmp_path: Path) -> None:
    with tc.installed_sandbox(continuation_cmd, claude_bin, tmp_path) as env:
        box, request_log = env.box, env.request_log
        session = tc.drive_session(box, request_log)
        status = json.loads(env.cli("status", "--thread", session.session_id, "--json").stdout)
        env.cli("recover", "--record", "--json")
        calls = json.loads(env.cli("reconcile", "--json").stdout)["calls"]
        decided = env.cli("reconcile", calls[0]["call_id"], "--applied")
        assert decided.returncode == 0, decided.stderr[-2000:]
        before = len(tc._requests(request_log))
        resumed = box.run("what is the state of things?", resume=session.session_id,
                          timeout=tc.RUN_TIMEOUT_S)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        first = tc._requests(request_log)[before]
        inputs = {str(i.get("text")): i.get("state") for i in env.inputs(session.session_id)}
    env.assert_no_hook_errors()
    (thread,) = status["threads"]
    assert thread["thread"]["status"] == "killed", thread["runtime"]
    blocks = [b for _, b in tc._checkpoint_blocks(first["body"])]
    assert blocks, "no checkpoint in the first request of the resumed session"
    text = blocks[-1]
    assert "applied: it took effect; do not run it again" in text, text[-3000:]
    assert "reconciled by the user: applied" in text
    assert any(json.dumps("slow task: wait for the build") in line and "state=pending" in line
               for line in text.splitlines()), text[-3000:]
    # the model was given the decision, then completed a clean turn: the slow task is decided
    assert inputs["slow task: wait for the build"] == "handled", inputs
