"""Safety fault script: the race, a full disk and special files, in real processes;
prints what was lost in each case. Exit 1 when anything was lost.

    python scripts/fault_safety.py [--events 2000] [--rounds 6] [--skip-race] [--skip-store] [--json]

- **race**: ``scripts/fault_race.py`` (PreCompact hooks and ``continuation checkpoint`` of one
  thread at the same instant, then ``git gc --prune=now``): boundaries, checkpoints, refs and
  restorable snapshots lost.
- **full disk**: PreToolUse hooks into a state home on a real 2 MiB tmpfs (needs root and
  ``mount``; skipped with the reason otherwise), then the same through the installed command
  with a full disk injected at the store's commit (``CONTINUATION_FAULT=event.before_commit:full``,
  runs anywhere). Lost = events neither stored nor counted in ``lost-writes.json``; also
  checks the user was told exactly once and that ``doctor`` reports the count.
- **store** (``scripts/fault_store.py``): the PostgreSQL server killed while five hooks wait
  inside their transaction; a damaged SQLite store (five seeds), then ``doctor --salvage``;
  the write-ahead log of a crash copy cut in half. Each prints acknowledged against present.
- **special files**: a Write aimed at a FIFO and an Edit aimed at a link to ``/dev/zero`` left
  without an outcome, and a FIFO or ``/dev/zero`` as the transcript: PreCompact,
  SessionStart(resume), ``reconcile`` and ``import`` must each return (lost = a hang, a crash,
  or a boundary not committed).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from safety_harness import GIT_ENV, RUNTIME, special_repo, stored_calls  # noqa: E402

HANG_S = 60
def cli(args, env, payload=None, cwd=None, timeout=HANG_S):
    """One ``continuation`` process; (returncode or "hang", stdout, stderr, seconds)."""
    started = time.monotonic()
    try:
        r = subprocess.run([*RUNTIME, sys.executable, "-m", "continuation", *args], env=env,
                           cwd=cwd, capture_output=True, timeout=timeout,
                           input=json.dumps(payload).encode() if payload is not None else None)
    except subprocess.TimeoutExpired:
        return "hang", b"", b"", time.monotonic() - started
    return r.returncode, r.stdout, r.stderr, time.monotonic() - started


# -- race ------------------------------------------------------------------------------------
def race_case(base: Path, rounds: int) -> dict:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import fault_race
    except ImportError as exc:  # the race script; absent, say so
        return {"case": "race", "skipped": f"scripts/fault_race.py cannot be imported: {exc}"}
    report = fault_race.run(base, rounds=rounds)
    problems = report.worker_failures + report.doctor_problems
    return {"case": "race", "lost": report.lost + len(problems), "detail": report.summary(),
            "problems": problems + report.mismatched_refs + report.unrestorable}


# -- full disk -------------------------------------------------------------------------------
def _pre_tool(session: str, i: int) -> dict:
    return {"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/",
            "prompt_id": "p1", "tool_use_id": f"call-{i}", "tool_name": "Bash",
            "tool_input": {"command": f"echo {i} " + "x" * 400}}


def _disk_verdict(name: str, home: Path, answers: list[dict], extra: dict) -> dict:
    from continuation.host import lost_writes
    from continuation.commands.health import run_checks

    record = lost_writes.read(home)
    stored = stored_calls(home)
    told = sum(1 for a in answers if "could not record" in a.get("systemMessage", ""))
    doctor = [f for f in run_checks(home, project_dir=home, hooks=False)
              if f.check == "lost_writes"]
    reported = bool(doctor) and doctor[0].status == "problem" and \
        f"{record['lost']} hook event(s)" in doctor[0].message
    silent = len(answers) - stored - int(record["lost"])
    # told once when something was lost, never otherwise
    lost = max(0, silent) + (0 if told == (1 if record["lost"] else 0) else 1) + (
        0 if reported or not record["lost"] else 1)
    return {"case": name, "lost": lost, **extra,
            "detail": f"{len(answers)} hooks answered, {stored} stored, {record['lost']} counted "
                      f"as lost writes, {silent} lost silently; told the user {told} time(s); "
                      + ("doctor " + ("reports" if reported else "DOES NOT report") + " them"
                         if record["lost"] else "the disk never filled")}


def full_disk_tmpfs(base: Path, events: int) -> dict:
    mount = base / "tiny"
    mount.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return {"case": "full disk (2 MiB tmpfs)", "skipped": "mounting a tmpfs needs root"}
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"case": "full disk (2 MiB tmpfs)",
                "skipped": f"cannot mount a tmpfs here: {r.stderr.strip()}"}
    old = os.environ.get("CONTINUATION_HOME")
    os.environ["CONTINUATION_HOME"] = str(mount)
    try:
        from continuation import hooks

        session = "disk-full"
        hooks.run("claude", json.dumps({"hook_event_name": "UserPromptSubmit",
                                        "session_id": session, "cwd": "/", "prompt_id": "p1",
                                        "prompt": "go"}).encode())
        answers = []
        for i in range(events):  # in this process: thousands of interpreters would take minutes
            out, code = hooks.run("claude", json.dumps(_pre_tool(session, i)).encode())
            answers.append(json.loads(out) if code == 0 else {"exit": code})
        return _disk_verdict("full disk (2 MiB tmpfs)", mount, answers,
                             {"free_bytes": shutil.disk_usage(mount).free})
    finally:
        if old is None:
            os.environ.pop("CONTINUATION_HOME", None)
        else:
            os.environ["CONTINUATION_HOME"] = old
        subprocess.run(["umount", "-l", str(mount)], check=False)


def full_disk_injected(base: Path, stored: int = 5, failing: int = 10) -> dict:
    home = base / "injected"
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    env.pop("CONTINUATION_FAULT", None)
    session = "disk-injected"
    cli(["hook", "--runtime", "claude"], env, {"hook_event_name": "UserPromptSubmit",
                                               "session_id": session, "cwd": "/",
                                               "prompt_id": "p1", "prompt": "go"})
    answers = []
    for i in range(stored + failing):
        run_env = env if i < stored else {**env, "CONTINUATION_FAULT": "event.before_commit:full"}
        code, out, _err, _ = cli(["hook", "--runtime", "claude"], run_env, _pre_tool(session, i))
        answers.append(json.loads(out) if code == 0 else {"exit": code})
    return _disk_verdict("full disk (injected ENOSPC, real hook processes)", home, answers, {})


# -- special files ---------------------------------------------------------------------------
def special_files(base: Path) -> list[dict]:
    if not hasattr(os, "mkfifo"):
        return [{"case": "special files", "skipped": "no FIFOs on this OS"}]
    out = []
    for transcript in ("fifo", "/dev/zero"):
        repo = base / f"repo-{transcript.strip('/').replace('/', '-')}"
        prompt, write, edit = special_repo(repo)
        transcript_path = str(repo / "pipe") if transcript == "fifo" else "/dev/zero"
        env = {**os.environ, **GIT_ENV,
               "CONTINUATION_HOME": str(repo.parent / f"{repo.name}.state")}
        base_payload = {"session_id": "s", "cwd": str(repo), "prompt_id": "p1"}
        steps = [
            ("prompt", ["hook", "--runtime", "claude"], prompt),
            ("Write to a FIFO (no outcome)", ["hook", "--runtime", "claude"], write),
            ("Edit of a link to /dev/zero (no outcome)", ["hook", "--runtime", "claude"], edit),
            ("PreCompact", ["hook", "--runtime", "claude"],
             {**base_payload, "hook_event_name": "PreCompact", "trigger": "auto",
              "transcript_path": transcript_path}),
            ("SessionStart(resume)", ["hook", "--runtime", "claude"],
             {**base_payload, "hook_event_name": "SessionStart", "source": "resume",
              "transcript_path": transcript_path}),
            ("reconcile", ["reconcile", "--json"], None),
            ("import claude", ["import", "claude", transcript_path], None),
        ]
        for label, args, payload in steps:
            code, stdout, stderr, took = cli(args, env, payload, cwd=repo)
            expect_error = label.startswith("import")
            ok = code != "hang" and (code != 0 if expect_error else code == 0) \
                and b"Traceback" not in stderr
            out.append({"case": f"special files ({transcript}): {label}", "lost": 0 if ok else 1,
                        "detail": f"exit {code} in {took:.1f}s"
                                  + (f": {stderr.decode(errors='replace').strip()[:120]}"
                                     if stderr.strip() else "")})
        code, stdout, _e, _t = cli(["checkpoints", "--json"], env, cwd=repo)
        committed = code == 0 and bool(json.loads(stdout or b"[]"))
        out.append({"case": f"special files ({transcript}): boundary committed",
                    "lost": 0 if committed else 1,
                    "detail": "a checkpoint was committed" if committed else "NO checkpoint"})
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000,
                        help="PreToolUse hooks into the 2 MiB state home (default 2000)")
    parser.add_argument("--rounds", type=int, default=6, help="race rounds (default 6)")
    parser.add_argument("--skip-race", action="store_true")
    parser.add_argument("--skip-store", action="store_true",
                        help="skip the store cases (scripts/fault_store.py)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    results = []
    with tempfile.TemporaryDirectory(prefix="continuation-safety-") as tmp:
        base = Path(tmp)
        if not args.skip_race:
            (base / "race").mkdir()
            results.append(race_case(base / "race", args.rounds))
        results.append(full_disk_tmpfs(base, args.events))
        results.append(full_disk_injected(base))
        results += special_files(base)
        if not args.skip_store:
            import fault_store

            (base / "store").mkdir()
            results += fault_store.run(base / "store")
    lost = sum(r.get("lost", 0) for r in results)
    if args.json:
        print(json.dumps({"lost": lost, "cases": results}, indent=2))
    else:
        for r in results:
            if "skipped" in r:
                print(f"[skip] {r['case']}: {r['skipped']}")
                continue
            print(f"[{'ok' if not r['lost'] else 'LOST ' + str(r['lost'])}] {r['case']}: "
                  f"{r['detail']}")
            for problem in r.get("problems", []):
                print(f"       {problem}")
        print(f"lost: {lost}")
    return 0 if lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
