"""A FIFO or a device named as a transcript or as an edited file never makes a
hook or a command hang or read without end; boundary hooks answer by a deadline."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safety_harness import GIT_ENV, RUNTIME, special_repo

from continuation.host import userfiles

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")

#: without the fix these calls block for good; well above what they need with it
HANG_S = 40
@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_only_regular_files_are_opened(special, fifo, tmp_path):
    path = {"fifo": fifo, "/dev/zero": Path("/dev/zero"), "folder": tmp_path}[special]
    started = time.monotonic()
    with pytest.raises(userfiles.NotRegularFile):
        userfiles.read_bounded(path, 1024)
    with pytest.raises(userfiles.NotRegularFile):
        userfiles.read_tail(path, 1024)
    with pytest.raises(userfiles.NotRegularFile):
        userfiles.hash_prefix(path, hashlib.sha256())
    assert time.monotonic() - started < 5


def test_a_symlink_to_a_device_is_refused(tmp_path):
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    with pytest.raises(userfiles.NotRegularFile):
        userfiles.read_bounded(link, 1024)


def test_reads_are_bounded(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(userfiles.FileTooLarge):
        userfiles.read_bounded(big, 4999)
    assert userfiles.read_bounded(big, 5000) == b"x" * 5000
    assert userfiles.read_tail(big, 10) == (b"x" * 10, 4990)
    h = hashlib.sha256()
    assert userfiles.hash_prefix(big, h, limit=100) == 100
    assert h.hexdigest() == hashlib.sha256(b"x" * 100).hexdigest()


def _run(args, env, payload=None, cwd=None):
    started = time.monotonic()
    r = subprocess.run([*RUNTIME, sys.executable, "-m", "continuation", *args], env=env, cwd=cwd,
                       input=json.dumps(payload).encode() if payload is not None else None,
                       capture_output=True, timeout=HANG_S)
    return r, time.monotonic() - started


@pytest.fixture
def session(tmp_path, fifo):
    """A git repository, a prompt and two calls without an outcome: a Write aimed at a FIFO and
    an Edit aimed at a link to /dev/zero."""
    repo = tmp_path / "repo"
    payloads = special_repo(repo)
    env = {**os.environ, **GIT_ENV, "CONTINUATION_HOME": str(tmp_path / "state")}
    for payload in payloads:
        r, _ = _run(["hook", "--runtime", "claude"], env, payload)
        assert r.returncode == 0
    return repo, env, payloads[0]


@pytest.mark.parametrize("transcript", ["fifo", "/dev/zero"])
def test_boundaries_and_reconcile_return_with_special_files(session, transcript, fifo):
    repo, env, base = session
    transcript_path = str(fifo) if transcript == "fifo" else "/dev/zero"
    r, took = _run(["hook", "--runtime", "claude"], env,
                   {**base, "hook_event_name": "PreCompact", "trigger": "auto",
                    "transcript_path": transcript_path})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    r, _ = _run(["hook", "--runtime", "claude"], env,
                {**base, "hook_event_name": "SessionStart", "source": "resume",
                 "transcript_path": transcript_path})
    assert r.returncode == 0
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "w1" in context and "e1" in context  # still unknown: never guessed
    r, _ = _run(["reconcile", "--json"], env, cwd=repo)
    assert r.returncode == 0, r.stderr
    checks = json.dumps(json.loads(r.stdout))
    assert "not a regular file" in checks
    r, _ = _run(["checkpoints", "--json"], env, cwd=repo)
    assert r.returncode == 0 and json.loads(r.stdout), "the boundary was committed"


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_import_of_a_special_file_is_one_clear_error(special, fifo, tmp_path):
    path = str(fifo) if special == "fifo" else "/dev/zero"
    env = {**os.environ, "CONTINUATION_HOME": str(tmp_path / "state")}
    r, _ = _run(["import", "claude", path], env)
    assert r.returncode != 0
    assert "not a regular file" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_a_boundary_hook_answers_by_its_deadline(tmp_path):
    """A PreCompact stuck in its work answers after the deadline; what was recorded stays."""
    env = {**os.environ, "CONTINUATION_HOME": str(tmp_path / "state"),
           "CONTINUATION_HOOK_DEADLINE": "2"}
    base = {"session_id": "s", "cwd": str(tmp_path), "prompt_id": "p1"}
    r, _ = _run(["hook", "--runtime", "claude"], env,
                {**base, "hook_event_name": "UserPromptSubmit", "prompt": "keep me"})
    assert r.returncode == 0
    env["CONTINUATION_FAULT"] = "checkpoint.before_commit:hang"
    r, took = _run(["hook", "--runtime", "claude"], env,
                   {**base, "hook_event_name": "PreCompact", "trigger": "auto"})
    assert r.returncode == 0 and took < HANG_S / 2
    assert "did not finish within 2s" in json.loads(r.stdout)["systemMessage"]
    del env["CONTINUATION_FAULT"]
    r, _ = _run(["inputs", "--json"], env)
    assert r.returncode == 0 and "keep me" in r.stdout.decode()
    assert "deadline" in (tmp_path / "state" / "logs" / "hooks.log").read_text() or \
        "still busy" in (tmp_path / "state" / "logs" / "hooks.log").read_text()


def test_gemini_compress_check_never_waits_on_special_files(tmp_path, fifo):
    """Gemini's PreCompress reads the transcript's tail and the project's settings.json."""
    from continuation.hooks.gemini_compress import DEFAULT_THRESHOLD, _settings_threshold, \
        will_compress

    (tmp_path / ".gemini").mkdir()
    os.mkfifo(tmp_path / ".gemini" / "settings.json")
    started = time.monotonic()
    for transcript in (str(fifo), "/dev/zero"):
        assert will_compress({"trigger": "auto", "transcript_path": transcript,
                              "cwd": str(tmp_path)}) is False
    assert _settings_threshold(str(tmp_path), {"GEMINI_CLI_HOME": str(tmp_path)}) == \
        DEFAULT_THRESHOLD
    assert time.monotonic() - started < 5


def test_install_and_doctor_refuse_a_fifo_as_the_runtime_config(tmp_path):
    """``~/.codex/hooks.json`` (or ``config.toml``) that is a FIFO: one clear line, no hang."""
    codex = tmp_path / "codex"
    codex.mkdir()
    os.mkfifo(codex / "hooks.json")
    os.mkfifo(codex / "config.toml")
    env = {**os.environ, "CODEX_HOME": str(codex), "HOME": str(tmp_path),
           "CONTINUATION_HOME": str(tmp_path / "state")}
    r, took = _run(["install", "--runtime", "codex"], env)
    err = r.stderr.decode()
    assert r.returncode != 0 and "not a regular file" in err and err.strip().count("\n") == 0
    r, took = _run(["doctor"], env, cwd=tmp_path)
    assert r.returncode == 1 and "not a regular file" in r.stdout.decode()
    assert "Traceback" not in r.stderr.decode()


@pytest.mark.parametrize("name", [5, ["x"], {"p": 1}, None, True, "a\x00b", b"a\x00b"], ids=repr)
def test_a_name_that_cannot_be_a_path_reads_as_no_file(name):
    """A hook payload's ``transcript_path`` may be anything: every reader handles ``OSError``,
    and such a name raises one (not ``TypeError`` or ``ValueError``, which failed the hooks)."""
    from continuation.host.userfiles import NoSuchName, open_regular, read_bounded, read_tail

    for read in (open_regular, lambda n: read_tail(n, 100), lambda n: read_bounded(n, 100)):
        with pytest.raises(NoSuchName):
            read(name)
        with pytest.raises(OSError):
            read(name)
