"""What we create under the state home is owner-only whatever the umask; a
folder we did not create keeps its mode; the hook log keeps no payload text."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes")

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1"}


def _hook(env: dict, payload, umask: int = 0) -> subprocess.CompletedProcess:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "codex"],
                          input=raw, env=env, capture_output=True, timeout=120,
                          preexec_fn=lambda: os.umask(umask))


def _session(tmp_path: Path, env: dict, umask: int = 0) -> None:
    """A prompt, a malformed payload, a compaction (capsule, workspace snapshot, lock) in a git
    repository and one in a plain folder (shadow repository), all under ``umask``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env={**os.environ, **GIT_ENV})
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env={**os.environ, **GIT_ENV})
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init"], check=True,
                   env={**os.environ, **GIT_ENV})
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "b.txt").write_text("b\n")
    for cwd, sid in ((repo, "s-git"), (plain, "s-plain")):
        for payload in (
            {"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": str(cwd),
             "turn_id": "t1", "prompt": "do it"},
            {"hook_event_name": "PreCompact", "session_id": sid, "cwd": str(cwd),
             "trigger": "manual"},
        ):
            r = _hook(env, payload, umask)
            assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    _hook(env, b"{malformed: the secret prompt text sk-12345", umask)


def _modes(home: Path) -> dict[str, int]:
    """Mode of everything under ``home`` except the insides of a shadow repository (git's own
    files, inside our 0700 folder)."""
    found = {}
    for folder, dirs, files in os.walk(home):
        if Path(folder).name == "shadow.git":
            dirs[:], files = [], []
        for name in dirs + files:
            path = Path(folder) / name
            found[str(path.relative_to(home))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_everything_created_is_private_under_umask_000(tmp_path):
    home = tmp_path / "state" / "deep" / "home"  # the parents do not exist either
    env = {**os.environ, **GIT_ENV, "CONTINUATION_HOME": str(home), "HOME": str(tmp_path)}
    _session(tmp_path, env, umask=0)
    modes = _modes(tmp_path / "state")
    assert any(p.endswith("hooks.log") for p in modes)
    assert any(p.endswith("deep/home/store.sqlite3") for p in modes)  # capsules live in it
    assert any(p.endswith("/lock") for p in modes)
    assert any(p.endswith("workspace.json") for p in modes)
    wrong = {p: oct(m) for p, m in modes.items()
             if m != (0o700 if (tmp_path / "state" / p).is_dir() else 0o600)}
    assert not wrong
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700


def test_default_state_home_parents_are_created_private(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CONTINUATION_HOME", "XDG_STATE_HOME")}
    env.update(GIT_ENV, HOME=str(user))
    r = _hook(env, {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(user),
                    "turn_id": "t", "prompt": "x"}, umask=0)
    assert r.returncode == 0
    for folder in (user / ".local", user / ".local" / "state",
                   user / ".local" / "state" / "continuation"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((user / ".local/state/continuation/store.sqlite3").stat().st_mode) == 0o600


def test_an_existing_shared_home_keeps_its_mode(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    env = {**os.environ, **GIT_ENV, "CONTINUATION_HOME": str(shared), "HOME": str(tmp_path)}
    _session(tmp_path, env, umask=0o022)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE((shared / "logs").stat().st_mode) == 0o700


def test_hook_log_keeps_length_and_hash_not_payload_text(tmp_path):
    home = tmp_path / "state"
    env = {**os.environ, "CONTINUATION_HOME": str(home), "HOME": str(tmp_path)}
    raw = b"{malformed: the secret prompt text sk-12345"
    _hook(env, raw)
    log = (home / "logs" / "hooks.log").read_text()
    assert "secret" not in log and "sk-12345" not in log
    import hashlib

    assert f"payload_bytes={len(raw)}" in log and hashlib.sha256(raw).hexdigest() in log
