"""Secret-looking untracked files stay out of workspace snapshots (continuation/workspace/
secrets.py): by name (each pattern class) and by content (each token format, a bounded scan),
recorded as left out, listed as kept and never deleted by a rewind, named by drift, never pushed;
the user adds and removes patterns (state home, project, environment)."""
from __future__ import annotations

import json
import subprocess

import pytest
from test_rewind_support import HookSession, cli, cli_json
from test_secret_text import TOKENS
from workspace_repos import git, git_home, make_repo, write  # noqa: F401

from continuation.host.secret_text import TOKEN_FORMATS
from continuation.workspace import drift, plan_restore, take_snapshot
from continuation.workspace.secrets import (DEFAULT_ALLOWED, DEFAULT_PATTERNS, PATTERN_CLASSES,
                                            SCAN_BYTES, SecretFiles, _Rules, patterns)

#: sample paths of each pattern class
SECRET_NAMES = {
    "environment files": [".env", ".env.production", "config/prod.env", ".envrc"],
    "private keys and certificate stores": ["tls/server.pem", "tls/server.key", "cert.p12",
                                            "cert.pfx", "app.jks", "app.keystore", "putty.ppk",
                                            "vpn.ovpn"],
    "SSH keys": ["id_rsa", "keys/id_ed25519", "id_ecdsa", "old/id_dsa"],
    "credential files of common tools": [
        ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", ".pgpass",
        ".vault-token", "home/.aws/credentials", "home/.docker/config.json", "home/.kube/config",
        "kubeconfig", "cluster.kubeconfig", "credentials", "credentials.json",
        "deploy/credentials.yml", "credentials.yaml", "gcp-credentials.json",
        "service-account-prod.json", "client_secret_1.json",
        "application_default_credentials.json"],
    "secrets files": ["secrets.json", "secrets.yml", "config/secrets.yaml", "secrets.toml",
                      ".secrets", "api.secret", "all.secrets"],
    "infrastructure state": ["terraform.tfstate", "infra/terraform.tfstate.backup", "prod.tfvars"],
}
ALL_SECRET_NAMES = [n for names in SECRET_NAMES.values() for n in names]


@pytest.fixture
def repo(tmp_path, git_home):
    return make_repo(tmp_path / "repo", {"README.md": "hello\n", "app.py": "print(1)\n"})


def _tree(repo, ref) -> set[str]:
    return set(git(repo, "ls-tree", "-r", "--name-only", ref.snapshot_ref).split())


def _all_objects(repo) -> bytes:
    return subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo,
                          capture_output=True, check=True).stdout


def test_every_pattern_class_has_samples():
    assert set(SECRET_NAMES) == set(PATTERN_CLASSES)
    for cls, samples in SECRET_NAMES.items():  # each default pattern is exercised by a sample
        for pattern in PATTERN_CLASSES[cls]:
            alone = _Rules((pattern,))
            assert any(alone.last_match(s) == 0 for s in samples), pattern


@pytest.mark.parametrize("cls", list(PATTERN_CLASSES))
def test_each_pattern_class_is_left_out_by_name(repo, git_home, cls):
    write(repo, {name: "value\n" for name in SECRET_NAMES[cls]})
    write(repo, {"notes.txt": "plain work\n"})
    ref = take_snapshot(repo, "t1-names", 1, state_home=git_home)
    tree = _tree(repo, ref)
    assert [n for n in SECRET_NAMES[cls] if n in tree] == []
    assert {"notes.txt", "app.py"} <= tree
    left = {x["path"]: x["why"] for x in ref.secrets_left_out}
    assert set(left) == set(SECRET_NAMES[cls])
    assert all(why.startswith("its name matches the secret pattern ") for why in left.values())
    assert b"value\n" not in _all_objects(repo)


def test_templates_and_public_keys_are_kept_but_scanned(repo, git_home):
    write(repo, {".env.example": "API_KEY=\n", "id_ed25519.pub": "ssh-ed25519 AAAA me\n",
                 ".env.sample": f"KEY={TOKENS['GitHub token']}\n"})
    ref = take_snapshot(repo, "t1-templates", 1, state_home=git_home)
    tree = _tree(repo, ref)
    assert {".env.example", "id_ed25519.pub"} <= tree
    assert ".env.sample" not in tree  # a real token in a template is still a secret
    assert ref.secrets_left_out == [{"path": ".env.sample",
                                     "why": "its content holds a GitHub token"}]
    assert set(DEFAULT_ALLOWED) >= {".env.example", "*.pub"}


@pytest.mark.parametrize("kind", list(TOKEN_FORMATS))
def test_each_token_format_is_left_out_by_content(repo, git_home, kind):
    write(repo, {"notes/settings.txt": f"settings\n{TOKENS[kind]}\nmore\n",
                 "notes/clean.txt": "sk-short and AKIA are not tokens\n"})
    ref = take_snapshot(repo, "t1-tokens", 1, state_home=git_home)
    tree = _tree(repo, ref)
    assert "notes/clean.txt" in tree and "notes/settings.txt" not in tree
    assert ref.secrets_left_out == [{"path": "notes/settings.txt",
                                     "why": f"its content holds a {kind}"}]
    assert TOKENS[kind].encode() not in _all_objects(repo)  # in no git object of the repository


def test_the_content_scan_is_bounded(repo, git_home, monkeypatch):
    big = "x" * SCAN_BYTES + TOKENS["GitHub token"]
    at_cap = TOKENS["GitHub token"] + "\n" + "y" * (SCAN_BYTES - len(TOKENS["GitHub token"]) - 1)
    write(repo, {"big.log": big, "at_cap.txt": at_cap,
                 "blob.bin": b"\0\1" + TOKENS["private key"].encode()})
    ref = take_snapshot(repo, "t1-big", 1, state_home=git_home)
    tree = _tree(repo, ref)
    assert {"big.log", "blob.bin"} <= tree  # larger or binary files are not read
    assert "at_cap.txt" not in tree  # a file of exactly SCAN_BYTES is read whole
    monkeypatch.setenv("CONTINUATION_SECRET_SCAN", "0")
    write(repo, {"later.txt": TOKENS["OpenAI key"]})
    assert "later.txt" in _tree(repo, take_snapshot(repo, "t1-big", 2, state_home=git_home))


def test_tracked_files_are_the_repositorys_own(repo, git_home):
    write(repo, {".env": "TRACKED=1\n"})
    git(repo, "add", "-f", ".env")
    git(repo, "commit", "-qm", "the team tracks it")
    write(repo, {".env": f"TRACKED=2 {TOKENS['npm token']}\n"})
    ref = take_snapshot(repo, "t1-tracked", 1, state_home=git_home)
    assert ".env" in _tree(repo, ref) and ref.secrets_left_out == []


def test_an_untracked_file_that_gains_a_token_leaves_the_next_snapshot(repo, git_home):
    write(repo, {"notes.txt": "plain\n"})
    assert "notes.txt" in _tree(repo, take_snapshot(repo, "t1-gain", 1, state_home=git_home))
    write(repo, {"notes.txt": f"plain\n{TOKENS['Slack token']}\n"})
    ref = take_snapshot(repo, "t1-gain", 2, state_home=git_home)
    assert "notes.txt" not in _tree(repo, ref)


def test_a_folder_outside_git_checks_changed_files_too(tmp_path, git_home):
    folder = tmp_path / "plain"
    write(folder, {"notes.txt": "plain\n", "keep.txt": "k\n"})
    first = take_snapshot(folder, "t1-shadow", 1, state_home=git_home)
    assert first.kind == "shadow"
    write(folder, {"notes.txt": f"now {TOKENS['Stripe key']}\n", ".env": "A=1\n"})
    ref = take_snapshot(folder, "t1-shadow", 2, state_home=git_home)
    assert {x["path"] for x in ref.secrets_left_out} == {"notes.txt", ".env"}
    from continuation.workspace.compare import open_snapshot_target
    from continuation.workspace.workspace_target import resolve_workspace

    target = open_snapshot_target(resolve_workspace(folder, git_home), ref)
    listed = target.run(["ls-tree", "-r", "--name-only", ref.snapshot_commit])[1].decode().split()
    assert listed == ["keep.txt"]
    objects = target.run(["cat-file", "--batch-all-objects", "--batch"])[1]
    assert TOKENS["Stripe key"].encode() not in objects  # never hashed into the shadow store


def test_patterns_can_be_added_and_removed(repo, git_home, monkeypatch):
    git_home.mkdir(parents=True, exist_ok=True)
    (git_home / "secret-patterns").write_text("# mine\n*.sqlite\n!.env\n")
    (repo / ".continuation").mkdir()
    (repo / ".continuation" / "secret-patterns").write_text("private/\n")
    monkeypatch.setenv("CONTINUATION_SECRET_PATTERNS", "*.dump:!*.pem:!fixtures/")
    found = patterns(git_home, repo)
    assert found[:len(DEFAULT_PATTERNS)] == DEFAULT_PATTERNS
    assert found[-6:] == ("*.sqlite", "!.env", "private/", "*.dump", "!*.pem", "!fixtures/")
    write(repo, {".env": "A=1\n", "db.sqlite": "rows\n", "private/x.txt": "x\n", "a.dump": "d\n",
                 "c.pem": "cert\n", "c.key": "key\n", "prod.env": "B=2\n",
                 "fixtures/fake.txt": TOKENS["AWS access key id"] + "\n"})
    ref = take_snapshot(repo, "t1-cfg", 1, state_home=git_home)
    tree = _tree(repo, ref)
    # `!.env` wins over the defaults `.env` and `*.env` before it, for .env only; a user's `!`
    # also means "not a secret": fixtures/ is not scanned
    assert {".env", "c.pem", "fixtures/fake.txt"} <= tree
    assert not {"db.sqlite", "private/x.txt", "a.dump", "c.key", "prod.env"} & tree
    # a later pattern takes a file back out
    monkeypatch.setenv("CONTINUATION_SECRET_PATTERNS", "!*.pem:c.pem")
    assert SecretFiles(git_home, repo).name_matches("c.pem") == "c.pem"
    assert SecretFiles(git_home, repo).name_matches("d.pem") is None


def test_a_rewind_lists_a_secret_file_as_kept_and_never_deletes_it(repo, git_home):
    write(repo, {".env": "A=1\n"})
    ref = take_snapshot(repo, "t1-rw", 1, state_home=git_home)
    assert ref.secrets_left_out == [{"path": ".env",
                                     "why": "its name matches the secret pattern .env"}]
    write(repo, {"deploy.env": TOKENS["Stripe key"], "made.txt": "the agent's\n",
                 "notes/k.txt": TOKENS["GitLab token"]})
    for at_once in (False, True):
        plan = plan_restore(ref, state_home=git_home, at_once=at_once,
                            session_created=["deploy.env", "made.txt", "notes/k.txt", ".env"])
        assert plan.deleted == ["made.txt"], at_once
        kept = {k.path: k.reason for k in plan.secrets}
        assert kept == {
            ".env": "its name matches the secret pattern .env (left out of the checkpoint)",
            "deploy.env": "its name matches the secret pattern *.env",
            "notes/k.txt": "its content holds a GitLab token"}, at_once
        text = plan.describe()
        assert ("  keep      deploy.env (a secret file, never snapshotted: its name matches the "
                "secret pattern *.env)") in text
    assert (repo / "deploy.env").exists() and (repo / ".env").exists()


def test_drift_says_which_files_were_left_out_and_why(repo, git_home):
    write(repo, {".env": "A=1\n"})
    ref = take_snapshot(repo, "t1-drift", 1, state_home=git_home)
    write(repo, {"new.txt": "n\n", "token.txt": TOKENS["Hugging Face token"]})
    report = drift(ref, state_home=git_home)
    assert report.added == ["new.txt"]
    assert report.left_out == [
        {"path": ".env", "why": "its name matches the secret pattern .env (left out of the "
                                "checkpoint)"},
        {"path": "token.txt", "why": "its content holds a Hugging Face token"}]


def test_drift_and_rewind_commands_name_left_out_files(home, tmp_path, git_home):
    repo = make_repo(tmp_path / "cli-repo", {"README.md": "r\n"})
    write(repo, {"deploy.env": "DB=1\n"})
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("start")
    s.stop(p1)
    s.compact()
    p2 = s.prompt("edit")
    s.write_file(p2, "made.py", "m = 1\n")
    s.stop(p2)
    r = cli("drift", home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert ("  left out  deploy.env  (a secret file, never snapshotted: its name matches the "
            "secret pattern *.env (left out of the checkpoint))") in r.stdout.decode()
    data = cli_json("drift", home=home)
    assert data["report"]["left_out"][0]["path"] == "deploy.env"
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]
    r = cli("restore", cp, "--dry-run", home=home)
    out = r.stdout.decode()
    assert "delete    made.py" in out and "keep      deploy.env (a secret file" in out
    assert (repo / "deploy.env").read_text() == "DB=1\n"


def test_a_snapshot_whose_tree_holds_a_secret_name_is_not_pushed(repo, git_home, tmp_path,
                                                                monkeypatch, capsys):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    monkeypatch.setenv("CONTINUATION_SNAPSHOT_REMOTE", "origin")
    write(repo, {".env": "A=1\n"})  # left out: the snapshot may go
    take_snapshot(repo, "t1-push", 1, state_home=git_home)
    pushed = git(remote, "for-each-ref", "--format=%(refname)").split()
    assert "refs/continuation/t1-push/1" in pushed
    write(repo, {"server.key": "k\n"})
    git(repo, "add", "server.key")  # tracked, so the snapshot holds it
    take_snapshot(repo, "t1-push", 2, state_home=git_home)
    pushed = git(remote, "for-each-ref", "--format=%(refname)").split()
    assert "refs/continuation/t1-push/2" not in pushed
    assert "not pushing refs/continuation/t1-push/2" in capsys.readouterr().err
    assert json.loads(json.dumps(pushed))  # the remote still holds only the first


def test_a_file_scanned_before_is_not_read_again_until_it_changes(repo, git_home, monkeypatch):
    import os
    import time

    from continuation.workspace import secrets as module

    write(repo, {"old.txt": "plain\n", "key.txt": TOKENS["npm token"] + "\n"})
    past = time.time() - 60  # older than RACY_S: kept
    for name in ("old.txt", "key.txt"):
        os.utime(repo / name, (past, past))
    read = []
    real = module.token_in_file
    monkeypatch.setattr(module, "token_in_file", lambda p: read.append(p.name) or real(p))
    take_snapshot(repo, "t1-cache", 1, state_home=git_home)
    assert sorted(read) == ["key.txt", "old.txt"]
    read.clear()
    ref = take_snapshot(repo, "t1-cache", 2, state_home=git_home)
    assert read == [] and [x["path"] for x in ref.secrets_left_out] == ["key.txt"]
    write(repo, {"old.txt": f"now {TOKENS['npm token']}\n"})  # changed: read again
    ref = take_snapshot(repo, "t1-cache", 3, state_home=git_home)
    assert read == ["old.txt"] and {x["path"] for x in ref.secrets_left_out} == {"key.txt", "old.txt"}
    kept = (git_home / "workspaces").rglob("secret-scan.json")
    assert all(TOKENS["npm token"] not in p.read_text() for p in kept)  # no content kept
