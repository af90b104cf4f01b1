"""The Claude transcript import agrees with the hooks on real session shapes.

Every case is a small synthetic session (``claude_script``) in the formats real Claude Code
writes (2.1.39's content-less ``remove``, 2.1.332's placeholder results and synthetic replies,
task notifications). Where the hooks can see the session, the same steps are replayed through
the hooks and the states compared with an import-only thread.
"""
from __future__ import annotations

import json

import pytest

from claude_script import PLACEHOLDER, ClaudeScript
from continuation import hooks
from continuation.boundary.capsule_source import gather
from continuation.session.engine import Engine
from continuation.hooks.outcomes import find_outcomes
from import_helpers import run_import

NOTIFICATION = ("<task-notification>\n<task-id>b1234abcd</task-id>\n<status>completed</status>\n"
                "<summary>Background command \"npm run build\" completed (exit code 0)</summary>\n"
                "</task-notification>")


def _inputs(home, sid) -> dict[str, tuple[str, bool]]:
    """text -> (state, queued flag) of every input of the thread."""
    with Engine(home) as e:
        t = e.find_thread("claude", sid)
        return {r.text: (r.state, r.queued) for r in t.inputs()} if t else {}


def _calls(home, sid) -> dict[str, str]:
    with Engine(home) as e:
        return {c.call_id: c.status for c in e.find_thread("claude", sid).tool_calls()}


def _replay(script: ClaudeScript) -> None:
    for payload in script.payloads:
        out, code = hooks.run("claude", json.dumps(payload).encode())
        assert code == 0 and json.loads(out) is not None


# -- 1. queue-operation remove without content ------------------------------------------------
def test_contentless_remove_delivers_the_users_entry_not_the_notification_ahead(home, tmp_path):
    s = ClaudeScript("q1", tmp_path / "q1.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "ship the epic").tool("t1", "git push")
    s.enqueue(NOTIFICATION).enqueue("also bump the version").remove()
    s.tool("t2", "npm version patch").reply("pushed and bumped")
    report = run_import(home, "claude", s.write(), session_over=True)
    assert _inputs(home, "q1") == {"ship the epic": ("handled", False),
                                   "also bump the version": ("handled", True)}
    assert report.inputs_admitted == 2


def test_contentless_remove_follows_the_evidence_over_the_queue_order(home, tmp_path):
    """The model received the second queued text (Claude Code's "the user sent" envelope):
    that one was removed, the first still waits."""
    s = ClaudeScript("q2", tmp_path / "q2.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "refactor the parser").tool("t1", "pytest")
    s.enqueue("first extra").enqueue("second extra").remove()
    s.meta("<system-reminder>\nThe user sent the following message:\nsecond extra\n\n"
           "Please address this message and continue with your tasks.\n</system-reminder>")
    s.reply("refactored, and did the second extra")
    run_import(home, "claude", s.write(), session_over=True)
    assert _inputs(home, "q2") == {"refactor the parser": ("handled", False),
                                   "second extra": ("handled", True),
                                   "first extra": ("queued", True)}


def test_entry_removed_then_interrupted_is_a_draft_until_sent(home, tmp_path):
    """Esc puts queued input back into the prompt box: sent later it is one ordinary input,
    never sent it is no input at all."""
    s = ClaudeScript("q3", tmp_path / "q3.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "long task").tool("t1", "make")
    s.enqueue("and the docs").enqueue("and the changelog").remove().interrupt()
    s.prompt("p2", "and the docs", typed_while_busy=True).reply("docs done")
    run_import(home, "claude", s.write(), session_over=True)
    got = _inputs(home, "q3")
    assert got["and the docs"][0] == "handled" and "and the changelog" in got
    assert list(got).count("and the docs") == 1


def test_text_sent_again_after_an_order_fold_is_not_a_second_input(home, tmp_path):
    s = ClaudeScript("q4", tmp_path / "q4.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "index the docs").tool("t1", "make index").enqueue("and the api").remove()
    s.reply("indexed")
    s.rec({"type": "user", "promptId": "p2", "message": {"role": "user", "content": "and the api"}})
    s.reply("api indexed too")
    report = run_import(home, "claude", s.write(), session_over=True)
    assert _inputs(home, "q4") == {"index the docs": ("handled", False),
                                   "and the api": ("handled", True)}
    assert report.inputs_admitted == 2
    with Engine(home) as e:  # named by the prompt's runtime id, as the hooks name it
        assert {r.input_id for r in e.find_thread("claude", "q4").inputs()} == {"p1", "p2"}


# -- 2. a grown file re-imported admits nothing twice -----------------------------------------
def test_grown_file_reimport_admits_the_queued_prompt_once(home, tmp_path):
    s = ClaudeScript("g1", tmp_path / "g1.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "run the tests").tool("t1", "pytest").enqueue("then fix the lint")
    cut = len(s.records)
    s.reply("tests pass").prompt("p2", "then fix the lint", typed_while_busy=True)
    s.tool("t2", "ruff --fix").reply("lint fixed")
    first = run_import(home, "claude", s.write(upto=cut), session_over=False)
    assert _inputs(home, "g1") == {"run the tests": ("pending", False),
                                   "then fix the lint": ("queued", True)}
    second = run_import(home, "claude", s.write(), session_over=True)
    assert (first.inputs_admitted, second.inputs_admitted) == (2, 0)
    assert _inputs(home, "g1") == {"run the tests": ("handled", False),
                                   "then fix the lint": ("handled", True)}
    third = run_import(home, "claude", s.write(), session_over=True)
    assert third.inputs_admitted == 0 and sum(third.events_written.values()) == 0


def test_queued_leftover_sent_while_hooks_record_is_one_input(home, tmp_path):
    """Import of the shorter file, then the live session's hooks see the prompt sent, then the
    whole file is imported: still one input, decided by its turn."""
    s = ClaudeScript("g2", tmp_path / "g2.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "run the tests").tool("t1", "pytest").enqueue("then fix the lint")
    cut, hooked = len(s.records), len(s.payloads)
    s.reply("tests pass").prompt("p2", "then fix the lint", typed_while_busy=True)
    s.tool("t2", "ruff --fix").reply("lint fixed")
    run_import(home, "claude", s.write(upto=cut), session_over=False)
    for p in s.payloads[hooked:]:
        out, code = hooks.run("claude", json.dumps(p).encode())
        assert code == 0
    assert _inputs(home, "g2") == {"run the tests": ("handled", False),
                                   "then fix the lint": ("handled", True)}
    again = run_import(home, "claude", s.write(), session_over=True)
    assert again.inputs_admitted == 0
    assert _inputs(home, "g2") == {"run the tests": ("handled", False),
                                   "then fix the lint": ("handled", True)}


def test_file_ending_after_a_contentless_remove_decides_it_when_it_grows(home, tmp_path):
    """The file ends right after the removal: not decided yet (still queued); the grown file
    shows the text sent as a prompt of its own: one input."""
    s = ClaudeScript("g3", tmp_path / "g3.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "build it").tool("t1", "make").enqueue("and ship it")
    s.rec({"type": "queue-operation", "operation": "dequeue"})
    cut = len(s.records)
    s.reply("built")
    s.rec({"type": "user", "promptId": "p2", "message": {"role": "user", "content": "and ship it"}})
    s.reply("shipped")
    run_import(home, "claude", s.write(upto=cut), session_over=False)
    assert _inputs(home, "g3")["and ship it"] == ("queued", True)
    second = run_import(home, "claude", s.write(), session_over=True)
    assert second.inputs_admitted == 0
    assert _inputs(home, "g3") == {"build it": ("handled", False), "and ship it": ("handled", True)}


# -- 3-6. hooks-then-import and import-only end in the same states -----------------------------
def _interrupt_then_next(s):
    s.prompt("p1", "migrate the db").tool("t1", "./migrate.sh").interrupt()
    s.prompt("p2", "now the seeds").reply("seeded")


def _killed_mid_reply_then_next(s):
    s.prompt("p1", "write the report").reply("Let me start.", end=False)
    s.prompt("p2", "shorter please").reply("done")


def _crash_resume_during_deploy(s):
    s.prompt("p1", "deploy to prod").tool("t1", "./deploy.sh prod", result=None)
    s.resume().prompt("p2", "check the status").tool("t2", "curl -s status").reply("all green")


def _crash_resume_real_order(s):
    """The order Claude Code 2.1.332 writes on ``--resume`` after a kill (seen in the e2e test):
    the new prompt's enqueue/dequeue while the dead turn looks busy, then the placeholder result
    and "No response requested." under the new prompt's id, then the prompt itself."""
    s.prompt("p1", "deploy to prod").tool("t1", "./deploy.sh prod", result=None)
    s.hook("SessionStart", source="resume")
    s.enqueue("check the status").rec({"type": "queue-operation", "operation": "dequeue"})
    s.rec({"type": "user", "promptId": "p2", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": PLACEHOLDER, "is_error": True}]}})
    s.rec({"type": "assistant", "message": {"role": "assistant", "model": "<synthetic>",
                                            "stop_reason": "stop_sequence", "content": [
                                                {"type": "text", "text": "No response requested."}]}})
    s.open_calls = []
    s.prompt("p2", "check the status", typed_while_busy=True).reply("all green")


def _notification_after_interrupt(s):
    s.prompt("p1", "epic: payments").tool("t1", "git push").interrupt()
    s.task_notification("n1", "b77").reply("the build finished")
    s.task_notification("n2", "b78", with_origin=False).reply("the other build finished")


SESSIONS = {"interrupt_then_next": _interrupt_then_next,
            "killed_mid_reply_then_next": _killed_mid_reply_then_next,
            "crash_resume_during_deploy": _crash_resume_during_deploy,
            "crash_resume_real_order": _crash_resume_real_order,
            "notification_after_interrupt": _notification_after_interrupt}
EXPECTED = {
    "interrupt_then_next": {"migrate the db": ("handled", False), "now the seeds": ("handled", False)},
    "killed_mid_reply_then_next": {"write the report": ("handled", False),
                                   "shorter please": ("handled", False)},
    "crash_resume_during_deploy": {"deploy to prod": ("reconciling", False),
                                   "check the status": ("handled", False)},
    "crash_resume_real_order": {"deploy to prod": ("reconciling", False),
                                "check the status": ("handled", False)},
    "notification_after_interrupt": {"epic: payments": ("interrupted", False)},
}

#: Esc fires no hook and a notification turn no UserPromptSubmit: until the next prompt the
#: hooks still see p1's turn running; the import, with the interrupt marker, knows better
HOOKS_SEE_LESS = {"notification_after_interrupt": {"epic: payments": ("pending", False)}}


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_hooks_then_import_equals_import_only(tmp_path, monkeypatch, name):
    s = ClaudeScript(name, tmp_path / f"{name}.jsonl", cwd=str(tmp_path))
    SESSIONS[name](s)
    s.write()
    hooked_home, imported_home = tmp_path / "hooked", tmp_path / "imported"
    monkeypatch.setenv("CONTINUATION_HOME", str(hooked_home))
    _replay(s)
    by_hooks = _inputs(hooked_home, name)
    hook_calls = _calls(hooked_home, name)
    report = run_import(hooked_home, "claude", s.path, session_over=True)
    merged = _inputs(hooked_home, name)
    monkeypatch.setenv("CONTINUATION_HOME", str(imported_home))
    run_import(imported_home, "claude", s.path, session_over=True)
    alone = _inputs(imported_home, name)
    assert merged == alone == EXPECTED[name]
    if name in HOOKS_SEE_LESS:
        assert by_hooks == HOOKS_SEE_LESS[name]
    else:
        assert by_hooks == EXPECTED[name]
    assert report.inputs_admitted == 0  # nothing the hooks missed
    assert _calls(hooked_home, name) == hook_calls == _calls(imported_home, name)


def test_placeholder_result_is_no_outcome(home, tmp_path):
    s = ClaudeScript("ph", tmp_path / "ph.jsonl", cwd=str(tmp_path))
    _crash_resume_during_deploy(s)
    path = s.write()
    assert find_outcomes(str(path), ["t1", "t2"]) == {
        "t2": {"status": "ok", "exit_code": None, "output": "ok"}}
    report = run_import(home, "claude", path, session_over=True)
    assert _calls(home, "ph") == {"t1": "unknown", "t2": "ok"}
    assert report.placeholder_results == 1 and report.skipped_by_type["assistant:synthetic"] == 1
    assert PLACEHOLDER not in json.dumps(report.to_dict())


def test_import_never_downgrades_a_reconciling_input(home, tmp_path):
    """The hooks saw the deploy start and the process die: reconciling. Importing the resumed
    transcript (placeholder result, "No response requested.") must leave it there."""
    s = ClaudeScript("dg", tmp_path / "dg.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "deploy to prod").tool("t1", "./deploy.sh prod", result=None)
    hooked = list(s.payloads)
    s.resume()
    path = s.write()
    for p in hooked:
        hooks.run("claude", json.dumps(p).encode())
    with Engine(home) as e:
        e.find_thread("claude", "dg").crash_detected("process gone", source="test")
    assert _inputs(home, "dg") == {"deploy to prod": ("reconciling", False)}
    run_import(home, "claude", path, session_over=True)
    assert _inputs(home, "dg") == {"deploy to prod": ("reconciling", False)}
    assert _calls(home, "dg") == {"t1": "unknown"}


# -- 5. task notifications are runtime facts ---------------------------------------------------
def test_task_notifications_are_not_inputs(home, tmp_path):
    s = ClaudeScript("tn", tmp_path / "tn.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "start the build in the background").tool("t1", "npm run build &")
    s.reply("started")
    s.task_notification("n1", "b1").tool("t2", "cat build.log").reply("build ok")
    s.task_notification("n2", "b2", with_origin=False).reply("second build ok")
    # a prompt from another origin Claude Code knows as the user's (voice) stays an input
    s.prompt("p3", "and deploy it")
    s.records[-1]["origin"] = {"kind": "voice-call"}
    s.reply("deployed")
    report = run_import(home, "claude", s.write(), session_over=True)
    assert _inputs(home, "tn") == {"start the build in the background": ("handled", False),
                                   "and deploy it": ("handled", False)}
    assert report.system_prompts == 2 and report.inputs_seen == 2
    with Engine(home) as e:
        source = gather(e.find_thread("claude", "tn"), generation=1, reason="test")
    assert [i.text for i in source.inputs] == ["start the build in the background", "and deploy it"]


def test_hooks_do_not_admit_a_notification_sent_as_a_prompt(home, tmp_path):
    s = ClaudeScript("tnh", tmp_path / "tnh.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "start the build").reply("started")
    s.hook("UserPromptSubmit", prompt=NOTIFICATION, prompt_id="n1")
    _replay(s)
    assert _inputs(home, "tnh") == {"start the build": ("handled", False)}


def test_notification_folded_into_a_running_turn_ends_nothing(home, tmp_path):
    """A notification row inside the running prompt turn (same prompt id) while a call runs:
    the turn goes on and completes; its input is handled, the notice is not an input."""
    s = ClaudeScript("tf", tmp_path / "tf.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "watch the build").tool("t1", "sleep 60", result=None)
    s.rec({"type": "user", "promptId": "p1", "message": {"role": "user", "content": NOTIFICATION}})
    s.rec({"type": "user", "promptId": "p1", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "slept"}]}})
    s.reply("the build finished and I watched it")
    report = run_import(home, "claude", s.write(), session_over=True)
    assert _inputs(home, "tf") == {"watch the build": ("handled", False)}
    assert report.system_prompts == 1 and report.cut_turns == []


# -- 7. imported capsules carry the transcript pointer -----------------------------------------
def test_imported_capsule_carries_transcript_path_offset_and_hash(home, tmp_path):
    import hashlib

    s = ClaudeScript("cp", tmp_path / "cp.jsonl", cwd=str(tmp_path))
    s.prompt("p1", "one").reply("done")
    path = s.write()
    run_import(home, "claude", path, session_over=True)
    with Engine(home) as e:
        p = gather(e.find_thread("claude", "cp"), generation=1, reason="import").pointers
    data = path.read_bytes()
    assert p.transcript_path == str(path.resolve())
    assert p.transcript_offset == len(data)
    assert p.transcript_prefix_sha256 == hashlib.sha256(data).hexdigest()


# -- 8. every dropped item is listed or counted in a cut ---------------------------------------
def test_every_finished_call_fact_and_claim_is_listed_or_cut(home):
    from continuation.boundary.checkpoints import build

    calls, turns = 186, 6
    with Engine(home) as e:
        t = e.thread("claude", "many", workspace_root=None)
        for k in range(turns):
            t.admit(f"task {k}", input_id=f"p{k}", turn_id=f"p{k}")
            for j in range(calls // turns):
                cid = f"c{k}-{j}"
                t.tool_started(cid, "Bash", {"command": f"echo {k} {j}"}, turn_id=f"p{k}")
                t.tool_finished(cid, "ok", output="x" * 40, turn_id=f"p{k}")
            t.claim(f"finished task {k} " * 3, turn_id=f"p{k}")
            t.turn_completed(f"p{k}")
        for k in range(25):
            t.claim(f"note {k}", turn_id=f"p{turns - 1}")
        facts = sum(1 for ev in t.events() if ev["type"] in (
            "turn_completed", "tool_finished", "boundary", "turn_aborted"))
        claims = len(t.claims())
        capsule = build(t, generation=1, reason="test")

    def counted(prefix):
        return sum(c.items for c in capsule.cuts if c.field.startswith(prefix))

    listed = len(capsule.tool_calls) + sum(w.count for w in capsule.work_done)
    assert listed + counted("tool_calls") + counted("work_done") == calls
    assert len(capsule.runtime_facts) + counted("runtime_facts") == facts
    assert len(capsule.assistant_claims) + counted("assistant_claims") == claims
    unread = [c for c in capsule.cuts if "not gathered" in c.field]
    assert {c.field for c in unread} >= {"tool_calls[ok,error](not gathered)",
                                         "runtime_facts(not gathered)"}
    assert next(c for c in unread if c.field.startswith("tool_calls")).items == calls - 100


def test_a_file_cut_mid_turn_after_a_contentless_remove_has_the_prompt_received(home, tmp_path):
    """A 2.1.39 file still being written, cut inside the turn an entry was
    folded into (``remove`` without content, then the turn went on): the model had received
    the entry, so it is pending in that turn, not left queued; the newest request is the
    objective, and the running turn's calls (a commit, a push) are work done for it."""
    s = ClaudeScript("q9", tmp_path / "q9.jsonl", cwd=str(tmp_path))
    s.prompt("p0", "fix the flaky test").tool("t0", "pytest -x tests/test_io.py").reply("fixed")
    s.prompt("p1", "commit the fix and push it").tool("t1", "git commit -am 'fix flaky io test'")
    s.enqueue("then open a pull request").remove()
    s.tool("t2", "git push origin HEAD")
    run_import(home, "claude", s.write())  # no session_over: the file may still grow
    got = _inputs(home, "q9")
    assert got["then open a pull request"][0] == "pending", got
    assert got["commit the fix and push it"][0] == "pending"
    with Engine(home) as e:
        t = e.find_thread("claude", "q9")
        source = gather(t, generation=1, reason="manual")
    from capsule import build_capsule
    from capsule.render import render_capsule

    capsule = build_capsule(source)
    assert capsule.objective.text == "then open a pull request"
    rendered = render_capsule(capsule)
    done = [w.call for w in capsule.work_done]
    assert "$ git commit -am 'fix flaky io test'" in done and "$ git push origin HEAD" in done
    assert "open=yes" in rendered
