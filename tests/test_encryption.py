"""Encryption at rest (docs/encryption.md): with a key, no secret the user typed, a tool ran or
printed, or the model said is in any file under the state home (the SQLite file and its WAL,
the spool, logs, contexts, handoff prompts) nor in any git object of the user's repository; the
model still reaches its whole record (through ``continuation source``); a missing, wrong,
unreadable or exposed key is one line for a command and a counted, fail-open lost write for a
hook (nothing written in clear); rotation and decryption re-seal everything; both backends."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from test_rewind_support import HookSession
from test_secret_text import TOKENS
from test_work_record import claude_turn, compaction, context_of, feed
from workspace_repos import git_home, make_repo, write  # noqa: F401

pytest.importorskip("cryptography", reason="the encryption extra (cryptography) is not installed")

from capsule.work_line import parse_work_line  # noqa: E402
from continuation.host import keys  # noqa: E402
from continuation.host.sealing import FILE_MARK  # noqa: E402
from continuation.prove.agent import READ_LIMIT  # noqa: E402
from continuation.session.engine import Engine  # noqa: E402

IN_PROMPT = TOKENS["OpenAI key"]
IN_COMMAND = TOKENS["GitHub token"]
IN_OUTPUT = TOKENS["AWS access key id"]
IN_STOP = TOKENS["Stripe key"]
IN_FILE = TOKENS["Slack token"]
#: a plain word only the user's text holds: no redaction or format hides it, only encryption
PLAIN_WORD = "zanzibar-marmalade-7731"
SECRETS = (IN_PROMPT, IN_COMMAND, IN_OUTPUT, IN_STOP, IN_FILE, PLAIN_WORD)


def cli(*args, env=None, stdin=b""):
    return subprocess.run([sys.executable, "-m", "continuation", *args], input=stdin,
                          capture_output=True, env={**os.environ, **(env or {})}, timeout=180)


@pytest.fixture
def key_env(tmp_path, monkeypatch):
    """A key file outside the state home (``$XDG_CONFIG_HOME/continuation/key``), made by
    ``key init``; no key in the environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CONTINUATION_KEY", raising=False)
    monkeypatch.delenv("CONTINUATION_KEY_FILE", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    return tmp_path / "config" / "continuation" / "key"


def grep_tree(root: Path, needles) -> dict[str, list[str]]:
    """needle -> files under ``root`` whose bytes hold it (every file: store, WAL, spool,
    logs, contexts...)."""
    found: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for needle in needles:
                if needle.encode() in data:
                    found.setdefault(needle, []).append(str(path.relative_to(root)))
    return found


def git_objects(repo: Path) -> bytes:
    return subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo,
                          capture_output=True, check=True).stdout


def secret_session(home: Path, repo: Path) -> HookSession:
    """API keys in a prompt (long enough to spill past the inline limit), a Bash command, its
    output and the Stop message; an untracked deploy.env holding a token; a compaction (capsule,
    snapshot, work record pages, spilled context) and a second turn after it."""
    write(repo, {"deploy.env": f"SLACK={IN_FILE}\n"})
    s = HookSession(home, repo)
    s.start()
    long_request = (f"deploy with OPENAI_API_KEY={IN_PROMPT} and note {PLAIN_WORD}. "
                    + "Then walk every step of the plan below.\n" + "- a careful step\n" * 900)
    pid = s.prompt(long_request)
    for n in range(3):
        command = {"command": f"curl -H 'X-Token: {IN_COMMAND}' https://api.example.com/{n}"}
        call = f"toolu_{uuid.uuid4().hex[:12]}"
        s.send("PreToolUse", prompt_id=pid, tool_name="Bash", tool_input=command,
               tool_use_id=call)
        s.send("PostToolUse", prompt_id=pid, tool_name="Bash", tool_input=command,
               tool_use_id=call, tool_response={"stdout": f"key id {IN_OUTPUT}\n", "stderr": "",
                                                "exit_code": 0, "interrupted": False})
    s.write_file(pid, "notes.txt", "written by the agent\n")  # its own file: snapshotted
    s.stop(pid, f"Deployed; the Stripe key {IN_STOP} works.")
    s.compact()
    pid2 = s.prompt(f"and once more with {IN_PROMPT}")
    s.stop(pid2, "again")
    return s


def test_with_encryption_on_no_secret_is_in_the_state_home_or_the_repository(
        home, tmp_path, git_home, key_env):
    repo = make_repo(tmp_path / "repo", {"README.md": "r\n"})
    r = cli("key", "init")
    assert r.returncode == 0, r.stderr.decode()
    assert key_env.stat().st_mode & 0o777 == 0o600
    assert not str(key_env).startswith(str(home))  # never in the state home
    s = secret_session(home, repo)
    r = cli("rewind", cli_checkpoint(home), "--conversation", "--yes", "--print-prompt")
    assert r.returncode == 0, r.stderr.decode()  # a handoff prompt written too
    assert (home / "handoff").is_dir() and (home / "contexts").is_dir()
    found = grep_tree(home, SECRETS)
    assert found == {}, found
    objects = git_objects(repo)
    assert b"written by the agent" in objects  # (the snapshot is there)
    assert [n for n in SECRETS if n.encode() in objects] == []
    # every text file the boundary left is sealed
    files = [p for f in ("contexts", "handoff") for p in (home / f).rglob("*.md")]
    assert files and all(p.read_bytes().startswith(FILE_MARK) for p in files)
    # what is stored is the user's text: read back with the key
    with Engine(home) as engine:
        texts = [r.text for r in s.thread(engine).inputs()]
    assert IN_PROMPT in texts[0] and PLAIN_WORD in texts[0]


def cli_checkpoint(home) -> str:
    r = cli("checkpoints", "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)["checkpoints"][-1]["checkpoint_id"]


def sealed_reachable(inline: str) -> tuple[list[dict], list[str]]:
    """Every call a model reaches from ``inline`` when the pages and the spill are sealed: the
    `continuation source` commands it names, each run once (an output within READ_LIMIT)."""
    commands = re.findall(r'"([^"]*continuation source context:[^"]+)"', inline.split("\n", 1)[0])
    texts = [inline]
    for command in commands:
        texts.append(_run_source(command))
    pages = []
    for text in list(texts):
        for line in text.splitlines():
            m = re.match(r"^- page \$ (\S*continuation source work:\S+) ", line)
            if m:
                pages.append(m.group(1))
            m = re.match(r"^- \d+ more page\(s\): \$ (\S*continuation source work:\S+):K for K from 1 "
                         r"to (\d+)", line)
            if m:
                pages += [f"{m.group(1)}:{k}" for k in range(1, int(m.group(2)) + 1)]
    for command in dict.fromkeys(pages):
        texts.append(_run_source(command))
        commands.append(command)
    calls = [f for text in texts for line in text.splitlines()
             if (f := parse_work_line(line)) is not None]
    return calls, commands


#: the PATH a login shell starts with (Debian's /etc/profile sets it anew): Codex runs the
#: model's commands in one, so a venv's `continuation` on the runtime's PATH is not on it
LOGIN_PATH = "/usr/bin:/bin"


def _run_source(command: str) -> str:
    """``command`` as the model's shell tool runs it: ``sh -c``, with a login shell's PATH."""
    r = subprocess.run(["sh", "-c", command], capture_output=True, timeout=180,
                       env={**os.environ, "PATH": LOGIN_PATH})
    assert r.returncode == 0, (command, r.stderr.decode())
    out = r.stdout.decode()
    assert len(out) <= READ_LIMIT, (command, len(out))
    return out


def test_the_model_reaches_the_whole_record_through_source_commands(home, key_env):
    assert cli("key", "init").returncode == 0
    session = str(uuid.uuid4())
    turn, commands = claude_turn(session, 200, failing={7, 150},
                                 prompt="run the release plan " + "step by step " * 900)
    feed("claude", turn)
    inline = context_of(feed("claude", compaction(session))[-1][0])
    assert "sealed=yes" in inline and "continuation source context:" in inline.split("\n", 1)[0]
    calls, ran = sealed_reachable(inline)
    seen = {f["text"] for f in calls}
    assert [c for c in commands if f"$ {c}" not in seen] == []
    assert any(":work:" in c or " work:" in c for c in ran)
    assert grep_tree(home, commands[:20]) == {}  # the pages the model read are sealed at rest


def _hook(home, payload: dict, env: dict) -> subprocess.CompletedProcess:
    from continuation.install import default_command

    return subprocess.run([*default_command(), "hook", "--runtime", "claude"],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=120,
                          env={**os.environ, "CONTINUATION_HOME": str(home), **env})


def test_a_missing_or_wrong_key_is_one_line_for_commands_and_a_lost_write_for_hooks(
        home, key_env, tmp_path):
    assert cli("key", "init").returncode == 0
    session = str(uuid.uuid4())
    base = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
            "prompt_id": "p1", "prompt": f"first {PLAIN_WORD}"}
    r = _hook(home, base, {})
    assert r.returncode == 0 and r.stdout.strip() == b"{}", r.stderr
    stored = (home / "store.sqlite3").read_bytes()
    other = keys.key_text(keys.new_key())
    cases = {
        "missing": ({"CONTINUATION_KEY_FILE": str(tmp_path / "nowhere")}, "no key was found"),
        "wrong": ({"CONTINUATION_KEY": other, "CONTINUATION_KEY_FILE": str(tmp_path / "no")},
                  "wrong key"),
        "malformed": ({"CONTINUATION_KEY": "not-a-key", "CONTINUATION_KEY_FILE": str(tmp_path / "no")},
                      "does not hold a key"),
    }
    for name, (env, said) in cases.items():
        r = cli("inputs", env=env)
        err = r.stderr.decode()
        assert r.returncode == 1 and err.count("\n") == 1 and said in err, (name, err)
        assert "Traceback" not in err
        r = _hook(home, {**base, "prompt_id": f"p-{name}", "prompt": f"more {IN_PROMPT}"}, env)
        assert r.returncode == 0, (name, r.stderr)  # fail open
        answer = json.loads(r.stdout)
        if name == "missing":  # told once, with why
            assert ("could not record this hook event" in answer["systemMessage"]
                    and said in answer["systemMessage"]), answer
    trace = json.loads((home / "lost-writes.json").read_text())
    assert trace["lost"] == 3, trace  # each counted
    with Engine(home) as engine:  # with the key: nothing was written meanwhile
        assert [r.input_id for r in engine.find_thread("claude", session).inputs()] == ["p1"]
    assert grep_tree(home, (IN_PROMPT, PLAIN_WORD)) == {}  # and nothing in clear instead
    assert stored  # (the store file was there all along)


def test_key_file_errors_are_one_line(home, key_env, tmp_path):
    assert cli("key", "init").returncode == 0
    assert cli("status").returncode == 0
    key_env.chmod(0o644)
    r = cli("status")
    assert r.returncode == 1 and b"can be read by others (mode 644): chmod 600 it" in r.stderr
    key_env.chmod(0o600)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    r = cli("status", env={"CONTINUATION_KEY_FILE": str(folder)})  # unreadable as a file
    assert r.returncode == 1 and b"cannot read the key file" in r.stderr, r.stderr
    bad = tmp_path / "bad-key"
    bad.write_bytes(b"\xff\xfe not a key")
    bad.chmod(0o600)
    r = cli("status", env={"CONTINUATION_KEY_FILE": str(bad)})
    assert r.returncode == 1 and b"does not hold a key" in r.stderr
    doctor = cli("doctor", "--json", env={"CONTINUATION_KEY_FILE": str(bad)})
    found = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert found["encryption"]["status"] == "problem"
    ok = cli("doctor", "--json")
    found = {f["check"]: f for f in json.loads(ok.stdout)["findings"]}
    assert found["encryption"]["status"] == "ok"


def test_rotation_reseals_the_store_and_the_files_and_a_cut_rotation_finishes(
        home, tmp_path, git_home, key_env):
    repo = make_repo(tmp_path / "repo", {"README.md": "r\n"})
    assert cli("key", "init").returncode == 0
    old_key = keys.read_key_file(str(key_env))
    s = secret_session(home, repo)
    r = cli("key", "rotate")
    assert r.returncode == 0, r.stderr.decode()
    new_key = keys.read_key_file(str(key_env))
    assert new_key != old_key and not Path(f"{key_env}.next").exists()
    new_id = keys.key_id(new_key)
    files = [p for p in (home / "contexts").rglob("*.md")]
    assert files and all(p.read_bytes().startswith(FILE_MARK + new_id.encode()) for p in files)
    with Engine(home) as engine:
        assert engine.store.encryption()["key_id"] == new_id
        assert IN_PROMPT in s.thread(engine).inputs()[0].text
    # the old key alone opens nothing any more
    r = cli("inputs", env={"CONTINUATION_KEY": keys.key_text(old_key),
                           "CONTINUATION_KEY_FILE": str(tmp_path / "none")})
    assert r.returncode == 1 and b"wrong key" in r.stderr
    assert grep_tree(home, SECRETS) == {}
    # a rotation cut short after the store was sealed under the next key: run again, it finishes
    from continuation.host.sealing import Sealer
    from continuation.store.sealed import Codec

    third = keys.new_key()
    keys.write_key_file(f"{key_env}.next", third)
    with Engine(home) as engine:
        both = {new_id: new_key, keys.key_id(third): third}
        engine.store.reseal(Codec(Sealer(both, keys.key_id(third)), keys.key_id(third)))
    r = cli("key", "rotate", "--json")
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["resumed"] is True
    assert keys.read_key_file(str(key_env)) == third and not Path(f"{key_env}.next").exists()
    assert all(p.read_bytes().startswith(FILE_MARK + keys.key_id(third).encode())
               for p in (home / "contexts").rglob("*.md"))
    # and back into clear
    r = cli("key", "disable")
    assert r.returncode == 0, r.stderr.decode()
    assert not any(p.read_bytes().startswith(FILE_MARK) for p in (home / "contexts").rglob("*.md"))
    with Engine(home) as engine:
        assert engine.store.encryption() is None
    assert PLAIN_WORD in grep_tree(home, [PLAIN_WORD])


def test_the_key_in_the_os_keyring(home, key_env, tmp_path, monkeypatch):
    """``key init --keyring``: the key is in the keyring (a file-backed test backend here), not
    in a file; hooks and commands find it there."""
    backend = tmp_path / "keyring.json"
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring_file_backend.FileKeyring")
    monkeypatch.setenv("TEST_KEYRING_FILE", str(backend))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    pytest.importorskip("keyring", reason="the keyring package is not installed")
    r = cli("key", "init", "--keyring")
    assert r.returncode == 0, r.stderr.decode()
    assert not key_env.exists() and "continuation" in json.loads(backend.read_text())
    session = str(uuid.uuid4())
    r = _hook(home, {"session_id": session, "cwd": str(tmp_path), "prompt_id": "p1",
                     "hook_event_name": "UserPromptSubmit", "prompt": PLAIN_WORD}, {})
    assert r.returncode == 0 and r.stdout.strip() == b"{}", r.stderr
    assert grep_tree(home, [PLAIN_WORD]) == {}
    r = cli("inputs")
    assert r.returncode == 0 and PLAIN_WORD.encode() in r.stdout
    r = cli("key", "rotate")
    assert r.returncode == 0, r.stderr.decode()
    assert cli("inputs").returncode == 0


def test_hot_path_with_encryption_off_loads_no_crypto_and_on_seals(home, tmp_path, key_env):
    """Off: the hook hot path imports no crypto (tests/test_hooks.py holds the import list);
    on: the same hook seals what it writes."""
    from test_hooks import HOT_PATH_NEVER

    assert {"cryptography", "keyring"} <= set(HOT_PATH_NEVER)
    payload = {"session_id": "s", "cwd": str(tmp_path), "prompt_id": "p1",
               "hook_event_name": "UserPromptSubmit", "prompt": PLAIN_WORD}
    r = _hook(home, payload, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert r.returncode == 0 and b"cryptography" not in r.stderr
    assert grep_tree(home, [PLAIN_WORD])  # off: in clear (0600), as before
    assert cli("key", "init").returncode == 0
    r = _hook(home, {**payload, "prompt_id": "p2"}, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert r.returncode == 0 and b"cryptography" in r.stderr
    assert grep_tree(home, [PLAIN_WORD]) == {}


@pytest.mark.parametrize("with_spool", [False, True])
def test_postgresql_store_and_its_spool_hold_no_secret(pg_cluster, pg_url, tmp_path, key_env,
                                                      monkeypatch, with_spool):
    """The server store: rows sealed in the server's own files; a fact spooled while the
    server is away is sealed too (the spool follows the server's key), and drained."""
    home = tmp_path / "laptop"
    monkeypatch.setenv("CONTINUATION_STORE", pg_url)
    monkeypatch.setenv("CONTINUATION_HOME", str(home))
    r = cli("key", "init")
    assert r.returncode == 0, r.stderr.decode()
    assert (home / "store-encryption.json").exists()
    session = str(uuid.uuid4())
    word = f"{PLAIN_WORD}-{int(with_spool)}"
    base = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}
    assert _hook(home, {**base, "prompt_id": "p1", "prompt": f"{word} one"}, {}).returncode == 0
    if with_spool:
        pg_cluster.stop()
        try:
            r = _hook(home, {**base, "prompt_id": "p2", "prompt": f"{word} two"}, {})
            assert r.returncode == 0 and r.stdout.strip() == b"{}", r.stderr
            assert (home / "spool.sqlite3").exists()
            assert grep_tree(home, [word]) == {}  # the spool is sealed
        finally:
            pg_cluster.start()
        r = _hook(home, {**base, "prompt_id": "p3", "prompt": f"{word} three"}, {})
        assert r.returncode == 0, r.stderr  # drains the spool
        assert not (home / "spool.sqlite3").exists()
    r = cli("inputs", "--thread", session, "--json")
    assert r.returncode == 0, r.stderr.decode()
    texts = [i["text"] for i in json.loads(r.stdout)["inputs"]]
    assert texts == [f"{word} one"] + ([f"{word} two", f"{word} three"] if with_spool else [])
    assert grep_tree(home, [word]) == {}
    cluster_files = grep_tree(Path(pg_cluster.data), [word]) if os.access(
        pg_cluster.data, os.R_OK) else {}
    assert cluster_files == {}, cluster_files


def test_the_cipher_is_cryptographys_public_aesgcm():
    """The hook takes AESGCM from the binding the public module re-exports (a cheaper import):
    the very same class."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from continuation.host.sealing import Sealer, aesgcm_class

    assert aesgcm_class() is AESGCM
    key = keys.new_key()
    sealer = Sealer({keys.key_id(key): key}, keys.key_id(key))
    blob = sealer.seal(b"opal")
    assert AESGCM(key).decrypt(blob[:12], blob[12:], None) == b"opal"
