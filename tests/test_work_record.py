"""The whole record of finished work reaches the model after a boundary: real ids, distinct work.

Each test drives the hooks with payloads shaped as the runtimes send them (36-character UUIDs
for Claude Code's session, prompt and tool-use ids; distinct commands, some failing), then reads
what a model can reach: the inline context the hook answered, and the files it names, each with
one read of at most 10,000 characters (``continuation.prove.agent.read_file_limited``).
"""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from capsule.work_line import call_text, parse_work_line, work_line
from continuation import hooks
from continuation.session.engine import Engine
from continuation.prove.agent import READ_LIMIT, read_file_limited

_PAGE = re.compile(r'^- page ("(?:[^"\\]|\\.)*")')
_FOLDER = re.compile(r'^folder=("(?:[^"\\]|\\.)*")')


def feed(runtime: str, payloads) -> list[tuple[str, int]]:
    return [hooks.run(runtime, json.dumps(p).encode()) for p in payloads]


def context_of(answer: str) -> str:
    return (json.loads(answer).get("hookSpecificOutput") or {}).get("additionalContext") or ""


_WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "island",
          "juniper", "kestrel", "lagoon", "meadow", "nectar", "orchid", "prairie", "quartz", "raven",
          "summit", "tundra")


def distinct_command(k: int) -> str:
    """A ~60-character command unlike the others (file name, text and shape vary), named as
    people name files (words and numbers; the 200- and 1,000-call cases use the same)."""
    name = f"{_WORDS[k % 20]}_{_WORDS[(k // 20) % 20]}_{k}"
    shapes = [f"printf '%s\\n' 'release note {k}' >> notes/{name}.md",
              f"sed -i 's/draft/final/g' docs/{name}.rst",
              f"mkdir -p build/{name} && cp app.yaml build/{name}/",
              f"grep -c TODO src/{name}.py || echo none in {name}",
              f"python3 -c 'print(sum(range({k * 37 + 11})))' > out/{name}.txt"]
    return shapes[k % len(shapes)]


def claude_turn(session: str, n: int, *, failing=frozenset(), prompt_id: str | None = None,
                prompt: str = "run the release plan") -> tuple[list[dict], list[str]]:
    """A prompt and ``n`` finished Bash calls, as Claude Code's hooks send them."""
    prompt_id = prompt_id or str(uuid.uuid4())
    base = {"session_id": session, "cwd": "/tmp", "transcript_path": None}
    out = [{**base, "hook_event_name": "UserPromptSubmit", "prompt_id": prompt_id, "prompt": prompt}]
    commands = []
    for k in range(n):
        command = distinct_command(k)
        commands.append(command)
        use = f"toolu_{uuid.uuid4().hex[:24]}"
        args = {"command": command, "description": f"step {k}"}
        out.append({**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": args,
                    "tool_use_id": use})
        if k in failing:
            out.append({**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                        "tool_input": args, "tool_use_id": use, "error": "Exit code 1"})
        else:
            out.append({**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": args,
                        "tool_use_id": use, "tool_response": {"stdout": "", "stderr": "",
                                                              "interrupted": False}})
    return out, commands


def compaction(session: str) -> list[dict]:
    base = {"session_id": session, "cwd": "/tmp"}
    return [{**base, "hook_event_name": "PreCompact", "trigger": "auto"},
            {**base, "hook_event_name": "SessionStart", "source": "compact"}]


def reachable(inline: str) -> tuple[list[dict], list[str]]:
    """Every call a model reaches from ``inline``: its own work lines, the spilled parts and
    the work record's pages, each read once within READ_LIMIT (a templated line stands for its
    calls). Returns (calls, files read)."""
    from capsule.ledger import expand_group

    texts, read = [inline], []
    head = inline.split("\n", 1)[0]
    names = re.findall(r'"([^"]+\.md)"', head)
    parts = re.search(r"is in (\d+) parts of one file read each", head)
    if parts:
        names = [f"{names[0][:-len('1.md')]}{k}.md" for k in range(1, int(parts.group(1)) + 1)]
    for name in names:
        texts.append(read_file_limited(name))
        read.append(name)
    folder = None
    pages = []
    for text in list(texts):
        for line in text.splitlines():
            if (m := _FOLDER.match(line)) is not None:
                folder = json.loads(m.group(1))
            elif (m := _PAGE.match(line)) is not None:
                pages.append(json.loads(m.group(1)))
    for name in dict.fromkeys(pages):
        path = str(Path(folder) / name)
        texts.append(read_file_limited(path))
        read.append(path)
    calls = []
    for text in texts:
        for line in text.splitlines():
            f = parse_work_line(line)
            if f is not None:
                calls += [{**f, "text": t} for t in expand_group(f["text"], f["values"])]
    return calls, read


def test_a_line_is_the_command_as_it_ran_once():
    command = "printf '%s\\n' 'a \"quoted\" word' >> notes.txt"
    line = work_line(12345, "ok", 0, call_text("Bash", {"command": command, "description": "x"}))
    assert line == f"#12345 $ {command}"
    assert parse_work_line(line)["text"] == f"$ {command}"
    failed = work_line(9, "error", 2, call_text("Bash", {"command": "make test"}))
    assert failed == "#9 error exit=2 $ make test"
    # a command with a line break, or any other tool: its arguments as one JSON object
    multi = work_line(3, "ok", None, call_text("Bash", {"command": "cat <<EOF\nx\nEOF"}))
    assert "\n" not in multi and multi.startswith('#3 Bash {"command":"cat <<EOF\\nx\\nEOF"}')
    assert parse_work_line(multi)["text"] == 'Bash {"command":"cat <<EOF\\nx\\nEOF"}'


def test_a_hundred_distinct_calls_with_real_ids_fit_inline(home):
    """Item 1: 100 distinct ~60-character calls, UUID ids, all inline in one answer within the
    runtimes' 10,000 (characters for Claude Code, bytes for Codex; boundary.INLINE_TOTAL)."""
    from continuation.boundary.crossing import INLINE_TOTAL

    session = str(uuid.uuid4())
    turn, commands = claude_turn(session, 100)
    feed("claude", turn)
    answers = feed("claude", compaction(session))
    inline = context_of(answers[-1][0])
    assert 0 < len(inline.encode()) <= INLINE_TOTAL < 10_000
    lines = {f["text"] for line in inline.splitlines() if (f := parse_work_line(line))}
    missing = [c for c in commands if f"$ {c}" not in lines]
    assert not missing, (len(missing), inline[:3000])
    assert sum(len(c) for c in commands) / len(commands) >= 59
    # the ids are written once each (the legend), not on every line
    assert inline.count(session) <= 6, inline.count(session)


@pytest.mark.parametrize("n", [200, 1000])
def test_every_finished_call_of_a_long_turn_is_reachable_within_read_limits(home, n):
    """Item 2: what is not inline is in pages, each one read of at most 10,000 characters."""
    session = str(uuid.uuid4())
    failing = {7, n // 2, n - 3}
    turn, commands = claude_turn(session, n, failing=failing)
    feed("claude", turn)
    inline = context_of(feed("claude", compaction(session))[-1][0])
    calls, read = reachable(inline)
    seen = {f["text"] for f in calls}
    assert [c for c in commands if f"$ {c}" not in seen] == []
    for path in read:
        data = Path(path).read_bytes()
        assert len(data) <= 9_000 and len(data.decode().splitlines()) <= 150, path
        assert len(data.decode()) <= READ_LIMIT
    # item 3: every failure is inline, with its exit, never only a number
    inline_failed = {f["text"] for line in inline.splitlines()
                     if (f := parse_work_line(line)) and f["status"] == "error"}
    assert inline_failed == {f"$ {commands[k]}" for k in failing}, inline_failed


def test_pages_are_checksummed_and_printed_by_source(home, capsys):
    from continuation import cli
    from capsule.work_record import verify_page

    session = str(uuid.uuid4())
    turn, _ = claude_turn(session, 300)
    feed("claude", turn)
    inline = context_of(feed("claude", compaction(session))[-1][0])
    folder = next(json.loads(m.group(1)) for line in inline.splitlines() if (m := _FOLDER.match(line)))
    manifest = json.loads((Path(folder) / "g000001.work.json").read_text())
    assert len(manifest["pages"]) >= 3
    for entry in manifest["pages"]:
        text = (Path(folder) / entry["name"]).read_text()
        assert verify_page(text) and entry["sha256"] in text
    with Engine(home) as e:
        key = e.find_thread("claude", session).key
    assert cli.main(["source", f"work:{key}:1:2"]) == 0
    assert capsys.readouterr().out == (Path(folder) / manifest["pages"][1]["name"]).read_text()
    page = Path(folder) / manifest["pages"][0]["name"]
    page.write_text(page.read_text().replace(" $ ", " error $ ", 1))
    assert cli.main(["source", f"work:{key}:1:1"]) != 0
    assert "does not match its sha256" in capsys.readouterr().err


def test_source_resolves_ranges(home, capsys):
    from continuation import cli

    session = str(uuid.uuid4())
    turn, commands = claude_turn(session, 5)
    feed("claude", turn)
    with Engine(home) as e:
        key = e.find_thread("claude", session).key
    for pointer in (f"event:{key}:2..6", f"event:{key}:2..event:{key}:6"):
        assert cli.main(["source", pointer]) == 0
        rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert [r["seq"] for r in rows] == [2, 3, 4, 5, 6]
        assert rows[0]["data"]["args"]["command"] == commands[0]
    assert cli.main(["source", f"event:{key}:6..2"]) != 0
    assert "ends before it starts" in capsys.readouterr().err
    assert cli.main(["source", f"event:{key}:1..event:other:5"]) != 0


def test_an_earlier_handled_prompt_stays_reachable_after_a_later_compaction(home):
    """Item 4: prompt A finished (handled), prompt B compacts: A and its calls are shown done."""
    session = str(uuid.uuid4())
    a_id = str(uuid.uuid4())
    turn_a, commands_a = claude_turn(session, 25, prompt_id=a_id, prompt="prompt A: the first plan")
    feed("claude", turn_a)
    feed("claude", [{"session_id": session, "hook_event_name": "Stop", "last_assistant_message": "done"}])
    turn_b, commands_b = claude_turn(session, 40, prompt="prompt B: the second plan")
    feed("claude", turn_b)
    inline = context_of(feed("claude", compaction(session))[-1][0])
    calls, read = reachable(inline)
    seen = {f["text"] for f in calls}
    assert all(f"$ {c}" in seen for c in commands_a + commands_b)
    page_text = "\n".join(read_file_limited(p) for p in read)
    assert f'- input="{a_id}" state=handled' in page_text


def test_two_compactions_in_one_turn_keep_the_whole_turn_reachable(home):
    """Item 9: the second context reaches steps 1-50, not only those after the first."""
    session = str(uuid.uuid4())
    turn, commands = claude_turn(session, 60)
    feed("claude", turn[:1 + 2 * 25])
    feed("claude", compaction(session))
    feed("claude", turn[1 + 2 * 25:1 + 2 * 50])
    inline = context_of(feed("claude", compaction(session))[-1][0])
    seen = {f["text"] for f in reachable(inline)[0]}
    assert [k for k, c in enumerate(commands[:50]) if f"$ {c}" not in seen] == []


def test_a_not_applied_call_is_never_work_done(home):
    """Item 6: after `reconcile --not-applied` the call is the next step, not finished work."""
    from continuation.recovery import interrupted, reconcile

    import subprocess
    import sys

    from continuation.host import liveness

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with Engine(home) as e:
        t = e.thread("claude", "na-" + str(uuid.uuid4()))
        marker = {"pid": dead.pid, "proc_start": "12345", "host": liveness.hostname()}
        t.admit("deploy the release to staging", turn_id="t1", session=marker)
        t.tool_started("c0", "Bash", {"command": "make build"}, turn_id="t1", session=marker)
        t.tool_finished("c0", status="ok", exit_code=0, session=marker)
        t.tool_started("c1", "Bash", {"command": "./deploy staging"}, turn_id="t1", session=marker)
        interrupted.record_crash(t, interrupted.examine(t))
        reconcile.decide(t, "c1", "not_applied")
        session = t.row["session_id"]
    (answer, _), = feed("claude", [{"session_id": session, "hook_event_name": "SessionStart",
                                    "source": "resume"}])
    text = context_of(answer)
    assert "not applied" in text, text
    done = {f["text"] for f in reachable(text)[0]}
    assert "$ make build" in done and "$ ./deploy staging" not in done
    assert "Continue it from after them" not in text
    assert 'last_completed_step="Bash ./deploy staging"' not in text


def test_gemini_context_has_no_angle_brackets_in_the_block(home):
    """Item 7: Gemini HTML-escapes < and > in hook context: nothing of ours depends on them."""
    from capsule.channel import for_gemini

    session = str(uuid.uuid4())
    turn, commands = claude_turn(session, 12)
    feed("claude", turn)
    text = context_of(feed("claude", compaction(session))[-1][0])
    gem = for_gemini(text)
    block = gem.split("[[[CONTINUATION-CHECKPOINT", 1)[1].split("END]]]", 1)[0]
    assert "<" not in block and ">" not in block
    seen = {f["text"] for line in gem.splitlines() if (f := parse_work_line(line))}
    assert {f"$ {c}" for c in commands} <= seen  # the $json lines decode to the exact commands


@pytest.mark.parametrize("runtime,path,rules", [
    ("claude", ("permissions", "additionalDirectories"), ("permissions", "allow", "Bash({}:*)")),
    ("gemini", ("context", "includeDirectories"), None)])
def test_install_grants_the_contexts_folder_and_uninstall_takes_it_back(tmp_path, runtime, path, rules):
    """The folder for the runtime's file tools; (Claude Code) `<script> source` (the sealed
    record, with encryption on) for its shell tool without a prompt; both taken back by
    uninstall. Gemini's rule is a policy file (tests/test_install_gemini.py)."""
    from continuation.host.own_command import source_command
    from continuation.install import install, uninstall

    state = tmp_path / "state"
    project = tmp_path / "p"
    project.mkdir()
    settings = project / f".{runtime}" / "settings.json"
    settings.parent.mkdir()
    mine = {path[0]: {path[1]: ["/my/own"]}, "model": "x"}
    settings.write_text(json.dumps(mine))
    kw = dict(project_dir=project, home=tmp_path, state_home=state, command=["continuation"], env={})
    report = install(runtime, "project", **kw)
    data = json.loads(settings.read_text())
    assert data[path[0]][path[1]] == ["/my/own", str(state / "contexts")]
    if rules:
        assert data[rules[0]][rules[1]] == [rules[2].format(source_command())]
    assert (state / "contexts").is_dir()
    assert str(state / "contexts") in report.message and not report.warnings
    # edited since install: uninstall removes only what it added
    data["model"] = "y"
    settings.write_text(json.dumps(data))
    uninstall(runtime, "project", **kw)
    assert json.loads(settings.read_text()) == {**mine, "model": "y"}


def test_a_long_request_is_kept_once_with_its_unfinished_end_inline(home):
    """Item 5: a 10 KB plan is not clipped at its front twice (objective line and input block):
    inline it is written once, its start and its end (where the steps still to do are)."""
    session = str(uuid.uuid4())
    steps = [f"{k}. `{distinct_command(k)}`" for k in range(1, 151)]
    plan = "Run these steps in order, one shell call per step:\n" + "\n".join(steps)
    assert len(plan) > 9_000
    turn, _ = claude_turn(session, 120, prompt=plan)
    feed("claude", turn)
    inline = context_of(feed("claude", compaction(session))[-1][0])
    assert "text=(verbatim in the user input below)" in inline
    assert steps[0] in inline and steps[-1] in inline and steps[-25] in inline
    assert inline.count(steps[0]) == 1
    assert "the middle is left out here" in inline
