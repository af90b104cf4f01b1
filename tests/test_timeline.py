"""The timeline page's data and commands, without a browser: what ``show --html`` and
``serve`` put on the page (tests/test_timeline_browser.py drives the page itself)."""
from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request

import pytest

from statemachine import events as ev
from statemachine.reducer import ThreadState, apply

from continuation.commands.timeline import document, model
from continuation.commands.timeline.server import TimelineServer

from timeline_helpers import SECRET_LOOKING, cli, every_state_thread, inputs_json, long_turn_thread


# -- what a page holds ------------------------------------------------------------------------
def _all_windows(engine, key):
    thread = engine.get_thread(key)
    o = model.outline(engine, thread)
    return o, [model.window(thread, p["lo"], p["hi"]) for p in o["pages"]]


def test_every_input_is_on_exactly_one_page_with_the_state_inputs_json_gives(engine, home):
    made = every_state_thread(engine)
    _, windows = _all_windows(engine, made["thread"])
    shown = [(i["input_id"], i["state"]) for w in windows for i in w["inputs"]]
    assert len(shown) == len({k for k, _ in shown})
    assert dict(shown) == inputs_json(home, made["thread"])
    assert set(dict(shown).values()) == {"queued", "pending", "handled", "reconciling",
                                         "interrupted", "superseded", "rolled_back"}


def test_each_inputs_trail_is_its_transitions_on_the_current_branch(engine):
    made = every_state_thread(engine)
    _, windows = _all_windows(engine, made["thread"])
    trails = {i["input_id"]: [(s, st) for s, st, _ in i["trail"]["steps"]]
              for w in windows for i in w["inputs"]}
    seq = {e["type"] + ":" + str(e["data"].get("input_id") or e["data"].get("turn_id") or ""): e["seq"]
           for e in engine.get_thread(made["thread"]).events()}
    assert trails["in-handled"] == [(seq["input_admitted:in-handled"], "pending"),
                                    (seq["turn_completed:t1"], "handled")]
    assert trails["in-interrupted"] == [(seq["input_admitted:in-interrupted"], "pending"),
                                        (seq["turn_aborted:t2"], "interrupted")]
    assert trails["in-reconciling"][-1] == (seq["crash_detected:"], "reconciling")
    assert trails["in-superseded"][-1] == (seq["input_superseded:in-superseded"], "superseded")
    # rolled back after it was handled: the rewind is the last step
    assert [st for _, st in trails["in-rolled-back"]] == ["pending", "handled", "rolled_back"]
    assert trails["in-rolled-back"][-1][0] == seq["rolled_back:"]
    assert trails["in-queued"] == [(seq["input_admitted:in-queued"], "queued")]
    assert not any(i["trail"]["partial"] for w in windows for i in w["inputs"])


def test_trails_equal_the_reducers_state_after_every_event(engine):
    """Without a rewind the current branch is the whole log: each trail is exactly the
    states the pure reducer gives the input, event by event."""
    t = engine.thread("codex", "no-rewind")
    t.admit("one", input_id="a", turn_id="t1")
    t.admit("two", input_id="b", turn_id="t1", queued=True)
    t.deliver("b", "t1")
    t.tool_started("c1", "Bash", {"command": "x"}, turn_id="t1")
    t.tool_finished("c1", "ok", turn_id="t1")
    t.turn_aborted("t1")
    t.deliver("a", "t2")
    t.tool_started("c2", "Bash", {"command": "y"}, turn_id="t2")
    t.turn_completed("t2")
    t.reconcile("c2", "applied")
    state, expected = ThreadState(), {}
    for e in t.events():
        apply(state, e)
        for rec in state.inputs.values():
            trail = expected.setdefault(rec.input_id, [])
            if not trail or trail[-1][1] != rec.state or rec.updated_seq != trail[-1][0]:
                trail.append((rec.updated_seq, rec.state))
    _, windows = _all_windows(engine, t.key)
    got = {i["input_id"]: [(s, st) for s, st, _ in i["trail"]["steps"]]
           for w in windows for i in w["inputs"]}
    assert got == expected
    assert len(got["a"]) >= 4  # pending, interrupted, pending again, ...


def test_a_thousand_call_turn_is_one_page_with_every_call(engine):
    key = long_turn_thread(engine)
    o, windows = _all_windows(engine, key)
    assert len(o["pages"]) == 1
    calls = windows[0]["calls"]
    assert len(calls) == 1000
    assert o["calls"] == {"ok": 987, "error": 10, "unknown": 3}
    assert [c["call_id"] for c in calls] == [f"call-{n:04d}" for n in range(1000)]


def test_pages_are_cut_at_turn_starts_and_bounded():
    turns = [(f"t{n}", "completed", 1 + 6 * n, 6 + 6 * n) for n in range(50)]
    starts = model.page_starts(turns, 300)
    assert starts == [1, 121, 241]
    # a long turn is never split; the next turn opens a page of its own
    long = [("a", "completed", 1, 5000), ("b", "completed", 5001, 5006)]
    assert model.page_starts(long, 5006) == [1, 5001]
    # a log without turns is cut every PAGE_EVENTS_MAX events
    assert model.page_starts([], 10_000) == [1, 4001, 8001]


def test_the_outline_counts_the_whole_log_in_buckets(engine):
    made = every_state_thread(engine)
    thread = engine.get_thread(made["thread"])
    o = model.outline(engine, thread)
    events = thread.events()
    counted = sum(n for _, n in o["strip"]["events"][ev.INPUT_ADMITTED])
    assert counted == sum(e["type"] == ev.INPUT_ADMITTED for e in events)
    calls = sum(n for pairs in o["strip"]["calls"].values() for _, n in pairs)
    assert calls == len(thread.store.tool_calls(thread.key))
    kinds = {m["type"] for m in o["marks"]}
    assert {ev.BOUNDARY, ev.CRASH_DETECTED, ev.ROLLED_BACK, ev.CHECKPOINT_COMMITTED} <= kinds
    assert [c["checkpoint_id"] for c in o["checkpoints"]][:2] == made["checkpoints"]
    fork = next(t for t in o["threads"] if t["thread_key"] == made["fork"])
    assert fork["forked_from"] == made["thread"] and fork["forked_at_seq"]


def test_the_rewind_preview_counts_what_the_rewind_command_would_do(engine, home):
    made = every_state_thread(engine)
    thread = engine.get_thread(made["thread"])
    for cp in made["checkpoints"]:
        detail = model.checkpoint_detail(engine, thread, cp)
        plan = json.loads(cli(home, "rewind", cp, "--conversation", "--dry-run", "--json").stdout)["plan"]
        r = detail["rewind"]
        assert r["to_seq"] == plan["to_seq"]
        assert sum(r["inputs"]["counts"].values()) == len(plan["inputs"])
        assert sum(r["calls"]["counts"].values()) == len(plan["tool_calls"])
        assert [i["input_id"] for i in r["inputs"]["first"]] == [i["input_id"] for i in plan["inputs"]][:20]
        assert r["commands"]["conversation"] == (
            f"continuation rewind {cp} --thread {thread.key} --conversation")
        shown = cli(home, "capsule", "show", "--thread", thread.key,
                    "--generation", str(detail["generation"])).stdout
        assert detail["capsule"]["text"].rstrip("\n") == shown.rstrip("\n")


def test_a_checkpoint_of_another_thread_is_not_shown(engine):
    made = every_state_thread(engine)
    fork = engine.get_thread(made["fork"])
    with pytest.raises(LookupError):
        model.checkpoint_detail(engine, fork, made["checkpoints"][0])


# -- the file ---------------------------------------------------------------------------------
def test_the_file_is_self_contained_and_recorded_text_cannot_end_its_script(engine, home, tmp_path):
    made = every_state_thread(engine)
    out = tmp_path / "t.html"
    cli(home, "show", "--thread", made["thread"], "--html", "-o", str(out))
    page = out.read_text(encoding="utf-8")
    assert page.count("</script>") == 2 and page.count("<script") == 2
    assert SECRET_LOOKING not in page
    assert "connect-src 'none'" in page
    # nothing of the page's own is fetched: no URL outside the embedded data
    own = page.split('id="continuation-data">')[0] + page.split("</script>", 1)[1]
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", own)
    data = json.loads(page.split('id="continuation-data">')[1].split("</script>")[0])
    texts = [i["text"]["text"] for w in data["windows"].values() for i in w["inputs"]]
    assert any(SECRET_LOOKING in t for t in texts)
    assert set(data["details"]) >= set(made["checkpoints"])


def test_a_long_thread_file_holds_the_newest_pages_unless_all(engine, home, tmp_path):
    t = engine.thread("codex", "many-turns")
    for n in range(300):
        t.admit(f"request {n}", input_id=f"in-{n}", turn_id=f"t{n}")
        t.store.append_many(t.key, [(ev.TOOL_STARTED, {"call_id": f"c{n}.{k}", "tool": "Bash",
                                                        "turn_id": f"t{n}", "args": {}})
                                    for k in range(120)], source="test")
        t.turn_completed(f"t{n}")
    data = document.file_data(engine, t)
    assert 1 < data["embedded_pages"] < len(data["outline"]["pages"])
    held = sum(w["hi"] - w["lo"] + 1 for w in data["windows"].values())
    assert held <= document.EMBED_EVENTS
    assert str(data["outline"]["pages"][-1]["lo"]) in data["windows"]
    every = document.file_data(engine, t, all_pages=True)
    assert every["embedded_pages"] == len(every["outline"]["pages"])


def test_show_errors_are_one_line(engine, home, tmp_path):
    every_state_thread(engine)
    no_html = cli(home, "show", "--thread", "every-state", check=False)
    assert no_html.returncode == 2 and "--html" in no_html.stderr
    assert len(no_html.stderr.strip().splitlines()) == 1
    (tmp_path / "a-file").write_text("")
    bad = cli(home, "show", "--thread", "every-state", "--html", "-o",
              str(tmp_path / "a-file" / "x.html"), check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("continuation: cannot write")
    assert "Traceback" not in bad.stderr
    unknown = cli(home, "show", "--thread", "nope", "--html", check=False)
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    piped = cli(home, "show", "--thread", "every-state", "--html")
    assert piped.stdout.startswith("<!DOCTYPE html>")


def test_new_commands_help_fits_80_columns(home):
    import os
    import subprocess
    import sys

    for args in (["show", "--help"], ["serve", "--help"]):
        out = subprocess.run([sys.executable, "-m", "continuation", *args], capture_output=True,
                             text=True, env={**os.environ, "COLUMNS": "80"}).stdout
        assert out and max(len(line) for line in out.splitlines()) <= 80


# -- the live server ---------------------------------------------------------------------------
@pytest.fixture
def server(engine, home):
    made = every_state_thread(engine)
    srv = TimelineServer(str(home), thread=made["thread"], poll_ms=500)
    runner = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    runner.start()
    yield srv, made
    srv.shutdown()
    srv.server_close()


def _get(url, headers=None, method="GET"):
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_serve_listens_on_loopback_only_and_wants_the_token(server):
    srv, made = server
    assert srv.server_address[0] == "127.0.0.1" and srv.port > 0
    base = f"http://127.0.0.1:{srv.port}"
    assert _get(srv.url)[0] == 200
    assert _get(base + "/")[0] == 403
    assert _get(base + "/?t=wrong")[0] == 403
    assert _get(f"{base}/api/head?t={srv.token}")[0] == 200
    assert _get(f"{base}/api/head?t={srv.token}", headers={"Host": "evil.example:80"})[0] == 403
    assert _get(f"{base}/api/head?t={srv.token}", method="POST")[0] == 501
    assert _get(f"{base}/api/head?t={srv.token}", method="DELETE")[0] == 501


def test_serve_answers_windows_checkpoints_search_and_errors(server):
    srv, made = server
    api = f"http://127.0.0.1:{srv.port}/api"
    token = f"t={srv.token}&thread={made['thread']}"
    code, body = _get(f"{api}/outline?{token}")
    outline = json.loads(body)
    page = outline["pages"][-1]
    code, body = _get(f"{api}/window?{token}&lo={page['lo']}&hi={page['hi']}")
    assert code == 200 and {i["input_id"] for i in json.loads(body)["inputs"]} >= {"in-pending"}
    code, body = _get(f"{api}/checkpoint?{token}&id={made['checkpoints'][0]}")
    assert code == 200 and "CONTINUATION-CHECKPOINT" in json.loads(body)["capsule"]["text"]
    code, body = _get(f"{api}/search?{token}&q=MIGRATION")
    seqs = [s for s, _ in json.loads(body)["matches"]]
    thread_events = {e["seq"]: e for e in engine_events(srv, made["thread"])}
    assert seqs and all("migrat" in json.dumps(thread_events[s]["data"]).lower() for s in seqs)
    assert _get(f"{api}/window?{token}&lo=x&hi=3")[0] == 400
    assert _get(f"{api}/checkpoint?{token}&id=cp-none")[0] == 404
    assert _get(f"{api}/outline?t={srv.token}&thread=no-such-thread")[0] == 404
    assert _get(f"{api}/nothing?{token}")[0] == 404


def engine_events(srv, key):
    with srv.engine() as engine:
        return engine.get_thread(key).events()


def test_search_matches_quotes_and_non_ascii_as_stored(engine):
    t = engine.thread("claude", "search")
    t.admit('say "héllo" to naïve users', input_id="a", turn_id="t1")
    t.admit("unrelated", input_id="b", turn_id="t1")
    for needle in ('"héllo"', "NAÏVE".lower(), "Say"):
        assert [s for s, _ in t.store.events_matching(t.key, needle, 10)] == [1]
    assert t.store.events_matching(t.key, "", 10) == []


def test_the_page_colors_states_in_the_hues_the_command_line_uses():
    from continuation.commands import output
    from continuation.commands.timeline import palette

    ansi = {"red": "31", "yellow": "33", "magenta": "35"}
    for state, code in output.ACTION.items():
        if state in palette.STATES:
            assert ansi[palette.STATES[state][2]] == code, state
    assert set(palette.STATES) >= {"queued", "pending", "handled", "reconciling", "interrupted",
                                   "superseded", "rolled_back"}


def test_serve_command_prints_its_url_answers_and_stops_on_ctrl_c(engine, home):
    import os
    import signal
    import subprocess
    import sys

    every_state_thread(engine)
    proc = subprocess.Popen([sys.executable, "-m", "continuation", "serve", "--thread",
                             "every-state"], env={**os.environ, "CONTINUATION_HOME": str(home),
                                                  "COLUMNS": "80"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = lines[1].strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?t=[\w-]{20,}", url), lines
        assert all(len(line.rstrip("\n")) <= 80 for line in lines)
        code, body = _get(url)
        assert code == 200 and b"claude-every-state" in body
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err


def test_secrets_are_hidden_as_the_command_line_hides_them_unless_asked(engine, home, tmp_path):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    t = engine.thread("claude", "secrets")
    t.admit(f"use the token {token} to push", input_id="a", turn_id="t1")
    t.tool_started("c1", "Bash", {"command": f"git push https://x:{token}@github.com/o/r"},
                   turn_id="t1")
    t.tool_finished("c1", "error", exit_code=1, output=f"rejected {token}", turn_id="t1")
    t.claim(f"pushed with {token}", turn_id="t1")
    t.turn_completed("t1")
    cli(home, "checkpoint", "--thread", t.key, "--no-snapshot")
    hidden = cli(home, "show", "--thread", t.key, "--html").stdout
    assert token not in hidden and token[:12] not in hidden
    assert "[redacted: GitHub token]" in hidden
    shown = cli(home, "show", "--thread", t.key, "--html", "--show-secrets").stdout
    assert shown.count(token) >= 4  # the input, the command, the output, the claim (and capsule)
