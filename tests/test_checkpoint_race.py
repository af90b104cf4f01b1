"""Checkpoints of one thread racing in real processes.

`continuation checkpoint` racing a PreCompact: both snapshotted to the same
``refs/continuation/<thread>/<gen>``, the second moved the ref (the first checkpoint's recorded
commit was then collected by ``git gc``), and the PreCompact that lost the store commit raised
``generation N already committed`` and recorded no boundary."""
from __future__ import annotations

import subprocess

import pytest
from race_harness import isolated_env, run_race


def test_racing_checkpoints_keep_every_boundary_and_own_their_refs(tmp_path):
    report = run_race(tmp_path, rounds=3, precompacts=2, manual=2)
    assert report.worker_failures == []
    assert report.hook_errors == [], "a PreCompact hook failed (fail open hid it)"
    assert report.boundaries_lost == 0, report.summary()
    assert report.checkpoints_lost == 0, report.summary()
    assert report.mismatched_refs == []
    assert report.unrestorable == []
    assert report.doctor_problems == []
    assert report.lost == 0


@pytest.fixture
def repo_thread(tmp_path, monkeypatch):
    """(git env, repository, thread with one input) in an isolated git and state home."""
    from continuation.session.engine import Engine

    env = isolated_env(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    with Engine(tmp_path / "state") as engine:
        thread = engine.thread("claude", "s1", workspace_root=str(repo))
        thread.admit("hello", input_id="p1")
        yield env, repo, thread


def test_a_taken_generation_moves_the_checkpoint_to_the_next_one(repo_thread):
    """A ref left at the next generation (a process killed between its snapshot and its store
    commit, or a racing one) is never moved: the checkpoint takes the next free generation and
    its ref names its own commit."""
    from continuation.boundary.crossing import commit_checkpoint

    env, repo, thread = repo_thread
    first = commit_checkpoint(thread, reason="manual")
    assert first.generation == 1
    stale = f"refs/continuation/{thread.key}/2"
    subprocess.run(["git", "update-ref", stale, first.workspace["snapshot_commit"]], cwd=repo,
                   env=env, check=True)
    (repo / "new.txt").write_text("x")
    second = commit_checkpoint(thread, reason="manual")
    assert second.generation == 3
    assert second.workspace["snapshot_ref"] == f"refs/continuation/{thread.key}/3"
    named = subprocess.run(["git", "rev-parse", stale], cwd=repo, env=env, check=True,
                           capture_output=True, text=True).stdout.strip()
    assert named == first.workspace["snapshot_commit"], "the other ref was moved"
    own = subprocess.run(["git", "rev-parse", second.workspace["snapshot_ref"]], cwd=repo,
                         env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert own == second.workspace["snapshot_commit"]


def test_a_generation_committed_meanwhile_is_retried_not_dropped(repo_thread, monkeypatch):
    """The store commit lost to another process: the checkpoint is retried with the next
    generation (and its claimed ref given back), never raised to the PreCompact hook."""
    from continuation.boundary import checkpoints
    from continuation.boundary.crossing import before_compaction

    env, repo, thread = repo_thread
    real_commit = checkpoints.commit
    raced = []

    def commit_after_a_rival(thread_, **kw):
        if not raced:  # another process commits this generation first (no snapshot)
            raced.append(real_commit(thread_, reason="rival", generation=kw["generation"]))
        return real_commit(thread_, **kw)

    monkeypatch.setattr(checkpoints, "commit", commit_after_a_rival)
    cp = before_compaction(thread, trigger="auto", source_tag="test")
    assert raced[0].generation == 1 and cp.generation == 2
    kinds = [e["data"].get("generation") for e in thread.events() if e["type"] == "boundary"]
    assert kinds == [2]
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)",
                           f"refs/continuation/{thread.key}/"], cwd=repo, env=env,
                          check=True, capture_output=True, text=True).stdout.split("\n")
    assert [r for r in refs if r] == [
        f"refs/continuation/{thread.key}/2 {cp.workspace['snapshot_commit']}"], \
        "the lost claim of generation 1 was not given back"


def test_doctor_reports_a_ref_that_names_another_commit(repo_thread):
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.commands.health import PROBLEM, check_checkpoint_refs

    env, repo, thread = repo_thread
    engine = thread.engine
    first = commit_checkpoint(thread, reason="manual")
    assert [f.status for f in check_checkpoint_refs(engine)] == ["ok"]
    (repo / "other.txt").write_text("y")
    second = commit_checkpoint(thread, reason="manual")
    # what the race did: the ref of generation 1 moved to another snapshot's commit
    subprocess.run(["git", "update-ref", first.workspace["snapshot_ref"],
                    second.workspace["snapshot_commit"]], cwd=repo, env=env, check=True)
    findings = check_checkpoint_refs(engine)
    assert [f.status for f in findings] == [PROBLEM]
    assert first.checkpoint_id in findings[0].message
    # --fix does not take another checkpoint's commit away from it
    assert [f.status for f in check_checkpoint_refs(engine, fix=True)] == [PROBLEM]


def test_doctor_fix_points_a_moved_ref_back_at_the_recorded_snapshot(repo_thread):
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.commands.health import OK, check_checkpoint_refs

    env, repo, thread = repo_thread
    first = commit_checkpoint(thread, reason="manual")
    ref, recorded = first.workspace["snapshot_ref"], first.workspace["snapshot_commit"]
    # the old race: a losing snapshot (recorded by no checkpoint) moved the ref
    loser = subprocess.run(["git", "commit-tree", "-m", "loser", f"{recorded}^{{tree}}"], cwd=repo,
                           env=env, check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "update-ref", ref, loser], cwd=repo, env=env, check=True)
    fixed = check_checkpoint_refs(thread.engine, fix=True)
    assert [f.status for f in fixed] == [OK, OK] and "pointed the ref back" in fixed[0].message
    assert subprocess.run(["git", "rev-parse", ref], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout.strip() == recorded
    assert [f.status for f in check_checkpoint_refs(thread.engine)] == [OK]


def test_metadata_checkpoints_claim_their_manifest_too(tmp_path, monkeypatch):
    """Policy ``metadata``: a second checkpoint of the same generation never overwrites the
    first one's manifest; it takes the next generation."""
    from continuation.workspace import WorkspacePolicy, take_snapshot

    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    policy = WorkspacePolicy(mode="metadata")
    first = take_snapshot(folder, "t1", 1, state_home=tmp_path / "state", policy=policy, claim=True)
    kept = open(first.manifest_path, "rb").read()
    (folder / "a.txt").write_text("two, longer\n")
    second = take_snapshot(folder, "t1", 1, state_home=tmp_path / "state", policy=policy, claim=True)
    assert (first.generation, second.generation) == (1, 2)
    assert second.manifest_path != first.manifest_path
    assert open(first.manifest_path, "rb").read() == kept


CLAIM_AND_DIE = r"""
import sys
from continuation.workspace import take_snapshot
ref = take_snapshot(sys.argv[1], sys.argv[2], int(sys.argv[3]), state_home=sys.argv[4], claim=True)
print(ref.snapshot_commit)
"""


def test_a_claim_whose_process_died_is_taken_over_without_a_hole(repo_thread, tmp_path):
    """A checkpoint killed between its snapshot and its store commit left its ref: the next
    checkpoint takes the generation over (its process is gone, no checkpoint records it)."""
    import sys

    from continuation.boundary.crossing import commit_checkpoint

    env, repo, thread = repo_thread
    first = commit_checkpoint(thread, reason="manual")
    dead = subprocess.run([sys.executable, "-c", CLAIM_AND_DIE, str(repo), thread.key, "2",
                           str(tmp_path / "state")], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()
    ref = f"refs/continuation/{thread.key}/2"
    assert subprocess.run(["git", "rev-parse", ref], cwd=repo, env=env, capture_output=True,
                          text=True).stdout.strip() == dead
    (repo / "later.txt").write_text("z")
    second = commit_checkpoint(thread, reason="manual")
    assert (first.generation, second.generation) == (1, 2)
    assert second.workspace["snapshot_ref"] == ref
    assert subprocess.run(["git", "rev-parse", ref], cwd=repo, env=env, capture_output=True,
                          text=True).stdout.strip() == second.workspace["snapshot_commit"] != dead


def test_a_snapshot_that_fails_in_its_worker_leaves_the_capsule_committed(repo_thread, monkeypatch,
                                                                        capfd):
    """The snapshot runs in a worker thread while the boundary gathers the capsule; when it
    fails there (here: the disk is full in the middle of it), the checkpoint is still committed
    with the failure in its workspace record, and nothing is printed (no thread traceback)."""
    from continuation.boundary.crossing import commit_checkpoint

    env, repo, thread = repo_thread
    (repo / "work.txt").write_text("x")
    monkeypatch.setenv("CONTINUATION_FAULT", "snapshot.mid:full")
    cp = commit_checkpoint(thread, reason="manual")
    assert cp.generation == 1 and "No space left on device" in cp.workspace["error"]
    assert cp.workspace["root"] == str(repo) and "snapshot_ref" not in cp.workspace
    monkeypatch.delenv("CONTINUATION_FAULT")
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Exception in thread" not in err
    again = commit_checkpoint(thread, reason="manual")  # the next boundary snapshots again
    assert again.generation == 2 and again.workspace["snapshot_ref"].endswith("/2")
