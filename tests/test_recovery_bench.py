"""The recovery benchmark, reduced (the full table: ``scripts/bench_recovery.py``), and the
scripted agent's honesty: its luck does not depend on the policy, and it knows only what it
is told."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from continuation.prove.coder import ApiDriver, Coder, Rates
from continuation.prove.recovery_runs import POLICIES, run_task
from continuation.prove.tasks import build_repo, generate, grade

ROOT = Path(__file__).resolve().parents[1]
GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def git_env(monkeypatch, tmp_path):
    for key, value in GIT.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CONTINUATION_HOME", str(tmp_path / "state"))
    return tmp_path


def _bench():
    spec = importlib.util.spec_from_file_location("bench_recovery", ROOT / "scripts" / "bench_recovery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_loop_leads_on_checklist_progress_and_repeats_no_external_effect(git_env):
    bench = _bench()
    tasks = bench.tasks(2, 8, 10, seed=5)
    rows = [run_task(t, p, git_env / "work", home=git_env / "home" / p, rates=Rates(), seed=5)
            for t in tasks for p in POLICIES]
    summary = bench.summarize(rows, list(POLICIES))
    loop = summary["loop"]
    for other in ("none", "blind-retry", "rewind-no-summary"):
        assert loop["progress"] > summary[other]["progress"], (other, summary)
        assert loop["success_rate"] >= summary[other]["success_rate"], (other, summary)
    assert loop["repeated_external"] == 0
    assert loop["repeated_calls"] <= min(s["repeated_calls"] for s in summary.values())
    assert summary["none"]["checks"] == 0 and summary["none"]["checkpoints"] == 0
    assert loop["checks"] > 0 and loop["checkpoints"] > 0
    table = bench.table(summary, sum(len(t.requirements) for t in tasks), len(tasks))
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == list(POLICIES)


def test_the_agents_luck_is_the_same_under_every_policy(git_env):
    task = generate(11, 12)
    draws = []
    for n in range(2):
        coder = Coder(task, git_env / f"r{n}", driver=None, rates=Rates(), seed=3)
        row = []
        for req in task.requirements:
            for attempt in range(3):
                coder.attempts[req.id] = attempt
                row.append(coder._slip(req))
        draws.append(row)
    assert draws[0] == draws[1]
    assert {slip for _, slip in draws[0]} >= {"ok", "wrong"}


def test_the_agent_knows_only_what_it_is_told(git_env):
    """Without a report the agent never learns of its wrong edit; with the check's output it
    fixes exactly the requirement the output names."""
    from continuation.api import open_thread

    task = generate(12, 4)
    plan = {(r.id, 1): ("wrong" if r.id == 2 else "ok") for r in task.requirements}
    results = {}
    for told in (False, True):
        root = build_repo(task, git_env / f"repo-{told}", git_env / f"remote-{told}")
        with open_thread(f"s-{told}", workspace=root, guard=False) as thread:
            coder = Coder(task, root, ApiDriver(thread), Rates(wrong=0, tricky=0, syntax=0,
                                                                 destroy=0), plan=plan)
            coder.run_input(0)
            if told:
                coder.read("[continuation guard] The project's check failed (exit 1).\n"
                           "Its output (first and last part):\n  FAIL: test_f_2 "
                           "(tests.test_req_2.Test2.test_f_2)\n  AssertionError: 27 != 26")
                assert coder.fixes == [2] and 2 in coder.informed
                coder.work(task.inputs[0])
        results[told] = grade(task, root, git_env / f"remote-{told}")["satisfied"]
    ids = {r.id for r in task.requirements if r.id in task.inputs[0]}
    assert 2 not in results[False] and results[True] >= ids


def test_a_rewind_summary_makes_it_reread_and_never_publish_again(git_env):
    task = generate(7, 7)
    root = build_repo(task, git_env / "repo", git_env / "remote")
    coder = Coder(task, root, driver=_NoDriver(), rates=Rates())
    publish = next(r for r in task.requirements if r.kind == "publish")
    func = next(r for r in task.requirements if r.kind == "function")
    coder.done |= {publish.id, func.id}
    text = ("[continuation guard] ... the workspace files were put back automatically to "
            "checkpoint cp-1 (event 3) ...\nFiles put back:\n"
            f"  - {func.module_path} (restored)\n  - {func.test_path} (deleted: the agent had created it)\n"
            "Calls that reached OUTSIDE the workspace: a rewind does not undo them.\n"
            f"  - Bash `sh tools/publish.sh {publish.milestone}` -> ok  [named]\n")
    coder.read(text)
    assert func.id not in coder.done  # not in the file any more: to be done again
    assert publish.id in coder.done  # ran already, outside: never again
    assert [c[0] for c in coder.calls] == ["Read", "Read"]


class _NoDriver:
    def call(self, tool, args, run):
        run()
        return None
