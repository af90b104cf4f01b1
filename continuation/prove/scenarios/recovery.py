"""Scenario 24: the recovery loop through the real hook command, with the scripted coding agent.

A generated repository (``continuation.prove.tasks``) with real unittests, the project's check
``python check.py`` in ``.continuation/guard.json`` (after every second change; rewind after two
failed checks in a row or at once on the check's fatal exit code), and the coding agent
(``continuation.prove.coder``) playing Claude Code through ``continuation hook --runtime
claude``. Its slips are planned, not drawn, so the scenario always meets the same ones: a wrong
edit followed by a publication, a wrong fix of it (a rewind whose undone stretch holds the
publication), and a destructive clean-up command (``git checkout -- pkg``: the check calls it
fatal). The user edits the README between the two inputs.
"""
from __future__ import annotations

import json
import random
import subprocess
import time

from continuation.prove.coder import Coder, HookDriver, Rates
from continuation.prove.sandbox import CLI, GIT_ENV
from continuation.prove.scenarios.registry import scenario
from continuation.prove.tasks import CHECK, FATAL_EXIT, Requirement, Task, _function, build_repo, grade


def _task() -> Task:
    rng = random.Random(24)
    reqs = []
    for rid in range(1, 9):
        if rid in (4, 6):
            reqs.append(Requirement(rid, "publish", milestone=f"m24-{rid}"))
            continue
        spec, ok, bad, cases = _function(rid, rng)
        reqs.append(Requirement(rid, "function", module=rid % 2, spec=spec, correct=ok,
                                wrong=bad, cases=cases))
    return Task("prove-24", 24, 2, reqs, [[1, 2, 3, 4, 5, 6, 7], [8]])


#: (requirement, attempt) -> slip (see ``Coder.plan``); unlisted attempts are right
PLAN = {(5, 1): "wrong", (5, 2): "wrong", (8, 1): "destroy:git checkout -- pkg+ok"}
GUARD = {"command": CHECK, "when": "change", "every": 2, "policy": "rewind",
         "failures_before_rewind": 2, "fatal_exit_codes": [FATAL_EXIT], "timeout": 60}


def _hook(box):
    def call(payload: dict) -> dict:
        done = subprocess.run([*CLI, "hook", "--runtime", "claude"],
                              input=json.dumps(payload).encode(), capture_output=True,
                              env=box.env, timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"hook exited {done.returncode}: {done.stderr[-300:]!r}")
        return json.loads(done.stdout or b"{}")
    return call


@scenario(24, "recovery loop: failures reported and rewound, the retry informed, "
              "nothing repeated, user edit kept")
def recovery_loop(box, r):
    task = _task()
    remote = box.root / "remote.log"
    root = build_repo(task, box.root / "ws" / "task", remote, {**GIT_ENV, "HOME": str(box.home)})
    (root / ".continuation").mkdir()
    (root / ".continuation" / "guard.json").write_text(json.dumps(GUARD), encoding="utf-8")
    driver = HookDriver("claude", "prove-24", root, box.root / "transcript.jsonl", _hook(box))
    coder = Coder(task, root, driver, Rates(wrong=0, tricky=0, syntax=0, destroy=0), plan=PLAN)
    driver.start()
    coder.run_input(0)
    (root / "README.md").write_text("# prove-24\n\nThe user's own note.\n", encoding="utf-8")
    time.sleep(1.2)  # outside every agent call's window: the user's edit, not the agent's
    coder.run_input(1)

    graded = grade(task, root, remote)
    r.equal("every requirement holds at the end (graded apart from the check)",
            len(graded["satisfied"]), len(task.requirements))
    r.equal("each publication ran exactly once", graded["published"], {"m24-4": 1, "m24-6": 1})
    rewinds = [t for t in coder.told if "put back automatically" in t]
    reports = [t for t in coder.told if "put back automatically" not in t]
    r.check("a failed check was reported to the model with its output",
            any("AssertionError" in t and "test_f_5" in t for t in reports), f"{len(reports)} reports")
    r.equal("two automatic rewinds reached the model (two failures in a row; a fatal one)",
            len(rewinds), 2)
    if len(rewinds) == 2:
        first, second = rewinds
        r.check("the first rewind's summary names the publication as outside the workspace",
                "OUTSIDE the workspace" in first and "sh tools/publish.sh m24-6" in first)
        r.check("it lists what was tried, the failing output and the files put back",
                "What was tried" in first and "AssertionError" in first and "Files put back" in first)
        r.check("the fatal one says so and puts the package back",
                "fatal" in second and "pkg/mod_" in second)
        r.check("the user's README edit is kept and listed", "README.md" in second
                and "The user's own note." in (root / "README.md").read_text(encoding="utf-8"))
    r.equal("the agent fixed the requirement it was told about (attempts of R5)",
            coder.attempts[5], 3)
    events = box.cli_json("events", "--thread", "prove-24", "--json")["events"]
    actions = [e["data"].get("action") for e in events if e["type"] == "guard_verdict"]
    r.check("the verdicts are recorded as facts", actions.count("rewind") == 2
            and "report" in actions and actions[0] == "pass", f"actions {actions}")
    restored = [e["data"] for e in events if e["type"] == "workspace_restored"]
    r.check("each automatic rewind is a files restore by the guard with a safety snapshot",
            len(restored) == 2 and all(d.get("by") == "guard" and d.get("safety_ref")
                                       for d in restored))
    delivered = [e["data"]["via"] for e in events if e["type"] == "guard_delivered"]
    r.check("the summaries went through the tool result's context (PostToolUse)",
            delivered and set(delivered) == {"tool_context"}, f"via {delivered}")
    status = box.cli_json("status", "--thread", "prove-24", "--json")["threads"][0]["guard"]
    r.check("status shows the loop: the check passes now, at a recorded checkpoint",
            status["verdict"] == "pass" and status["good_checkpoint"], f"{status}")
    module = root / "pkg" / "mod_0.py"
    before = module.read_text(encoding="utf-8")
    undo = box.cli("restore", "--undo", "--thread", "prove-24", "--yes")
    r.check("`continuation restore --undo` succeeded", undo.returncode == 0,
            undo.stderr.decode(errors="replace")[-300:])
    after = module.read_text(encoding="utf-8")
    r.check("it took the newest automatic rewind back (the package as the clean-up and the "
            "edit after it left it: f_8 and no f_2)",
            after != before and "def f_8(" in after and "def f_2(" not in after, after[-200:])
    r.metrics.update(checks=sum(1 for e in events if e["type"] == "guard_ran"),
                     automatic_rewinds=len(restored), repeated_external=graded["repeated_external"])
