#!/usr/bin/env python3
"""Controlled comparison: the same scripted sessions under continuation and three baselines.

Every session of the corpus (the boundary scenarios of ``continuation prove``) is played by the
simulated runtime (``continuation.prove.simruntime``) with the same deterministic scripted agent
("do every request that looks actionable"); only the continuation policy differs, i.e. what the
agent's memory is after a context boundary:

- ``continuation``: the context block the real ``continuation hook`` answers with;
- ``summary-only``, ``codex-native``, ``latest-prompt``: see ``scripts/policies/baselines.py``.

Counted per policy, from the tool executions the agent performed (a ledger the runtime writes):
- pending inputs lost: requests that should have been done and whose work never (fully) ran;
- handled inputs re-executed: requests whose work had fully run, then ran again;
- repeated tool calls: executions of a planned tool call beyond its first;
- checklist items completed: requests done exactly once (every planned tool call ran once).

Usage: python scripts/compare_policies.py [--only NAME ...] [--boundaries N]
Prints a side-by-side table and writes it to scripts/out/compare_policies.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from continuation.prove.sandbox import Sandbox, wait_for  # noqa: E402
from continuation.prove.scenarios.common import catalog, request  # noqa: E402
from continuation.prove.session import SimSession  # noqa: E402

POLICY_FILE = HERE / "policies" / "baselines.py"
POLICIES = {
    "continuation": "continuation",
    "summary-only": {"file": str(POLICY_FILE), "name": "SummaryOnly"},
    "codex-native": {"file": str(POLICY_FILE), "name": "CodexNativeHistory"},
    "latest-prompt": {"file": str(POLICY_FILE), "name": "LatestPromptTurnMatch"},
}


def _basic(*keys_tools):
    return catalog(*(request(k, t, n) for k, t, n in keys_tools))


def corpus(boundaries: int) -> list[dict]:
    """Each entry: runtime, catalog, phases (steps, or a crash / a command between runs), and
    ``expect``: the requests that must end done exactly once."""
    many = [("R%d" % i, f"step {i}: update module_{i}.py docstring", 1)
            for i in range(1, boundaries + 1)]
    many_steps = [{"op": "start"}]
    for i in range(1, boundaries + 1):
        many_steps += [{"op": "prompt", "key": f"R{i}", "turn": f"t{i}"}, {"op": "act"},
                       {"op": "stop", "turn": f"t{i}"},
                       {"op": "compact", "trigger": "auto", "turn": f"t{i}"}, {"op": "act"}]
    big = "Refactor the ingest pipeline as described in the pasted spec below. " * 6
    big += "row 🚀 naïve café \x00 Ω 中文 |" * (5 * 1024 * 1024 // 28)
    return [
        {"name": "1 completed objective across a boundary", "runtime": "codex",
         "catalog": _basic(("A", "add a changelog entry for the parser fix", 2),
                           ("B", "now bump the version to 1.2.0", 1)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                     {"op": "stop", "turn": "t1"}, {"op": "compact", "turn": "t1"}, {"op": "act"},
                     {"op": "prompt", "key": "B", "turn": "t2"}, {"op": "act"},
                     {"op": "stop", "turn": "t2"}]],
         "expect": ["A", "B"]},
        {"name": "2 request accepted just before an automatic boundary", "runtime": "codex",
         "catalog": _basic(("A", "run the unit tests and fix the failing import", 1),
                           ("B", "also add a regression test for the import fix", 2)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                     {"op": "stop", "turn": "t1"}, {"op": "prompt", "key": "B", "turn": "t2"},
                     {"op": "compact", "turn": "t2"}, {"op": "act"}, {"op": "stop", "turn": "t2"},
                     {"op": "compact", "turn": "t2"}, {"op": "act"}]],
         "expect": ["A", "B"]},
        {"name": "3 two steered inputs in one turn", "runtime": "codex",
         "catalog": _basic(("A", "rename the config loader to load_settings", 1),
                           ("B", "and keep a deprecated alias for the old name", 1)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                     {"op": "prompt", "key": "B", "turn": "t1"}, {"op": "compact", "turn": "t1"},
                     {"op": "act"}, {"op": "stop", "turn": "t1"}]],
         "expect": ["A", "B"]},
        {"name": "4 input queued while a compaction runs", "runtime": "codex",
         "catalog": _basic(("A", "format the whole repository with black", 1),
                           ("B", "then update the contributing guide", 1)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                     {"op": "stop", "turn": "t1"},
                     {"op": "compact", "trigger": "manual", "turn": "t1",
                      "prompts_during": [{"key": "B", "turn": "t2"}]},
                     {"op": "act"}, {"op": "stop", "turn": "t2"}]],
         "expect": ["A", "B"]},
        {"name": "5 interrupted turn, then resumed", "runtime": "claude",
         "catalog": catalog(request("P", "migrate the three settings files to TOML", 3),
                            request("Q", "continue", 0)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "P", "turn": "p-1"},
                     {"op": "act", "limit": 1}, {"op": "end", "reason": "prompt_input_exit"}],
                    [{"op": "start", "source": "resume"}, {"op": "prompt", "key": "Q", "turn": "p-2"},
                     {"op": "act"}, {"op": "stop", "turn": "p-2"}]],
         "expect": ["P"]},
        {"name": "5b interrupted turn, then a compaction", "runtime": "claude",
         "catalog": catalog(request("P", "convert the five fixtures to JSON", 3),
                            request("Q", "go on", 0)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "P", "turn": "p-1"},
                     {"op": "act", "limit": 2}, {"op": "prompt", "key": "Q", "turn": "p-2"},
                     {"op": "compact", "turn": "p-2"}, {"op": "act"}, {"op": "stop", "turn": "p-2"}]],
         "expect": ["P"]},
        {"name": "6 crash mid-tool, then resumed", "runtime": "codex",
         "catalog": catalog(request("A", "create the staging database schema", 1),
                            request("B", "run the data migration against staging", 2),
                            request("C", "continue", 0)),
         "phases": [{"crash": [{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"},
                               {"op": "act"}, {"op": "stop", "turn": "t1"},
                               {"op": "prompt", "key": "B", "turn": "t2"},
                               {"op": "act", "limit": 1, "hang": True}]},
                    {"cli": ["recover", "--record", "--json"], "only": "continuation"},
                    [{"op": "start", "source": "resume"}, {"op": "act"},
                     {"op": "prompt", "key": "C", "turn": "t3"}, {"op": "act"},
                     {"op": "stop", "turn": "t3"}]],
         "expect": ["A", "B"]},
        {"name": "11 5 MB prompt accepted before a boundary", "runtime": "codex",
         "catalog": catalog({"A": {"text": big, "tools": request("A", "-", 2)["A"]["tools"]}},
                            request("B", "then say which stages were touched", 1)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"},
                     {"op": "compact", "turn": "t1"}, {"op": "act"}, {"op": "stop", "turn": "t1"},
                     {"op": "prompt", "key": "B", "turn": "t2"}, {"op": "act"},
                     {"op": "stop", "turn": "t2"}, {"op": "compact", "turn": "t2"}, {"op": "act"}]],
         "expect": ["A", "B"]},
        {"name": "12 manual boundary (Claude /compact)", "runtime": "claude",
         "catalog": _basic(("A", "write the release notes", 1), ("B", "tag the release", 1)),
         "phases": [[{"op": "start"}, {"op": "prompt", "key": "A", "turn": "p1"}, {"op": "act"},
                     {"op": "stop", "turn": "p1"}, {"op": "prompt", "key": "B", "turn": "p2"},
                     {"op": "compact", "trigger": "manual", "turn": "p2"}, {"op": "act"},
                     {"op": "stop", "turn": "p2"}]],
         "expect": ["A", "B"]},
        {"name": f"13 {boundaries} boundaries in a row", "runtime": "codex",
         "catalog": _basic(*many), "phases": [many_steps], "fork_hooks": True,
         "expect": [k for k, _, _ in many]},
    ]


def play(box: Sandbox, entry: dict, policy_name: str, n: int) -> dict:
    ws = box.workspace(f"ws-{n}-{policy_name}")
    cont = policy_name == "continuation"
    hook = ("fork" if entry.get("fork_hooks") else "command") if cont else None
    s = SimSession(box, f"c{n}-{policy_name}", runtime=entry["runtime"], cwd=ws,
                   catalog=entry["catalog"], hook=hook, policy=POLICIES[policy_name])
    for phase in entry["phases"]:
        if isinstance(phase, list):
            s.run(phase, timeout=600)
        elif "crash" in phase:
            proc = s.start(phase["crash"])
            wait_for(lambda: any(x.get("kind") == "hanging" for x in s.log()), timeout=120)
            proc.kill()
            proc.wait(timeout=30)
        elif "cli" in phase and (phase.get("only") is None or phase["only"] == policy_name):
            box.cli(*phase["cli"], timeout=120)
    counts = s.exec_counts()
    ledger = [x for x in s.ledger() if x.get("kind") == "exec"]
    tools = {k: len(v["tools"]) for k, v in entry["catalog"].items()}
    lost = sum(1 for k in entry["expect"]
               if any(counts.get((k, i), 0) == 0 for i in range(tools[k])))
    reexecuted = 0
    for k in entry["expect"]:
        seen: set = set()
        for x in ledger:
            if x["key"] != k:
                continue
            if len(seen) == tools[k]:  # all of its work had run: this is a re-execution
                reexecuted += 1
                break
            seen.add(x["tool_index"])
    repeated = sum(c - 1 for c in counts.values() if c > 1)
    done_once = sum(1 for k in entry["expect"]
                    if all(counts.get((k, i), 0) == 1 for i in range(tools[k])))
    return {"lost": lost, "reexecuted": reexecuted, "repeated": repeated,
            "checklist": done_once, "checklist_total": len(entry["expect"])}


def render(rows: dict, names: list[str], policies: list[str], measured: str) -> str:
    cols = ["pending lost", "handled re-executed", "repeated tool calls", "checklist done"]
    keys = ["lost", "reexecuted", "repeated", "checklist"]
    out = [f"# Continuation policies compared (measured {measured})", "",
           "Same scripted sessions, same deterministic agent; only what the agent is handed "
           "after a boundary differs. Lower is better except `checklist done` "
           "(requests done exactly once).", "", "## Totals", "",
           "| policy | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for p in policies:
        tot = {k: sum(rows[(n, p)][k] for n in names) for k in keys + ["checklist_total"]}
        out.append(f"| {p} | {tot['lost']} | {tot['reexecuted']} | {tot['repeated']} | "
                   f"{tot['checklist']}/{tot['checklist_total']} |")
    out += ["", "## Per session (lost / re-executed / repeated / done exactly once)", "",
            "| session | " + " | ".join(policies) + " |", "|---|" + "---|" * len(policies)]
    for n in names:
        cells = []
        for p in policies:
            r = rows[(n, p)]
            cells.append(f"{r['lost']} / {r['reexecuted']} / {r['repeated']} / "
                         f"{r['checklist']}/{r['checklist_total']}")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", choices=list(POLICIES), help="policies to run")
    ap.add_argument("--boundaries", type=int, default=20,
                    help="length of the repeated-boundaries session (default 20)")
    ap.add_argument("--out", default=str(HERE / "out" / "compare_policies.md"))
    args = ap.parse_args(argv)
    policies = args.only or list(POLICIES)
    entries = corpus(args.boundaries)
    rows = {}
    t0 = time.perf_counter()
    with Sandbox("compare") as box:
        for n, entry in enumerate(entries):
            for p in policies:
                try:
                    rows[(entry["name"], p)] = play(box, entry, p, n)
                except Exception as exc:  # one broken run must not hide the others
                    sys.stderr.write(f"{entry['name']} / {p}: {exc}\n")
                    rows[(entry["name"], p)] = {"lost": len(entry["expect"]), "reexecuted": 0,
                                                "repeated": 0, "checklist": 0,
                                                "checklist_total": len(entry["expect"])}
            sys.stderr.write(f"  done: {entry['name']}\n")
    measured = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = render(rows, [e["name"] for e in entries], policies, measured)
    text += f"\n({time.perf_counter() - t0:.0f} s)\n"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    sys.stdout.write(f"\nwritten to {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
