"""Verifying interrupted file edits against the files: applied, not applied, diverged."""
from __future__ import annotations

import pytest

from continuation.toolcalls.patchtext import PatchFormatError, find_patch, parse
from continuation.recovery.verify_edits import (
    APPLIED, DIVERGED, NOT_APPLIED, UNKNOWN, replacement_verdict, verify,
)


def test_write(tmp_path):
    args = {"file_path": str(tmp_path / "a.txt"), "content": "hello\n"}
    assert verify("Write", args).verdict == NOT_APPLIED  # the file it creates is absent
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    assert verify("Write", args).verdict == APPLIED
    (tmp_path / "a.txt").write_bytes(b"hello\r\n")  # CRLF on disk still counts
    assert verify("Write", args).verdict == APPLIED
    (tmp_path / "a.txt").write_text("other\n", encoding="utf-8")
    check = verify("Write", args)
    assert check.verdict == DIVERGED and "other content" in check.files[0].detail


def test_write_relative_path_resolves_against_the_base(tmp_path):
    (tmp_path / "rel.txt").write_text("x", encoding="utf-8")
    assert verify("Write", {"file_path": "rel.txt", "content": "x"}, tmp_path).verdict == APPLIED


@pytest.mark.parametrize("text,old,new,verdict", [
    ("a = 1\n", "a = 1", "a = 2", NOT_APPLIED),
    ("a = 2\n", "a = 1", "a = 2", APPLIED),
    ("a = 3\n", "a = 1", "a = 2", DIVERGED),
    ("a = 1\na = 2\n", "a = 1", "a = 2", DIVERGED),          # both: ambiguous
    ("x\ny\n", "x\n", "x\nnew\n", NOT_APPLIED),              # insertion: old inside new
    ("x\nnew\ny\n", "x\n", "x\nnew\n", APPLIED),
    ("keep\ndrop\n", "keep\ndrop\n", "keep\n", NOT_APPLIED),  # removal: new inside old
    ("keep\n", "keep\ndrop\n", "keep\n", APPLIED),
    ("gone\n", "secret", "", APPLIED),                        # deletion
    ("has secret\n", "secret", "", NOT_APPLIED),
    ("same\n", "same", "same", APPLIED),
])
def test_replacement_verdicts(text, old, new, verdict):
    assert replacement_verdict(text, old, new)[0] == verdict


def test_edit_and_multiedit(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def a():\n    return 1\n\ndef b():\n    return 2\n", encoding="utf-8")
    edit = {"file_path": str(f), "old_string": "return 1", "new_string": "return 10"}
    assert verify("Edit", edit).verdict == NOT_APPLIED
    multi = {"file_path": str(f), "edits": [{"old_string": "return 1\n", "new_string": "return 10\n"},
                                            {"old_string": "return 2", "new_string": "return 20"}]}
    assert verify("MultiEdit", multi).verdict == NOT_APPLIED
    f.write_text("def a():\n    return 10\n\ndef b():\n    return 2\n", encoding="utf-8")
    assert verify("Edit", edit).verdict == APPLIED
    partial = verify("MultiEdit", multi)  # one edit there, the other not: a partial edit
    assert partial.verdict == DIVERGED and "some edits" in partial.files[0].detail
    f.write_text("def a():\n    return 10\n\ndef b():\n    return 20\n", encoding="utf-8")
    assert verify("MultiEdit", multi).verdict == APPLIED
    f.unlink()
    assert verify("Edit", edit).verdict == DIVERGED


PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# New
+text
*** Update File: src/app.py
@@ def main():
 def main():
-    print("old")
+    print("new")
     return 0
*** Delete File: obsolete.txt
*** End Patch"""


def _tree(root, app='    print("old")\n', new=None, obsolete=True):
    (root / "src").mkdir(exist_ok=True)
    (root / "src" / "app.py").write_text(f'def main():\n{app}    return 0\n', encoding="utf-8")
    if new is not None:
        (root / "docs").mkdir(exist_ok=True)
        (root / "docs" / "new.md").write_text(new, encoding="utf-8")
    if obsolete:
        (root / "obsolete.txt").write_text("x", encoding="utf-8")


def test_apply_patch_not_applied_applied_and_partial(tmp_path):
    args = {"input": PATCH}
    _tree(tmp_path)
    check = verify("apply_patch", args, tmp_path)
    assert check.verdict == NOT_APPLIED
    assert [f.path for f in check.files] == ["docs/new.md", "src/app.py", "obsolete.txt"]
    _tree(tmp_path, app='    print("new")\n', new="# New\ntext\n", obsolete=False)
    (tmp_path / "obsolete.txt").unlink(missing_ok=True)
    assert verify("apply_patch", args, tmp_path).verdict == APPLIED
    (tmp_path / "obsolete.txt").write_text("x", encoding="utf-8")  # one part missing
    partial = verify("apply_patch", args, tmp_path)
    assert partial.verdict == DIVERGED
    assert {f.path: f.verdict for f in partial.files}["obsolete.txt"] == NOT_APPLIED


def test_apply_patch_through_codex_shell_argv(tmp_path):
    _tree(tmp_path, app='    print("new")\n', new="# New\ntext\n", obsolete=False)
    args = {"command": ["apply_patch", PATCH]}
    assert find_patch(args) == PATCH
    assert verify("Bash", args, tmp_path).verdict == APPLIED


def test_patch_with_move(tmp_path):
    patch = ("*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-one\n+two\n"
             "*** End Patch")
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    assert verify("apply_patch", {"input": patch}, tmp_path).verdict == NOT_APPLIED
    (tmp_path / "a.txt").unlink()
    (tmp_path / "b.txt").write_text("two\n", encoding="utf-8")
    assert verify("apply_patch", {"input": patch}, tmp_path).verdict == APPLIED


def test_bad_input_is_unknown_not_an_error(tmp_path):
    assert verify("apply_patch", {"input": "*** Begin Patch\nnonsense\n*** End Patch"}).verdict == UNKNOWN
    assert verify("Edit", {"file_path": 3}).verdict == UNKNOWN
    assert verify("NotebookEdit", {"notebook_path": "x.ipynb"}).verdict == UNKNOWN
    assert verify("Write", "not a dict").verdict == UNKNOWN
    folder = tmp_path / "dir"
    folder.mkdir()
    check = verify("Write", {"file_path": str(folder), "content": "x"})
    assert check.verdict == UNKNOWN and "cannot read" in check.files[0].detail


def test_binary_file_does_not_crash(tmp_path):
    f = tmp_path / "bin"
    f.write_bytes(b"\xff\xfe\x00garbage")
    assert verify("Edit", {"file_path": str(f), "old_string": "a", "new_string": "b"}).verdict == DIVERGED


def test_parse_errors():
    with pytest.raises(PatchFormatError):
        parse("no header")
    with pytest.raises(PatchFormatError):
        parse("*** Begin Patch\n*** End Patch")


def test_a_file_unchanged_since_the_checkpoint_before_the_call_was_not_written(engine, tmp_path):
    """Write over an existing file: other content alone is ambiguous; the snapshot taken before
    the call says the file was already like this, so the write did not happen."""
    import os
    import subprocess

    from continuation.boundary import crossing as boundary
    from continuation.recovery import reconcile

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / "conf.ini").write_text("old = 1\n", encoding="utf-8")
    t = engine.thread("claude", "w1", workspace_root=str(repo))
    t.admit("rewrite the config", input_id="p1", turn_id="p1")
    boundary.commit_checkpoint(t, reason="auto")  # snapshot before the call
    t.tool_started("w", "Write", {"file_path": "conf.ini", "content": "new = 2\n"}, turn_id="p1")
    t.tool_started("v", "Write", {"file_path": "other.ini", "content": "x = 1\n"}, turn_id="p1")
    (repo / "other.ini").write_text("x = 0\n", encoding="utf-8")  # appeared after the checkpoint
    t.crash_detected("owner gone")
    checks = {i.call_id: i.check for i in reconcile.pending(t)}
    assert checks["w"].verdict == NOT_APPLIED
    assert "unchanged since checkpoint cp-1-" in checks["w"].files[0].detail
    assert checks["v"].verdict == DIVERGED  # not in the snapshot, now other content: ambiguous
    (repo / "conf.ini").write_text("edited by hand\n", encoding="utf-8")
    checks = {i.call_id: i.check for i in reconcile.pending(t)}
    assert checks["w"].verdict == DIVERGED
