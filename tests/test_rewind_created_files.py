"""`rewind --files` deletes only files a SUCCESSFUL agent call created.

Files the user made after the checkpoint were deleted because the agent had attempted a Write
that was denied or failed, or had run an Edit (which never creates a file). Driven through the
real hook handler (Claude Code and Codex payload shapes) in a temporary git repository."""
from __future__ import annotations

import pytest
from test_rewind_support import HookSession
from workspace_repos import git_home, make_repo  # noqa: F401 (git_home is a fixture)

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Engine
from continuation.rewind.operation import plan_rewind, rewind
from continuation.toolcalls.files import created_paths, written_paths

PATCH = ("*** Begin Patch\n*** Add File: pkg/added.py\n+print('new')\n"
         "*** Update File: README.md\n@@\n-hello\n+hello again\n"
         "*** Update File: old_name.py\n*** Move to: pkg/moved.py\n@@\n-x = 1\n+x = 2\n"
         "*** End Patch\n")


@pytest.fixture
def repo(tmp_path, git_home, home):
    return make_repo(tmp_path / "repo", {"README.md": "hello\n", "old_name.py": "x = 1\n"})


def user_writes(repo, name: str, text: str = "the user's own work\n") -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def claude_calls_after_a_checkpoint(home, repo) -> HookSession:
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("first")
    s.stop(p1)
    s.compact()  # the checkpoint rewound to
    p2 = s.prompt("try some writes")

    def attempt(tool, name, event, **extra):
        call = f"toolu_{name.replace('/', '_').replace('.', '_')}"
        tool_input = {"file_path": str(repo / name), "content": "agent\n", **extra}
        s.send("PreToolUse", prompt_id=p2, tool_name=tool, tool_input=tool_input, tool_use_id=call)
        return call, tool_input

    # denied by the user: the call never ran; the user then makes the file
    call, args = attempt("Write", "denied.txt", "PermissionDenied")
    s.send("PermissionDenied", prompt_id=p2, tool_name="Write", tool_input=args, tool_use_id=call,
           reason="the user said no")
    user_writes(repo, "denied.txt")
    # failed: the tool reported an error; the user then makes the file
    call, args = attempt("Write", "failed.txt", "PostToolUseFailure")
    s.send("PostToolUseFailure", prompt_id=p2, tool_name="Write", tool_input=args,
           tool_use_id=call, error="EACCES: permission denied")
    user_writes(repo, "failed.txt")
    # an Edit of a file the user made after the checkpoint: it never creates the file
    user_writes(repo, "edited.txt", "one\n")
    s.tool(p2, "Edit", {"file_path": str(repo / "edited.txt"), "old_string": "one",
                        "new_string": "two"}, write={"edited.txt": "two\n"})
    # a Write with no outcome (the session died): not known to have created anything
    s.tool(p2, "Write", {"file_path": str(repo / "unknown.txt"), "content": "?"},
           finish=False, write={"unknown.txt": "?"})
    # a Write the runtime answered as an update of a file the user had made
    user_writes(repo, "updated.txt")
    call, args = attempt("Write", "updated.txt", "PostToolUse")
    s.send("PostToolUse", prompt_id=p2, tool_name="Write", tool_input=args, tool_use_id=call,
           tool_response={"type": "update", "filePath": str(repo / "updated.txt")})
    # what the agent really created
    s.write_file(p2, "agent.txt", "agent\n")
    s.tool(p2, "Edit", {"file_path": str(repo / "via-edit.txt"), "old_string": "",
                        "new_string": "made by Edit\n"}, write={"via-edit.txt": "made by Edit\n"})
    user_writes(repo, "plain-user.txt")
    s.stop(p2)
    return s


def test_files_rewind_deletes_only_what_a_successful_agent_call_created(home, repo):
    s = claude_calls_after_a_checkpoint(home, repo)
    with Engine(home) as e:
        t = s.thread(e)
        cp = cps.list_checkpoints(t)[0]
        plan = plan_rewind(e, cp.checkpoint_id, "files")
        assert plan.files.deleted == ["agent.txt", "via-edit.txt"]
        kept = ["denied.txt", "edited.txt", "failed.txt", "plain-user.txt", "unknown.txt",
                "updated.txt"]
        assert plan.files.kept == kept
        described = plan.describe()
        assert all(f"keep      {name}" in described for name in kept)
        result = rewind(e, cp.checkpoint_id, "files")
    assert result.files["deleted"] == ["agent.txt", "via-edit.txt"]
    assert result.files["kept"] == kept
    assert not (repo / "agent.txt").exists() and not (repo / "via-edit.txt").exists()
    for name in kept:
        assert (repo / name).exists(), f"{name} was deleted although the agent never created it"


def test_codex_apply_patch_added_and_moved_files_are_deleted_updates_restored(home, repo):
    s = HookSession(home, repo, runtime="codex")
    s.start()
    s.send("UserPromptSubmit", turn_id="turn-1", prompt="first")
    s.send("Stop", turn_id="turn-1", last_assistant_message="ok")
    s.send("PreCompact", turn_id="turn-1", trigger="auto")
    s.send("UserPromptSubmit", turn_id="turn-2", prompt="patch it")
    s.send("PreToolUse", turn_id="turn-2", tool_name="apply_patch", tool_input={"input": PATCH},
           tool_use_id="call-1")
    user_writes(repo, "pkg/added.py", "print('new')\n")
    user_writes(repo, "README.md", "hello again\n")
    (repo / "old_name.py").unlink()
    user_writes(repo, "pkg/moved.py", "x = 2\n")
    s.send("PostToolUse", turn_id="turn-2", tool_name="apply_patch", tool_input={"input": PATCH},
           tool_response="Success. Updated the following files:\nA pkg/added.py\nM README.md",
           tool_use_id="call-1")
    # a patch through the shell that failed to apply: it created nothing
    failed = PATCH.replace("pkg/added.py", "pkg/user.py").replace("pkg/moved.py", "pkg/user2.py")
    s.send("PreToolUse", turn_id="turn-2", tool_name="shell",
           tool_input={"command": ["apply_patch", failed]}, tool_use_id="call-2")
    s.send("PostToolUse", turn_id="turn-2", tool_name="shell",
           tool_input={"command": ["apply_patch", failed]},
           tool_response={"exit_code": 1, "output": "error: patch does not apply"},
           tool_use_id="call-2")
    user_writes(repo, "pkg/user.py")
    s.send("Stop", turn_id="turn-2", last_assistant_message="patched")
    with Engine(home) as e:
        cp = cps.list_checkpoints(s.thread(e))[0]
        result = rewind(e, cp.checkpoint_id, "files")
    assert result.files["deleted"] == ["pkg/added.py", "pkg/moved.py"]
    assert sorted(result.files["restored"] + result.files["recreated"]) == ["README.md",
                                                                             "old_name.py"]
    assert (repo / "pkg" / "user.py").exists()
    assert (repo / "README.md").read_text() == "hello\n"


@pytest.mark.parametrize(("tool", "args", "created"), [
    ("Write", {"file_path": "a.txt", "content": ""}, ["a.txt"]),
    ("Edit", {"file_path": "a.txt", "old_string": "x", "new_string": "y"}, []),
    ("Edit", {"file_path": "a.txt", "old_string": "", "new_string": "y"}, ["a.txt"]),
    ("MultiEdit", {"file_path": "a.txt", "edits": [{"old_string": "", "new_string": "y"}]},
     ["a.txt"]),
    ("MultiEdit", {"file_path": "a.txt", "edits": [{"old_string": "x", "new_string": "y"}]}, []),
    ("NotebookEdit", {"notebook_path": "n.ipynb", "new_source": "x"}, []),
    ("apply_patch", {"input": PATCH}, ["pkg/added.py", "pkg/moved.py"]),
    ("exec_command", {"cmd": "apply_patch <<'EOF'\n" + PATCH + "EOF"},
     ["pkg/added.py", "pkg/moved.py"]),
    ("Bash", {"command": "touch a.txt"}, []),
])
def test_which_calls_create_files(tool, args, created):
    assert created_paths(tool, args) == created
    assert set(created) <= set(written_paths(tool, args))


def test_a_file_created_on_a_conversation_rewound_branch_still_counts(home, repo):
    """A conversation-only rewind hides the Write (rolled_back) but leaves its file; a later
    files rewind still knows the agent created it (the outcome its finish recorded)."""
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("first")
    s.stop(p1)
    s.compact()
    p2 = s.prompt("make a file")
    s.write_file(p2, "agent.txt", "agent\n")
    s.stop(p2)
    with Engine(home) as e:
        cp = cps.list_checkpoints(s.thread(e))[0]
        rewind(e, cp.checkpoint_id, "conversation")
        assert [c.status for c in s.thread(e).tool_calls()] == ["rolled_back"]
        assert (repo / "agent.txt").exists()
        plan = plan_rewind(e, cp.checkpoint_id, "files")
        assert plan.files.deleted == ["agent.txt"]


def test_created_files_past_a_checkpoint_read_only_the_later_calls(home, tmp_path, monkeypatch):
    """A files rewind at a long thread decodes only the calls started after its
    checkpoint (filtered in SQL), so its cost does not grow with the thread's history."""
    from statemachine import records

    from continuation.session.workspace_link import session_created_paths, session_written_paths

    root = tmp_path / "ws"
    root.mkdir()
    with Engine(home) as e:
        t = e.thread("claude", "long", workspace_root=str(root))
        for n in range(300):  # the history before the checkpoint: 300 files the agent made
            t.tool_started(f"old{n}", "Write", {"file_path": str(root / f"old{n}.txt")}, turn_id="t0")
            t.tool_finished(f"old{n}", "ok", turn_id="t0")
        mark = int(t.row["last_seq"])
        t.tool_started("new1", "Write", {"file_path": str(root / "new.txt")}, turn_id="t1")
        t.tool_finished("new1", "ok", turn_id="t1")
        t.tool_started("new2", "Write", {"file_path": str(root / "denied.txt")}, turn_id="t1")
        t.tool_finished("new2", "error", turn_id="t1")
        decoded = []
        real = records.ToolCallRecord.from_row.__func__

        def counting(cls, row):
            decoded.append(row.get("call_id"))
            return real(cls, row)

        monkeypatch.setattr(records.ToolCallRecord, "from_row", classmethod(counting))
        assert session_created_paths(t, after_seq=mark) == ["new.txt"]
        assert sorted(decoded) == ["new1", "new2"]
        decoded.clear()
        assert session_written_paths(t, after_seq=mark) == ["denied.txt", "new.txt"]
        assert sorted(decoded) == ["new1", "new2"]
        # the whole history is still there for a checkpoint before it
        assert len(session_created_paths(t, after_seq=0)) == 301
