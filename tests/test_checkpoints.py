"""Committing capsules before boundaries, reading them back, falling back on corruption."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from capsule.decode import decode_capsule
from continuation.boundary import crossing as boundary, capsule_source, checkpoints
from continuation import hooks
from continuation.session.engine import Engine


def _payload(event, **extra):
    return json.dumps({"session_id": "s1", "hook_event_name": event, "cwd": "/nonexistent",
                       **extra}).encode()


def test_commit_writes_the_capsule_once_in_its_row_with_the_fact(engine):
    t = engine.thread("codex", "s1")
    t.admit("build the thing", turn_id="t1")
    cp = checkpoints.commit(t, reason="manual")
    assert cp.generation == 1 and cp.seq == 1
    [row] = t.store.checkpoint_rows(t.key)
    data = bytes(row["capsule"])
    assert data == cp.capsule_bytes and hashlib.sha256(data).hexdigest() == row["sha256"]
    assert row["rendered"] == cp.rendered and row["file_path"] is None
    assert not (engine.home / "capsules").exists()  # no second copy on disk
    assert t.events()[-1]["type"] == "checkpoint_committed"
    assert t.row["generation"] == 1
    capsule = decode_capsule(data)
    assert capsule.objective.text == "build the thing"


def test_generations_increase_and_previous_is_kept(engine):
    t = engine.thread("codex", "s1")
    for n in range(3):
        t.admit(f"request {n}", turn_id=f"t{n}")
        checkpoints.commit(t, reason="auto")
    gens = [cp.generation for cp in checkpoints.list_checkpoints(t)]
    assert gens == [1, 2, 3]
    assert checkpoints.load(t).checkpoint.generation == 3
    assert checkpoints.load(t, 2).checkpoint.generation == 2


def test_hash_mismatch_is_reported_and_previous_used(engine):
    t = engine.thread("codex", "s1")
    t.admit("first", turn_id="t1")
    checkpoints.commit(t, reason="auto")
    t.admit("second", turn_id="t2")
    cp2 = checkpoints.commit(t, reason="auto")
    flipped = bytearray(cp2.capsule_bytes)
    flipped[len(flipped) // 2] ^= 0xFF
    engine.store.conn.execute("UPDATE checkpoints SET capsule=? WHERE checkpoint_id=?",
                              (bytes(flipped), cp2.checkpoint_id))
    loaded = checkpoints.load(t)
    assert loaded.checkpoint.generation == 1
    assert loaded.problems and "corrupt" in loaded.problems[0]


def test_all_checkpoints_corrupt_is_a_clear_error(engine):
    t = engine.thread("codex", "s1")
    t.admit("first", turn_id="t1")
    cp = checkpoints.commit(t, reason="auto")
    engine.store.conn.execute("UPDATE checkpoints SET capsule=X'00' WHERE checkpoint_id=?",
                              (cp.checkpoint_id,))
    with pytest.raises(checkpoints.CheckpointError, match="no valid checkpoint"):
        checkpoints.load(t)


def test_handled_stays_historical_and_new_stays_actionable_across_50_boundaries(engine):
    t = engine.thread("codex", "s1")
    t.admit("done long ago", turn_id="t0")
    t.turn_completed("t0")
    first = t.admit("first steer", turn_id="t1")
    second = t.admit("second steer", turn_id="t1", ordinal=1)
    sizes = []
    for n in range(50):
        cp = boundary.before_compaction(t, trigger="auto", source_tag="test")
        answer = boundary.on_session_start(t, "codex", "compact", source_tag="test")
        text = answer["hookSpecificOutput"]["additionalContext"]
        loaded = checkpoints.load(t)
        states = {i.id: i.state for i in loaded.capsule.inputs}
        assert states[first.input_id] == states[second.input_id] == "pending"
        assert loaded.capsule.objective.input_id in (first.input_id, second.input_id)
        assert "done long ago" not in [i.text for i in loaded.capsule.inputs
                                       if i.state in ("pending", "interrupted")]
        sizes.append(loaded.capsule.budget.bytes)
        assert loaded.capsule.budget.bytes <= 16384 and loaded.capsule.budget.tokens <= 4000
        assert "first steer" in text and "second steer" in text
    # the capsule does not grow with the number of boundaries beyond its budget
    assert max(sizes) <= 16384
    t.turn_completed("t1")
    assert {r.state for r in t.inputs()} == {"handled"}
    boundary.before_compaction(t, trigger="auto", source_tag="test")
    loaded = checkpoints.load(t)
    assert all(i.state == "handled" for i in loaded.capsule.inputs)
    assert loaded.capsule.next_action.kind == "wait_for_user"


def test_undelivered_boundary_is_injected_at_the_next_prompt(home):
    for p in (_payload("UserPromptSubmit", prompt_id="p1", prompt="write the parser"),
              _payload("Stop", prompt_id="p1", last_assistant_message="ok"),
              _payload("PreCompact", trigger="auto")):
        assert hooks.run("claude", p)[1] == 0
    # the compact SessionStart never arrives (claude-code #15174): the next prompt carries it
    out, code = hooks.run("claude", _payload("UserPromptSubmit", prompt_id="p2",
                                             prompt="now the tests"))
    answer = json.loads(out)
    ctx = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "CONTINUATION-CHECKPOINT" in ctx and "write the parser" in ctx
    # delivered once: the following prompt carries nothing
    out, _ = hooks.run("claude", _payload("UserPromptSubmit", prompt_id="p3", prompt="more"))
    assert json.loads(out) == {}
    with Engine(home) as e:
        t = e.find_thread("claude", "s1")
        delivered = [ev for ev in t.events() if ev["type"] == "context_delivered"]
        assert [d["data"]["via"] for d in delivered] == ["user_prompt"]


def test_plain_resume_injects_nothing_but_a_crashed_one_does(home):
    hooks.run("claude", _payload("UserPromptSubmit", prompt_id="p1", prompt="a"))
    hooks.run("claude", _payload("Stop", prompt_id="p1"))
    out, _ = hooks.run("claude", _payload("SessionStart", source="resume"))
    assert json.loads(out) == {}
    hooks.run("claude", _payload("UserPromptSubmit", prompt_id="p2", prompt="b"))
    with Engine(home) as e:
        e.find_thread("claude", "s1").crash_detected("test")
    out, _ = hooks.run("claude", _payload("SessionStart", source="resume"))
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "interrupted" in ctx and ('"b"' in ctx or "\nb\n" in ctx)


def test_oversized_context_is_spilled_to_a_file_and_fits_inline(home):
    huge = "fix: " + "é😀\x00" * 300_000
    hooks.run("claude", _payload("UserPromptSubmit", prompt_id="p1", prompt=huge))
    hooks.run("claude", _payload("PreCompact", trigger="auto"))
    out, _ = hooks.run("claude", _payload("SessionStart", source="compact"))
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert len(ctx.encode("utf-16-le", "surrogatepass")) // 2 <= 10_000
    spill = next((home / "contexts").rglob("g000001.md"))
    assert huge in spill.read_text(encoding="utf-8")
    # named by its parts (one read each), which hold the same text
    first = spill.with_name("g000001.part1.md")
    assert str(first) in ctx
    parts = sorted(spill.parent.glob("g000001.part*.md"), key=lambda p: int(p.stem.rsplit("part", 1)[1]))
    assert all(p.stat().st_size <= 9_000 for p in parts)
    assert b"".join(p.read_bytes() for p in parts) == spill.read_bytes()


def run_cli(home, *args):
    return subprocess.run([sys.executable, "-m", "continuation", *args], capture_output=True,
                          env={**os.environ, "CONTINUATION_HOME": str(home)}, timeout=120)


def test_checkpoint_capsule_context_source_commands(home):
    hooks.run("codex", _payload("UserPromptSubmit", turn_id="t1", prompt="rename the module"))
    r = run_cli(home, "checkpoint", "--json", "--no-snapshot")
    assert r.returncode == 0, r.stderr
    cp = json.loads(r.stdout)
    assert cp["generation"] == 1
    r = run_cli(home, "capsule", "show", "--json")
    capsule = json.loads(r.stdout)
    assert capsule["objective"]["text"] == "rename the module"
    r = run_cli(home, "capsule", "show")
    assert b"CONTINUATION-CHECKPOINT" in r.stdout
    r = run_cli(home, "context")
    assert r.returncode == 0 and b"rename the module" in r.stdout
    r = run_cli(home, "context", "--json")
    kinds = [m["kind"] for m in json.loads(r.stdout)["messages"]]
    assert kinds == ["capsule", "actionable_input"]
    pointer = capsule["objective"]["pointer"]
    r = run_cli(home, "source", pointer)
    assert r.stdout.decode().strip() == "rename the module"
    r = run_cli(home, "source", "event:nope:1")
    assert r.returncode == 1 and b"Traceback" not in r.stderr
    r = run_cli(home, "source", "garbage")
    assert r.returncode == 1 and b"pointer" in r.stderr


def test_resume_then_compact_session_starts_deliver_the_block_once(home):
    """Codex compacting before a resumed turn: PreCompact, PostCompact, SessionStart(resume),
    SessionStart(compact) for one fresh context."""
    hooks.run("codex", _payload("UserPromptSubmit", turn_id="t1", prompt="first request"))
    with Engine(home) as e:
        e.find_thread("codex", "s1").crash_detected("killed")  # something to carry on resume
    hooks.run("codex", _payload("PreCompact", turn_id="t2", trigger="auto"))
    hooks.run("codex", _payload("PostCompact", turn_id="t2", trigger="auto"))
    out1, _ = hooks.run("codex", _payload("SessionStart", source="resume"))
    out2, _ = hooks.run("codex", _payload("SessionStart", source="compact"))
    assert "CONTINUATION-CHECKPOINT" in json.loads(out1)["hookSpecificOutput"]["additionalContext"]
    assert json.loads(out2) == {}
    # a later compaction whose PreCompact never arrived still gets its delivery
    hooks.run("codex", _payload("UserPromptSubmit", turn_id="t3", prompt="next"))
    out3, _ = hooks.run("codex", _payload("SessionStart", source="compact"))
    assert "next" in json.loads(out3)["hookSpecificOutput"]["additionalContext"]


def test_codex_interrupt_cuts_the_turn(home):
    hooks.run("codex", _payload("UserPromptSubmit", turn_id="t1", prompt="long job"))
    hooks.run("codex", _payload("PreToolUse", turn_id="t1", tool_name="Bash",
                                tool_input={"command": "make"}, tool_use_id="c1"))
    hooks.run("codex", _payload("Interrupt", turn_id="t1"))
    with Engine(home) as e:
        assert [r.state for r in e.find_thread("codex", "s1").inputs()] == ["reconciling"]


def test_fallback_delivery_reflects_what_happened_after_the_checkpoint(home):
    """PreCompact commits with B pending; the compact SessionStart is lost; B's turn completes;
    the next prompt's fallback context must show B handled, not pending."""
    hooks.run("claude", _payload("UserPromptSubmit", prompt_id="pB", prompt="request B"))
    hooks.run("claude", _payload("PreCompact", trigger="auto"))
    hooks.run("claude", _payload("Stop", prompt_id="pB", last_assistant_message="did B"))
    out, _ = hooks.run("claude", _payload("UserPromptSubmit", prompt_id="pC", prompt="request C"))
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    [line] = [l for l in ctx.splitlines() if l.startswith('- input="pB"')]
    assert "state=handled" in line


def test_context_command_changes_nothing(home):
    hooks.run("codex", _payload("UserPromptSubmit", turn_id="t1", prompt="write the docs"))
    with Engine(home) as e:
        before = len(e.find_thread("codex", "s1").events())
    r = run_cli(home, "context")
    assert r.returncode == 0 and b"write the docs" in r.stdout
    with Engine(home) as e:
        t = e.find_thread("codex", "s1")
        assert len(t.events()) == before and checkpoints.list_checkpoints(t) == []


def test_corrupt_newest_capsule_is_rebuilt_from_the_log_not_replaced_by_a_stale_one(home):
    """Found in review: the fallback to generation N-1 offered a handled input as pending."""
    hooks.run("claude", _payload("UserPromptSubmit", prompt_id="p1", prompt="deploy to prod"))
    hooks.run("claude", _payload("PreCompact", trigger="auto"))  # gen 1: p1 pending
    hooks.run("claude", _payload("SessionStart", source="compact"))
    hooks.run("claude", _payload("Stop", prompt_id="p1", last_assistant_message="deployed"))
    hooks.run("claude", _payload("PreCompact", trigger="auto"))  # gen 2: p1 handled
    with Engine(home) as e:
        t = e.find_thread("claude", "s1")
        newest = checkpoints.list_checkpoints(t)[-1]
        e.store.conn.execute("UPDATE checkpoints SET capsule=X'00' WHERE checkpoint_id=?",
                             (newest.checkpoint_id,))
    out, _ = hooks.run("claude", _payload("SessionStart", source="compact"))
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "corrupt" in ctx
    [line] = [l for l in ctx.splitlines() if l.startswith('- input="p1"')]
    assert "state=handled" in line


def test_cli_lists_inputs_holding_lone_surrogates(home):
    hooks.run("codex", _payload("UserPromptSubmit", turn_id="t1", prompt="fix emoji \ud83d here"))
    for args in (("status",), ("inputs",), ("status", "--json"), ("inputs", "--json"),
                 ("events", "--json")):
        r = run_cli(home, *args)
        assert r.returncode == 0, (args, r.stderr)
    rows = json.loads(run_cli(home, "inputs", "--json").stdout)["inputs"]
    assert rows[0]["text"] == "fix emoji \ud83d here"


def test_large_folder_outside_git_is_not_snapshotted_at_a_boundary(home, tmp_path, monkeypatch):
    folder = tmp_path / "not-a-repo"
    folder.mkdir()
    for n in range(12):
        (folder / f"f{n}.txt").write_text("x")
    monkeypatch.setenv("CONTINUATION_WORKSPACE_MAX_FILES", "10")
    with Engine(home) as e:
        t = e.thread("claude", "big", workspace_root=str(folder))
        t.admit("work", turn_id="p1")
        cp = boundary.commit_checkpoint(t, reason="auto")
    assert cp.workspace["kind"] == "none" and "more than 10 files" in cp.workspace["skipped"]
    assert not (home / "workspaces").exists() or not any((home / "workspaces").rglob("shadow.git"))
    monkeypatch.setenv("CONTINUATION_WORKSPACE_MAX_FILES", "100")
    with Engine(home) as e:
        cp = boundary.commit_checkpoint(e.find_thread("claude", "big"), reason="auto")
    assert cp.workspace["kind"] == "shadow"


def _commit_in_a_new_process(script: str, home) -> dict:
    """What ``script`` (a first checkpoint in a fresh interpreter) prints, as JSON."""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                       env={**os.environ, "CONTINUATION_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _without_counts(capsule) -> dict:
    data = capsule.model_dump(mode="json")
    for key in ("encoding", "tokens", "bytes"):
        data["budget"].pop(key)
    data.pop("created_at")
    return data


def test_a_capsule_that_fits_by_its_byte_bound_loads_no_tokenizer(home):
    """A small thread's capsule is proven to fit by its UTF-8 size (tokens <= bytes): built
    without loading tiktoken, recorded as such, and identical to the exactly counted one."""
    script = r"""
import json, sys
from continuation.boundary import checkpoints
from continuation.session.engine import Engine
with Engine() as e:
    t = e.thread("codex", "s1")
    t.admit("rename the module and rerun its tests", turn_id="t1")
    t.tool_started("c1", "Bash", {"command": "pytest -q"}, turn_id="t1")
    cp = checkpoints.commit(t, reason="manual")
print(json.dumps({"tiktoken": "tiktoken" in sys.modules, "generation": cp.generation}))
"""
    assert _commit_in_a_new_process(script, home) == {"tiktoken": False, "generation": 1}
    from capsule.budget import Budget, build_capsule
    from capsule.tokens import BYTE_BOUND_NAME, get_token_counter
    from continuation.boundary.capsule_source import gather

    with Engine(home) as e:
        t = e.find_thread("codex", "s1")
        loaded = checkpoints.load(t)
        stored = loaded.capsule
        exact = build_capsule(gather(t, generation=1, reason="manual",
                                     upto_seq=loaded.checkpoint.seq),
                              Budget(), counter=get_token_counter())
    assert stored.budget.encoding == BYTE_BOUND_NAME and not stored.cuts
    assert exact.budget.tokens <= stored.budget.tokens <= stored.budget.max_tokens
    assert _without_counts(stored) == _without_counts(exact)


def test_a_long_thread_is_counted_exactly_without_tiktokens_bpe_table(home, monkeypatch):
    """A long thread whose capsule needs cuts: counted exactly (the budget records the
    encoding, not a bound) by the vocabulary counter, which builds no tiktoken encoder
    (``CoreBPE``, ~35 ms a process); the capsule is the one tiktoken's own counts give, token
    numbers included."""
    script = r"""
import json, sys
from capsule import tokens
from continuation.boundary import capsule_source, checkpoints
from continuation.session.engine import Engine
capsule_source.MAX_FACTS = 10
with Engine() as e:
    t = e.thread("codex", "s1")
    for n in range(40):
        t.admit(f"request {n}: tidy module {n} and rerun its tests " * 6, turn_id=f"t{n}")
        t.tool_started(f"c{n}", "Bash", {"command": f"pytest tests/test_mod{n}.py"}, turn_id=f"t{n}")
        t.tool_finished(f"c{n}", "ok", output="x", turn_id=f"t{n}")
        t.turn_completed(f"t{n}")
    cp = checkpoints.commit(t, reason="manual")
counter = tokens.get_token_counter()
print(json.dumps({"counter": type(counter).__name__, "encoder_built": counter._encoding is not None,
                  "generation": cp.generation}))
"""
    assert _commit_in_a_new_process(script, home) == {
        "counter": "VocabularyCounter", "encoder_built": False, "generation": 1}
    from capsule.budget import Budget, build_capsule
    from capsule.render import render_capsule
    from capsule.tokens import OFFLINE_NAME, get_token_counter, token_counter_for
    from continuation.boundary import capsule_source

    monkeypatch.setattr(capsule_source, "MAX_FACTS", 10)  # as in the boundary's process
    reference = token_counter_for(OFFLINE_NAME)  # tiktoken's own encoder
    with Engine(home) as e:
        t = e.find_thread("codex", "s1")
        loaded = checkpoints.load(t)
        source = capsule_source.gather(t, generation=1, reason="manual",
                                       upto_seq=loaded.checkpoint.seq)
    stored = loaded.capsule
    assert stored.budget.encoding == OFFLINE_NAME
    assert stored.budget.tokens == reference.count(render_capsule(stored)) <= 4000
    assert any(not c.field.endswith("(not gathered)") for c in stored.cuts)  # a real budget cut
    dumps = []
    for counter in (get_token_counter(), reference):
        data = build_capsule(source, Budget(), counter=counter).model_dump(mode="json")
        data.pop("created_at")
        dumps.append(data)
    assert dumps[0] == dumps[1] and dumps[0]["cuts"]


def test_a_capsule_that_needs_cuts_is_counted_with_the_tokenizer(engine, monkeypatch):
    """When the byte bound cannot prove the fit (a cut is needed), the capsule is built again
    with exact counts: cuts carry real token numbers and the encoding is the tokenizer's, whose
    parsed ranks are then cached under the state home."""
    from capsule import tokens
    from capsule.budget import Budget
    from capsule.render import render_capsule
    from capsule.tokens import BYTE_BOUND_NAME, get_token_counter

    monkeypatch.setattr(tokens, "_default", None)  # this process loads the tokenizer anew
    t = engine.thread("codex", "s1")
    for n in range(40):
        t.admit(f"request {n}: " + "refactor the parser and keep the error messages " * 12,
                turn_id=f"t{n}")
        t.turn_completed(f"t{n}")
    capsule = checkpoints.build(t, generation=1, reason="manual")
    assert capsule.cuts
    assert capsule.budget.encoding == get_token_counter().name != BYTE_BOUND_NAME
    assert capsule.budget.tokens <= Budget().max_tokens
    assert capsule.budget.tokens == get_token_counter().count(render_capsule(capsule))
    assert (engine.home / "cache").is_dir() and any((engine.home / "cache").iterdir())


def test_a_boundary_reads_only_the_newest_historical_inputs_and_counts_the_rest(engine, monkeypatch):
    """A long thread's boundary decodes its open inputs and only the newest historical ones
    (it read all 20,000); the older ones are counted in a '(not gathered)' cut and the
    capsule's counts per state still cover every input."""
    from continuation.boundary import capsule_source
    from statemachine.records import InputRecord

    monkeypatch.setattr(capsule_source, "MAX_HISTORICAL_INPUTS", 5)
    t = engine.thread("codex", "s1")
    t.admit("an early request still open", turn_id="t0")
    for n in range(1, 13):
        t.admit(f"request {n}", turn_id=f"t{n}")
        t.turn_completed(f"t{n}")
    t.admit("the newest request", turn_id="t99")
    decoded = []
    original = InputRecord.from_row.__func__
    monkeypatch.setattr(InputRecord, "from_row",
                        classmethod(lambda cls, d: decoded.append(d["text"]) or original(cls, d)))
    source = capsule_source.gather(t, generation=1, reason="manual")
    assert sorted(decoded) == sorted(["an early request still open", "the newest request",
                                      *(f"request {n}" for n in range(8, 13))])
    assert [i.text for i in source.inputs][:2] == ["an early request still open", "request 8"]
    [unread] = [n for n in source.not_gathered if n.field.startswith("inputs[")]
    assert unread.items == 7 and unread.pointer.endswith(":2") and unread.last_pointer.endswith(":14")
    from capsule.budget import Budget, build_capsule

    capsule = build_capsule(source, Budget())
    assert capsule.input_counts == {"pending": 2, "handled": 12}
    assert any(c.field == unread.field and c.items == 7 for c in capsule.cuts)


def test_claims_after_a_rewind_are_the_newest_on_the_branch_and_the_older_are_counted(engine):
    """Claims are read newest first on the current branch only; older branch claims are
    counted (not read), and claims a rewind discarded are neither shown nor counted."""
    from continuation.boundary import capsule_source

    t = engine.thread("codex", "s1")
    t.admit("start", turn_id="t0")
    for n in range(25):
        t.record("assistant_claim", {"text": f"kept claim {n}", "turn_id": "t0"})
    mark = t.row["last_seq"]
    for n in range(5):
        t.record("assistant_claim", {"text": f"discarded claim {n}", "turn_id": "t0"})
    t.record("rolled_back", {"to_seq": mark, "reason": "test"})
    t.record("assistant_claim", {"text": "after the rewind", "turn_id": "t0"})
    source = capsule_source.gather(t, generation=1, reason="manual")
    texts = [c.text for c in source.claims]
    assert len(texts) == capsule_source.MAX_CLAIMS and texts[-1] == "after the rewind"
    assert texts[0] == "kept claim 6" and not any("discarded" in x for x in texts)
    [older] = [n for n in source.not_gathered if n.field.startswith("assistant_claims")]
    assert older.items == 6 and older.original_bytes == sum(len(f"kept claim {n}") for n in range(6))


def _record_gathers(monkeypatch, order: list[str]) -> None:
    """Append "gather" to ``order`` when a boundary starts gathering its capsule's input."""
    inside = []

    def gathering(real):
        def gather(*args, **kwargs):
            if not inside:  # gather_plain gathers through gather: one start
                order.append("gather")
            inside.append(1)
            try:
                return real(*args, **kwargs)
            finally:
                inside.pop()
        return gather

    for name in ("gather", "gather_plain"):
        monkeypatch.setattr(capsule_source, name, gathering(getattr(capsule_source, name)))


def test_a_boundary_gathers_once_its_snapshots_scan_is_running(engine, tmp_path, monkeypatch):
    """The snapshot's thread reaches git's scan (its imports, lock and seed are
    Python, run one thread at a time) before the boundary's thread starts gathering, which then
    runs while git scans. A slow seed here makes the other order show."""
    import time

    from continuation.workspace import treebuild

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "c"], cwd=repo, check=True)
    (repo / "a.txt").write_text("two\n")
    order: list[str] = []
    seed = treebuild.seed_index

    def slow_seed(*args):
        time.sleep(0.3)
        return seed(*args)

    monkeypatch.setattr(treebuild, "seed_index", slow_seed)
    monkeypatch.setattr(treebuild, "_stage_hook", order.append)
    _record_gathers(monkeypatch, order)
    t = engine.thread("claude", "scan-first", workspace_root=str(repo))
    t.admit("edit a.txt", turn_id="p1")
    cp = boundary.commit_checkpoint(t, reason="auto")
    assert cp.workspace and cp.workspace.get("snapshot_commit")
    assert "seeded" in order and "gather" in order
    assert order.index("seeded") < order.index("gather"), order


def test_a_boundary_under_the_metadata_policy_gathers_without_waiting(engine, tmp_path,
                                                                      monkeypatch):
    """No git scan to let start first (a manifest of the files): the boundary gathers while
    the manifest is written, as before the scan-first order."""
    import time

    from continuation.workspace import manifest

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    monkeypatch.setenv("CONTINUATION_WORKSPACE_POLICY", "metadata")
    order: list[str] = []
    real = manifest.metadata_checkpoint

    def slow_manifest(*args, **kwargs):
        time.sleep(0.3)
        ref = real(*args, **kwargs)
        order.append("manifest")
        return ref

    monkeypatch.setattr(manifest, "metadata_checkpoint", slow_manifest)
    _record_gathers(monkeypatch, order)
    t = engine.thread("claude", "manifest", workspace_root=str(folder))
    t.admit("note it", turn_id="p1")
    cp = boundary.commit_checkpoint(t, reason="auto")
    assert cp.workspace and cp.workspace.get("kind") == "metadata", cp.workspace
    assert order == ["gather", "manifest"], order


def test_a_boundary_loads_the_tokenizer_while_git_works_only_when_it_will_count(home):
    """A thread whose newest capsule was counted exactly (it needed cuts) loads the
    tokenizer while the boundary's snapshot runs, and the build uses that one load; a thread
    whose capsule fit by its byte bound loads no tokenizer at all."""
    script = r"""
import json, sys, threading
from capsule import tokens
from continuation.boundary import checkpoints
from continuation.boundary import crossing as boundary
from continuation.session.engine import Engine

loads = []
for name in ("_vocabulary",):  # what the process-wide counter loads
    real = getattr(tokens, name)
    def spy(real=real, name=name):
        loads.append(threading.current_thread().name)
        return real()
    setattr(tokens, name, spy)

out = {}
with Engine() as e:
    small = e.thread("codex", "small")
    small.admit("rename the module", turn_id="t1")
    checkpoints.commit(small, reason="manual")
    out["small_prefetch"] = checkpoints.prefetch_tokenizer(small)
    boundary.commit_checkpoint(small, reason="manual")
    out["small_loads"] = list(loads)
    out["tiktoken"] = "tiktoken" in sys.modules
    big = e.thread("codex", "big")
    for n in range(40):
        big.admit(f"request {n}: " + "refactor the parser and keep its messages " * 12, turn_id=f"t{n}")
        big.turn_completed(f"t{n}")
    first = checkpoints.build(big, generation=1, reason="manual")
    checkpoints.commit(big, reason="manual")
    tokens._default = None  # as in a new process: nothing loaded yet
    tokens._preloading = None
    loads.clear()
    cp = boundary.commit_checkpoint(big, reason="manual")
    out["big_loads"] = list(loads)
    out["big_encoding"] = checkpoints.load(big).capsule.budget.encoding
    out["big_cuts"] = bool(first.cuts)
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                       env={**os.environ, "CONTINUATION_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    from capsule.tokens import BYTE_BOUND_NAME

    assert out["small_prefetch"] is False and out["small_loads"] == [] and out["tiktoken"] is False
    assert out["big_cuts"] and out["big_encoding"] != BYTE_BOUND_NAME
    # one load of the encoding's vocabulary, in the boundary's own thread while git snapshots in a worker (a background load would hold the
    # interpreter lock against the worker's process starts)
    assert out["big_loads"] and set(out["big_loads"]) == {"MainThread"}


def test_a_not_gathered_cut_is_counted_by_the_database_and_hashes_its_selection(engine,
                                                                                  monkeypatch):
    """Each "(not gathered)" cut (older calls, facts, claims, inputs) counts every unread item
    and its stored bytes with one aggregate statement (no row is read into Python), and
    its ``pointers_sha256`` is the sha256 of ``<field> <first pointer>..<last pointer> <items>``."""
    import hashlib

    from continuation.boundary import capsule_source

    for name, n in (("MAX_FINISHED_CALLS", 3), ("MAX_FACTS", 4), ("MAX_CLAIMS", 2),
                    ("MAX_HISTORICAL_INPUTS", 2)):
        monkeypatch.setattr(capsule_source, name, n)
    t = engine.thread("codex", "s1")
    for k in range(6):
        t.admit(f"request {k}", turn_id=f"t{k}")
        t.tool_started(f"c{k}", "Bash", {"command": f"echo {k}"}, turn_id=f"t{k}")
        t.tool_finished(f"c{k}", "ok", output="x", turn_id=f"t{k}")
        t.claim(f"claim {k} " * (k + 1), turn_id=f"t{k}")
        t.turn_completed(f"t{k}")
    source = capsule_source.gather(t, generation=1, reason="manual")
    cuts = {n.field: n for n in source.not_gathered}
    conn = t.store.conn
    kept_calls = {c.call_id for c in source.tool_calls}
    calls = [(q, n) for c, q, n in conn.execute(
        "SELECT call_id, started_seq, length(data) FROM tool_calls WHERE thread_key=?"
        " ORDER BY started_seq", (t.key,)) if c not in kept_calls]
    kept_claims = min(c.seq for c in source.claims)
    claims = [r for r in conn.execute("SELECT seq, length(CAST(text AS BLOB)) FROM claims"
                                      " WHERE thread_key=? ORDER BY seq", (t.key,))
              if r[0] < kept_claims]
    kept_facts = min(f.seq for f in source.facts)
    marks = ",".join("?" * len(capsule_source.FACT_TYPES))
    facts = conn.execute(f"SELECT seq, length(data) FROM events WHERE thread_key=? AND type IN"
                         f" ({marks}) AND seq<? ORDER BY seq",
                         (t.key, *capsule_source.FACT_TYPES, kept_facts)).fetchall()
    expected = {"tool_calls[ok,error](not gathered)": calls,
                "assistant_claims(not gathered)": claims, "runtime_facts(not gathered)": facts}
    assert set(expected) <= set(cuts)
    for field, rows in expected.items():
        cut = cuts[field]
        first, last = f"event:{t.key}:{rows[0][0]}", f"event:{t.key}:{rows[-1][0]}"
        assert (cut.items, cut.original_bytes) == (len(rows), sum(n for _, n in rows)), field
        assert (cut.pointer, cut.last_pointer) == (first, last)
        line = f"{field} {first}..{last} {len(rows)}"
        assert cut.pointers_sha256 == hashlib.sha256(line.encode()).hexdigest()
    assert cuts["inputs[handled,rolled_back,superseded](not gathered)"].items == 4


@pytest.mark.parametrize("seed", range(6))
def test_not_gathered_inputs_and_calls_are_every_unread_row_whatever_their_states(engine,
                                                                                  monkeypatch,
                                                                                  seed):
    """The cuts of the older inputs and finished calls are counted as all rows minus the read
    ones, their first and last seq found from the index's ends (no test of each row
    against the read ids). Whatever mix of states (handled, superseded, rolled back, open;
    ok, error, reconciled, in flight, unknown), and for an "as of" build too, they count
    exactly the rows a boundary did not read, read here one by one."""
    import random

    from statemachine import events as ev

    from continuation.boundary import capsule_source

    rng = random.Random(seed)
    for name, n in (("MAX_FINISHED_CALLS", rng.randint(1, 5)),
                    ("MAX_HISTORICAL_INPUTS", rng.randint(1, 6))):
        monkeypatch.setattr(capsule_source, name, n)
    t = engine.thread("codex", f"mix{seed}")
    for k in range(rng.randint(8, 30)):
        turn = f"t{k}"
        t.admit(f"request {k} " * rng.randint(1, 9), turn_id=turn)
        for j in range(rng.randint(0, 3)):
            call = f"c{k}.{j}"
            t.tool_started(call, "Bash", {"command": "x" * rng.randint(1, 50)}, turn_id=turn)
            ending = rng.choice(["ok", "error", "open", "unknown"])
            if ending in ("ok", "error"):
                t.tool_finished(call, ending, output="y" * rng.randint(0, 40), turn_id=turn)
            elif ending == "unknown":
                t.crash_detected("test")
                if rng.random() < 0.5:
                    t.reconcile(call, rng.choice(["applied", "not_applied"]))
        roll = rng.random()
        if roll < 0.15:
            t.record(ev.INPUT_SUPERSEDED, {"input_id": t.inputs()[-1].input_id, "reason": "test"})
        elif roll < 0.85:
            t.turn_completed(turn)
        if rng.random() < 0.1:
            t.record(ev.ROLLED_BACK, {"to_seq": rng.randint(1, int(t.row["last_seq"]))})
    upto = rng.choice([None, int(t.row["last_seq"]) * 2 // 3])
    source = capsule_source.gather_plain(t, generation=1, reason="manual", upto_seq=upto)
    cuts = {c["field"]: c for c in source["not_gathered"]}
    conn = t.store.conn

    def expect(field, rows):  # rows: (seq, bytes) of every unread row, by seq
        if not rows:
            assert field not in cuts
            return
        first, last = rows[0][0], rows[-1][0]
        assert cuts[field] == dict(
            field=field, items=len(rows), original_bytes=sum(n for _, n in rows),
            pointers_sha256=capsule_source.cut_pointers_sha256(field, t.key, len(rows), first,
                                                               last),
            pointer=f"event:{t.key}:{first}",
            last_pointer=f"event:{t.key}:{last}" if len(rows) > 1 else None)

    read_calls = {c["call_id"] for c in source["tool_calls"]}
    # a call reconciled as not applied is read and left out on purpose: its work is still to do
    # (the decision notice names it), so it is no finished call the capsule could list
    to_do = set(source["calls_to_do"])
    expect("tool_calls[ok,error](not gathered)", sorted(
        (q, len(d)) for c, q, d, s in conn.execute(
            "SELECT call_id, started_seq, data, status FROM tool_calls WHERE thread_key=?",
            (t.key,))
        if s in capsule_source.FINISHED and c not in read_calls | to_do and (upto is None or q <= upto)))
    historical = sorted((q, len(d)) for q, d, s in conn.execute(
        "SELECT admitted_seq, data, state FROM inputs WHERE thread_key=?", (t.key,))
        if s in ("handled", "rolled_back", "superseded"))
    newest = capsule_source.MAX_HISTORICAL_INPUTS
    expect("inputs[handled,rolled_back,superseded](not gathered)",
           historical[:-newest] if len(historical) >= newest else [])
    counts = {}
    for (state,) in conn.execute("SELECT state FROM inputs WHERE thread_key=?", (t.key,)):
        counts[state] = counts.get(state, 0) + 1
    expected_counts = dict(sorted(counts.items())) if len(historical) > newest else None
    assert source["input_counts"] == expected_counts


def test_a_compactions_checkpoint_and_its_boundary_are_one_transaction(engine, monkeypatch):
    """The boundary fact is appended in the checkpoint's own transaction (one durable commit on
    the hook's path, ~1 ms less), so no crash or failure between the two can leave a
    checkpoint without the boundary it was taken for."""
    t = engine.thread("codex", "s1")
    t.admit("build the thing", turn_id="t1")
    store = t.store
    opened = []
    real = store.transaction
    monkeypatch.setattr(store, "transaction", lambda *a, **k: opened.append(1) or real(*a, **k))
    cp = boundary.before_compaction(t, trigger="auto", source_tag="test")
    events = t.events(after=cp.seq)
    assert [e["type"] for e in events] == ["checkpoint_committed", "boundary"]
    assert events[1]["data"] == {"kind": "compact", "trigger": "auto",
                                 "generation": cp.generation, "checkpoint_id": cp.checkpoint_id}
    assert len(opened) == 1 and t.row["needs_context"]

    real_append = store._append_in

    def failing(c, key, etype, *rest):
        if etype == "boundary":
            raise RuntimeError("the boundary's append failed")
        return real_append(c, key, etype, *rest)

    monkeypatch.setattr(store, "_append_in", failing)
    with pytest.raises(RuntimeError):
        boundary.before_compaction(t, trigger="auto", source_tag="test")
    assert [row["generation"] for row in store.checkpoint_rows(t.key)] == [cp.generation]
    assert t.events()[-1]["type"] == "boundary" and t.row["generation"] == cp.generation


def test_a_threads_first_capsule_is_counted_exactly_once_the_thread_is_long(engine):
    """The byte bound (a token per byte) holds only the smallest capsules: a thread with no
    capsule yet goes straight to exact counts from ``EXACT_FROM_EVENTS`` events on (its first
    compaction would otherwise try the bound in vain and load the tokenizer mid-build); after
    that, its newest capsule says."""
    from capsule.tokens import is_bound

    short, long_ = engine.thread("claude", "short"), engine.thread("claude", "long")
    for k in range(3):
        short.admit(f"request {k}", turn_id=f"t{k}")
    for k in range(checkpoints.EXACT_FROM_EVENTS):
        long_.admit(f"request {k}: tidy module {k} and rerun its tests", turn_id=f"t{k}")
    assert checkpoints.counts_exactly(short) is False
    assert checkpoints.counts_exactly(long_) is True
    for thread in (short, long_):
        cp = boundary.commit_checkpoint(thread, reason="manual", snapshot=False)
        encoding = checkpoints.load(thread, cp.generation).capsule.budget.encoding
        # the prediction held: the short one fit the bound, the long one needed exact counts
        assert is_bound(encoding) is (thread is short)
        assert checkpoints.counts_exactly(thread) is (thread is long_)
