"""Store fault cases for ``scripts/fault_safety.py``: each prints facts acknowledged against
facts present (or counted lost and reported), in real hook processes.

- **server killed mid-transaction**: five UserPromptSubmit hooks wait on the thread's row
  lock of a PostgreSQL store when the postmaster and its backends are SIGKILLed, then the
  server is restarted and one more hook reaches it (skipped without PostgreSQL binaries);
- **damaged store**: 64 bytes flipped over pages 2-64 of a checkpointed SQLite store (five
  seeds), a hook, every verb, then ``doctor --salvage``;
- **WAL cut short**: 20 acknowledged prompts, a crash copy whose write-ahead log is cut in
  half, then ``doctor``.

Lost = acknowledged facts neither present nor counted (a lost write, a salvage's "lost", a
doctor's "acknowledged but missing").
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTINUATION_FAULT",
                                                          "CONTINUATION_STORE")}
    return {**env, "CONTINUATION_HOME": str(home), **extra}


def _cmd(args, env, payload=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "continuation", *args], env=env,
                          input=json.dumps(payload) if payload is not None else None,
                          capture_output=True, text=True, timeout=180)


def _prompt(session: str, text: str, runtime_turn: str | None = None) -> dict:
    payload = {"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp",
               "prompt": text}
    if runtime_turn:
        payload["turn_id"] = runtime_turn
    return payload


def _acknowledged(done: subprocess.CompletedProcess) -> bool:
    """The hook answered and told the user nothing was lost."""
    try:
        answer = json.loads(done.stdout or "{}")
    except ValueError:
        return False
    return done.returncode == 0 and "could not record" not in answer.get("systemMessage", "")


# -- 1: the server killed while hooks wait inside their transaction ---------------------------
def server_killed(base: Path) -> dict:
    name = "server killed while 5 hooks wait on the row lock"
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import psycopg
        from pg_cluster import remove, start_cluster
    except ImportError as exc:
        return {"case": name, "skipped": f"no PostgreSQL driver or test cluster helper: {exc}"}
    cluster, why = start_cluster()
    if cluster is None:
        return {"case": name, "skipped": why}
    try:
        url = cluster.create_database("fault_store")
        home = base / "pg-laptop"
        env = _env(home, CONTINUATION_STORE=url)
        texts = ["before"]
        acked = int(_acknowledged(_cmd(["hook", "--runtime", "codex"], env,
                                       _prompt("sess", "before", "t0"))))
        from continuation.store import thread_key_for

        holder = psycopg.connect(url)
        holder.execute("SELECT 1 FROM threads WHERE thread_key=%s FOR UPDATE",
                       (thread_key_for("codex", "sess"),))
        procs = []
        for i in range(1, 6):
            texts.append(f"waiting {i}")
            proc = subprocess.Popen([sys.executable, "-m", "continuation", "hook", "--runtime",
                                     "codex"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, text=True)
            proc.stdin.write(json.dumps(_prompt("sess", texts[-1], f"t{i}")))
            proc.stdin.close()
            procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with psycopg.connect(url, autocommit=True) as probe:
                if probe.execute("SELECT count(*) FROM pg_stat_activity"
                                 " WHERE wait_event_type='Lock'").fetchone()[0] == 5:
                    break
            time.sleep(0.2)
        cluster.kill()
        for proc in procs:
            proc.wait(timeout=180)
            acked += int(_acknowledged(subprocess.CompletedProcess(
                proc.args, proc.returncode, proc.stdout.read(), proc.stderr.read())))
        cluster.restart_after_kill()
        texts.append("after")
        acked += int(_acknowledged(_cmd(["hook", "--runtime", "codex"], env,
                                        _prompt("sess", "after", "t6"))))
        from continuation.store import open_store

        store = open_store(str(base / "pg-reader"), url=url)
        try:
            events = store.events(store.thread("sess")["thread_key"])
        finally:
            store.close()
        present = [e["data"]["text"] for e in events if e["type"] == "input_admitted"]
        doubled = len(present) - len(set(present))
        missing = len(set(texts) - set(present))
        return {"case": name, "lost": missing + doubled,
                "detail": f"{acked} prompts acknowledged, {len(set(present))} on the server "
                          f"after the restart, {doubled} doubled"}
    finally:
        remove(cluster)


# -- 2: a damaged store -----------------------------------------------------------------------
def damaged_store(base: Path, seeds=(1, 2, 3, 4, 5), events: int = 300) -> list[dict]:
    sys.path.insert(0, str(ROOT / "tests"))
    from safety_harness import damaged_store_home

    out = []
    for seed in seeds:
        home = damaged_store_home(base / f"damaged-{seed}", seed, events)
        env = _env(home)
        hook = _cmd(["hook", "--runtime", "claude"], env, _prompt("s1", "after the damage"))
        acked = _acknowledged(hook)
        crashed = [" ".join(v) for v in (["status"], ["inputs"], ["context"], ["events"],
                                         ["checkpoints"], ["doctor"])
                   if "Traceback" in (r := _cmd(v, env)).stderr or "internal error" in r.stderr]
        salvage = _cmd(["doctor", "--salvage", "--force", "--json"], env)
        try:
            report = json.loads(salvage.stdout)
        except ValueError:
            out.append({"case": f"damaged store (seed {seed})", "lost": events + 1,
                        "detail": f"salvage failed: {salvage.stderr.strip()[:200]}"})
            continue
        conn = sqlite3.connect(home / "store.sqlite3")
        present = {json.loads(d).get("text") for (d,) in conn.execute(
            "SELECT data FROM events WHERE type='input_admitted'")}
        conn.close()
        new_present = "after the damage" in present
        counted = report["events_lost"] + report["refused"]
        # every acknowledged fact is in the new store or counted lost by the salvage
        unaccounted = max(0, events + int(acked) - report["events_read"] - report["carried"]
                          - counted)
        out.append({"case": f"damaged store (seed {seed})", "lost": unaccounted + len(crashed),
                    "detail": f"{events + int(acked)} acknowledged, {report['events_read']} "
                              f"salvaged + {report['carried']} carried, {counted} counted lost "
                              f"by the salvage; the hook's prompt "
                              f"{'present' if new_present else 'MISSING'}"
                              + (f"; verbs that crashed: {crashed}" if crashed else
                                 "; every verb answered in one line")})
    return out


# -- 3: the write-ahead log cut short ----------------------------------------------------------
def wal_cut(base: Path, prompts: int = 20) -> dict:
    from continuation.store import marks

    home = base / "wal"
    env = _env(home)
    acked = sum(_acknowledged(_cmd(["hook", "--runtime", "claude"], env,
                                   _prompt("s1", f"prompt {i}: " + "details " * 300)))
                for i in range(prompts))
    copy = base / "wal-copy"
    copy.mkdir()
    shutil.copy(home / "store.sqlite3", copy / "store.sqlite3")
    shutil.copytree(marks.folder_of(str(home / "store.sqlite3")),
                    marks.folder_of(str(copy / "store.sqlite3")))
    data = (home / "store.sqlite3-wal").read_bytes()
    (copy / "store.sqlite3-wal").write_bytes(data[:len(data) // 2])
    doctor = json.loads(_cmd(["doctor", "--json"], _env(copy)).stdout)
    found = {f["check"]: f for f in doctor["findings"]}
    conn = sqlite3.connect(copy / "store.sqlite3")
    present = conn.execute("SELECT count(*) FROM events WHERE type='input_admitted'").fetchone()[0]
    conn.close()
    short = found.get("store.acknowledged", {})
    reported = short.get("status") == "problem"
    missing = acked - present
    return {"case": "WAL cut in half in a crash copy", "lost": 0 if (missing == 0 or reported)
            else missing,
            "detail": f"{acked} acknowledged, {present} present, WAL {len(data) // 1024} KiB; "
                      f"integrity_check {found.get('store.integrity', {}).get('status')}; doctor "
                      + (f"reports {short['message'][:120]}" if reported else "reports NOTHING")}


def run(base: Path) -> list[dict]:
    return [server_killed(base), *damaged_store(base), wal_cut(base)]
