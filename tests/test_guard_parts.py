"""The recovery loop's parts: the guard file, the check runner, the outside-effect test."""
from __future__ import annotations

import os
import sys
import time

import pytest

from continuation.guard import config as guard_config
from continuation.guard.config import GuardConfig, GuardConfigError
from continuation.guard.runner import run_check
from continuation.toolcalls.effects import outside_effect


def _write_guard(root, text) -> None:
    folder = root / ".continuation"
    folder.mkdir(exist_ok=True)
    (folder / "guard.json").write_text(text, encoding="utf-8")


def test_a_workspace_without_a_guard_file_has_no_guard(tmp_path):
    assert guard_config.load(str(tmp_path)) is None
    assert guard_config.load(None) is None


def test_the_guard_file_round_trips_with_its_defaults(tmp_path):
    written = GuardConfig("pytest -q", when="change", every=3, policy="report", timeout=7.5)
    path = guard_config.write(str(tmp_path), written)
    assert path == str(tmp_path / ".continuation" / "guard.json")
    loaded = guard_config.load(str(tmp_path))
    assert loaded == written and loaded.origin == path
    assert (loaded.rewinds_per_input, loaded.failures_before_rewind, loaded.fatal_exit_codes) == (3, 2, [])
    assert loaded.hook_seconds == 7 + guard_config.HOOK_MARGIN_S


@pytest.mark.parametrize("text, says", [
    ("{", "not valid JSON"),
    ("[]", "must hold a JSON object"),
    ("{}", "'command' is missing"),
    ('{"command": ""}', "non-empty command line"),
    ('{"command": "x", "polcy": "halt"}', "unknown setting 'polcy'"),
    ('{"command": "x", "policy": "retry"}', "'policy' must be one of"),
    ('{"command": "x", "when": "always"}', "'when' must be one of"),
    ('{"command": "x", "every": 0}', "'every' must be"),
    ('{"command": "x", "every": true}', "'every' must be"),
    ('{"command": "x", "timeout": "10"}', "'timeout' must be"),
    ('{"command": "x", "timeout": 0}', "'timeout' must be"),
    ('{"command": "x", "fatal_exit_codes": [1, "2"]}', "'fatal_exit_codes' must be"),
    ('{"command": "x", "output_bytes": 10}', "'output_bytes' must be"),
    ('{"command": "x", "output_bytes": 1000000000}', "'output_bytes' must be at most"),
    ("\udcff", "not valid JSON"),
])
def test_a_guard_file_that_cannot_be_used_is_refused_naming_the_file(tmp_path, text, says):
    folder = tmp_path / ".continuation"
    folder.mkdir()
    (folder / "guard.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(GuardConfigError) as caught:
        guard_config.load(str(tmp_path))
    assert says in str(caught.value) and "guard.json" in str(caught.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_huge_file_as_the_guard_file_is_refused_not_waited_on(tmp_path):
    folder = tmp_path / ".continuation"
    folder.mkdir()
    os.mkfifo(folder / "guard.json")
    t0 = time.monotonic()
    with pytest.raises(GuardConfigError, match="cannot be read"):
        guard_config.load(str(tmp_path))
    assert time.monotonic() - t0 < 5
    os.unlink(folder / "guard.json")
    (folder / "guard.json").write_text('{"command": "x", "x": "' + "a" * 100_000 + '"}')
    with pytest.raises(GuardConfigError, match="cannot be read"):
        guard_config.load(str(tmp_path))


def test_the_hooks_spell_the_guard_file_and_the_mark_as_the_guard_does(tmp_path):
    from continuation.guard.summary import MARK
    from continuation.hooks import handlers

    assert os.path.join(str(tmp_path), *handlers.GUARD_FILE) == guard_config.path_in(str(tmp_path))
    assert handlers.GUARD_MARK == MARK
    assert not handlers.guard_present(str(tmp_path))
    _write_guard(tmp_path, '{"command": "true"}')
    assert handlers.guard_present(str(tmp_path))


# -- the runner ------------------------------------------------------------------------------

def test_verdicts_by_exit_code(tmp_path):
    assert run_check("true", str(tmp_path), timeout=10).verdict == "pass"
    failed = run_check("echo broken; exit 3", str(tmp_path), timeout=10)
    assert (failed.verdict, failed.exit_code, failed.output.strip()) == ("fail", 3, "broken")
    assert run_check("exit 3", str(tmp_path), timeout=10, fatal_codes=(3,)).verdict == "fatal"
    missing = run_check("no-such-command-anywhere", str(tmp_path), timeout=10)
    assert missing.verdict == "error" and "could not run" in missing.error


def test_the_check_runs_in_the_workspace_with_empty_stdin(tmp_path):
    (tmp_path / "marker").write_text("here\n")
    run = run_check("cat marker; cat; echo \"[$CONTINUATION_GUARD]\"", str(tmp_path), timeout=10)
    assert run.passed and run.output.split() == ["here", "[1]"]


@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_a_check_past_its_timeout_is_ended_with_what_it_started(tmp_path):
    late = tmp_path / "late"
    t0 = time.monotonic()
    run = run_check(f"(sleep 2; touch {late}) & sleep 30", str(tmp_path), timeout=0.5)
    assert time.monotonic() - t0 < 10
    assert run.verdict == "timeout" and run.timed_out and run.exit_code is None
    time.sleep(2.5)
    assert not late.exists(), "the check's background child outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by whoever adopted it) is gone as far as work goes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _pid_from(path, within: float = 10.0) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return int(text)
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def _gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_what_a_passing_check_left_running_is_ended_with_it(tmp_path):
    """A check that forks a daemon (a test server it never stops) and exits: the daemon is
    ended with the check, not left running (one more at every run), and holding the check's
    output open does not keep the runner waiting."""
    pidfile = tmp_path / "daemon.pid"
    t0 = time.monotonic()
    run = run_check(f"sleep 300 & echo $! > {pidfile}; echo started", str(tmp_path), timeout=60)
    assert run.verdict == "pass" and run.output.strip() == "started"
    assert time.monotonic() - t0 < 30
    assert _gone(_pid_from(pidfile)), "the check's daemon outlived the check"


@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_check_does_not_outlive_the_process_that_ran_it(tmp_path, signal_name):
    """A runtime ends a hook past its own timeout (SIGKILL, which no handler sees): the check
    the hook was running, and what the check started, end with it instead of running on with
    nobody left to enforce its timeout."""
    import signal
    import subprocess

    pidfile = tmp_path / "check.pid"
    script = ("from continuation.guard.runner import run_check; "
              f"run_check('sleep 300 & echo $! > {pidfile}; wait', {str(tmp_path)!r}, timeout=600)")
    runner = subprocess.Popen([sys.executable, "-c", script])
    try:
        pid = _pid_from(pidfile, within=30)
        assert _alive(pid)
        runner.send_signal(getattr(signal, signal_name))
        runner.wait(10)
        assert _gone(pid), f"the check outlived its runner ended by {signal_name}"
    finally:
        runner.kill()
        runner.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="signals")
def test_a_check_ended_by_a_signal_fails_with_the_signal_said(tmp_path):
    run = run_check("echo dying; kill -9 $$", str(tmp_path), timeout=30)
    assert (run.verdict, run.exit_code, run.output.strip()) == ("fail", -9, "dying")


def test_long_output_keeps_its_first_and_last_parts(tmp_path):
    run = run_check("echo FIRST; seq 1 200000; echo LAST", str(tmp_path), timeout=30,
                    output_bytes=1000)
    assert run.output.startswith("FIRST") and run.output.rstrip().endswith("LAST")
    assert "bytes of output left out" in run.output and len(run.output) < 1200
    assert run.output_total > 1_000_000


# -- outside effects -------------------------------------------------------------------------

@pytest.mark.parametrize("tool, args, outside", [
    ("Bash", {"command": "git push origin main"}, True),
    ("Bash", {"command": "cd app && FOO=1 git push --force"}, True),
    ("Bash", {"command": "git status && git diff"}, False),
    ("Bash", {"command": "git -C ../other push origin HEAD"}, True),
    ("Bash", {"command": "python -m pytest -q"}, False),
    ("Bash", {"command": "./deploy.sh production"}, True),
    ("Bash", {"command": "make deploy"}, True),
    ("Bash", {"command": "make test"}, False),
    ("Bash", {"command": "npm publish"}, True),
    ("Bash", {"command": "curl -s https://example.com"}, False),
    ("Bash", {"command": "curl -X POST https://example.com/hook -d x=1"}, True),
    ("Bash", {"command": "echo done > deploy.log"}, False),
    ("Bash", {"command": "kubectl get pods"}, False),
    ("Bash", {"command": "kubectl apply -f k8s.yaml"}, True),
    ("exec_command", {"cmd": ["bash", "-lc", "gh pr create --fill"]}, True),
    ("run_shell_command", {"command": "twine upload dist/*"}, True),
    ("Edit", {"file_path": "deploy.py"}, False),
    ("replace", {"file_path": "a.py"}, False),
    ("Read", {"file_path": "x"}, False),
    ("mcp__slack__post_message", {"text": "hi"}, True),
    ("SomeNewTool", {}, True),
])
def test_calls_that_reach_outside_the_workspace(tool, args, outside):
    assert bool(outside_effect(tool, args)) is outside


# -- install --guard and the hook deadline -----------------------------------------------------

def _install(tmp_path, *args):
    import subprocess

    env = {**os.environ, "HOME": str(tmp_path / "home"), "CONTINUATION_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "continuation", "install", "--scope", "project",
                           "--project-dir", str(tmp_path / "proj"), *args], capture_output=True,
                          text=True, timeout=120, env=env)


def _timeouts(path):
    import json

    hooks = json.loads(path.read_text())["hooks"]
    return {event: groups[0]["hooks"][0]["timeout"] for event, groups in hooks.items()}


def test_install_guard_writes_the_file_and_gives_the_hooks_time_for_the_check(tmp_path):
    (tmp_path / "proj").mkdir()
    done = _install(tmp_path, "--runtime", "claude", "--guard", "pytest -q", "--guard-policy",
                    "report", "--guard-timeout", "120")
    assert done.returncode == 0, done.stderr
    guard = guard_config.load(str(tmp_path / "proj"))
    assert (guard.command, guard.policy, guard.timeout, guard.when) == ("pytest -q", "report", 120, "turn")
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    timeouts = _timeouts(settings)
    assert timeouts["Stop"] == timeouts["PostToolUse"] == timeouts["SessionStart"] == guard.hook_seconds
    assert timeouts["UserPromptSubmit"] == 30  # the prompt hook never runs the check
    # a plain install again keeps the time the project's check needs; --guard keeps the rest
    assert _install(tmp_path, "--runtime", "claude").returncode == 0
    assert _timeouts(settings)["Stop"] == guard.hook_seconds
    assert _install(tmp_path, "--runtime", "gemini", "--guard", "make check").returncode == 0
    again = guard_config.load(str(tmp_path / "proj"))
    assert (again.command, again.policy, again.timeout) == ("make check", "report", 120)
    gemini = _timeouts(tmp_path / "proj" / ".gemini" / "settings.json")
    assert gemini["AfterAgent"] == gemini["AfterTool"] == again.hook_seconds * 1000


def test_install_guard_flags_without_a_command_are_refused(tmp_path):
    (tmp_path / "proj").mkdir()
    done = _install(tmp_path, "--runtime", "claude", "--guard-policy", "halt")
    assert done.returncode == 2 and "need --guard CMD" in done.stderr
    assert not (tmp_path / "proj" / ".continuation").exists()


def test_a_turn_end_hooks_deadline_leaves_the_check_its_timeout(tmp_path, monkeypatch):
    import json

    from continuation import hooks

    monkeypatch.delenv("CONTINUATION_HOOK_DEADLINE", raising=False)
    raw = json.dumps({"hook_event_name": "Stop", "session_id": "s", "cwd": str(tmp_path)}).encode()
    assert hooks._guard_deadline(raw, 25.0) == 25.0
    guard_config.write(str(tmp_path), GuardConfig("true", timeout=100))
    assert hooks._guard_deadline(raw, 25.0) == 100 + guard_config.DEADLINE_MARGIN_S
    monkeypatch.setenv("CONTINUATION_HOOK_DEADLINE", "5")
    assert hooks._guard_deadline(raw, 5.0) == 5.0


def test_a_fix_written_in_the_same_second_at_the_same_size_is_judged_anew(tmp_path, monkeypatch):
    """Python's bytecode cache keys on the source's mtime (seconds) and size: a wrong line the
    check compiled, then fixed at the same size within that second, must not be judged again
    from the cached wrong one."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    source = tmp_path / "mod.py"
    check = f"{sys.executable} -c 'import mod, sys; sys.exit(mod.f(0) != 2)'"
    source.write_text("def f(x):\n    return 3 * x + 3\n", encoding="utf-8")
    stamp = source.stat().st_mtime_ns
    assert run_check(check, str(tmp_path), timeout=30).verdict == "fail"
    source.write_text("def f(x):\n    return 3 * x + 2\n", encoding="utf-8")
    os.utime(source, ns=(stamp, stamp))
    assert run_check(check, str(tmp_path), timeout=30).verdict == "pass"
    assert not (tmp_path / "__pycache__").exists()
