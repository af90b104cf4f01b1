"""SIGKILL at every persistence point of a scripted session, then restart and check recovery.

See tests/fault_harness.py for the session and the checks; `scripts/fault_report.py` prints the
counts (points injected, sessions killed, facts lost) for the whole matrix.
"""
from __future__ import annotations

import shutil
import signal

import pytest

import fault_harness as fh
from continuation.host.faults import POINTS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL") or shutil.which("sh") is None
                       or shutil.which("git") is None, reason="needs SIGKILL, sh and git"),
]

TALLY = fh.Tally()


def _assert_recovered(run: fh.FaultRun, rep: fh.Recovery) -> None:
    assert rep.failures(run) == []
    # the runtime died by SIGKILL: nobody sent SessionEnd, so recover found a crash
    assert run.runtime_returncode == -signal.SIGKILL
    if run.acknowledged:
        assert rep.crash_recorded, rep.recover_output
        assert rep.owner_pids == [run.runtime_pid]


@pytest.mark.parametrize("point,step", fh.matrix(),
                         ids=[f"{p or 'no-fault'}@{s}" for p, s in fh.matrix()])
def test_kill_point_recovers(tmp_path, point, step):
    run = fh.run_session(tmp_path, point, step)
    if point is not None:
        # the point is reachable from the armed hook: that hook (and only it) was killed
        assert run.injected, run.acks
        assert run.acknowledged == list(range(step))
    else:
        assert run.acknowledged == list(range(len(run.steps)))
    rep = fh.check_recovery(run, tmp_path)
    TALLY.add(run, rep)
    _assert_recovered(run, rep)
    from continuation.boundary import checkpoints
    from continuation.session.engine import Engine

    with Engine(run.home, create=False) as engine:
        thread = engine.find_thread(fh.RUNTIME, fh.SESSION)
        events = thread.events() if thread else []
        cps = checkpoints.list_checkpoints(thread) if thread else []
    if point == "event.after_commit":
        assert fh._has(events, *fh.FIRST_APPEND[step]), "a fact committed before the kill survives"
    if point == "event.before_commit":
        assert not fh._has(events, *fh.FIRST_APPEND[step]), "a fact killed before its commit is absent"
    # a checkpoint is its store row alone: no capsule file is written, before or after the kill
    assert not (run.home / "capsules").exists()
    if point == "checkpoint.before_commit":
        assert cps == []  # the row (the commit point) never committed
        assert not fh._has(events, "boundary", "kind", "compact")  # nor its boundary
    if point == "checkpoint.after_commit":  # committed together before the kill: both survive
        assert len(cps) == 1 and fh._has(events, "boundary", "kind", "compact")
    if point == "snapshot.mid":
        assert any("workspaces" in t for t in rep.temps_before), "the kill left a scratch index"
        assert cps == []
    if point is None or step == 9:
        assert len(cps) == 1  # PreCompact was acknowledged: its checkpoint is there
    # in-flight calls whose start is durable are all reconciling (t4 only in the full run)
    started = {c for c in ("t2", "t3", "t4") if fh._has(events, "tool_started", "call_id", c)}
    assert set(rep.reconciling_calls) == started


def test_zz_fault_counts(capsys):
    """The closing numbers (printed with -s / in the report): facts lost must be 0."""
    if not TALLY.runs:
        pytest.skip("the matrix did not run in this session")
    assert TALLY.facts_lost == 0
    assert TALLY.points_injected == len(fh.matrix()) - 1
    assert {r["point"] for r in TALLY.runs if r["injected"]} == set(POINTS)
    with capsys.disabled():
        print("\nfault injection: " + TALLY.summary())
